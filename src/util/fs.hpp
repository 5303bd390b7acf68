// Small filesystem helpers that return values instead of throwing.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace memgate {

// The whole file, or nullopt if it cannot be opened or read (vanished
// cgroups and processes are normal, not errors).
std::optional<std::string> read_file(const std::string& path);
// The same for /proc and cgroup files, read every tick by the thousand:
// the kernel fills a read with all the file has (seq_file), so a read
// shorter than the buffer is the end, and the read that would return 0
// is saved.
std::optional<std::string> read_kernel_file(const std::string& path);
// read_kernel_file of `rel`, a path relative to the directory open as
// `dirfd` (openat; the last component is not followed if a link): a
// cgroup file below a directory held open walks only the components
// below it, not the whole path from /sys each time.
std::optional<std::string> read_kernel_file_at(int dirfd, const std::string& rel);

// Writes `content` in one write(2) (cgroup files need that), without
// O_CREAT unless `create` is set. The error names the path and errno.
Status write_file(const std::string& path, std::string_view content, bool create = false);

bool path_exists(const std::string& path);

// The working directory, or "." if it cannot be had (deleted under us).
std::string current_dir();

// `n` letters and digits nobody can guess (getrandom), for file names;
// "" if the kernel gives no random bytes.
std::string random_letters(std::size_t n);

// Join with a single '/'.
std::string join_path(std::string_view a, std::string_view b);

}  // namespace memgate
