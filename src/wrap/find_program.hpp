// Finding the real program behind a shim: a PATH search that never finds
// memgate itself (the wrapper must never find itself as "the real
// compiler", or a shim would run itself forever), as ccache and sccache do it.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace memgate {

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId&) const = default;
};

// The file `path` names, following symlinks.
std::optional<FileId> file_id(const std::string& path);
// The running binary (/proc/self/exe).
std::optional<FileId> self_exe_id();

// $PATH, or the libc default ("/bin:/usr/bin") when it is unset.
std::string env_path();

// PATH with every memgate shim directory (see is_shim_dir) left out, and
// nothing else changed.
std::string path_without_shims(std::string_view path_value);

// execvp-style search for `name` (a bare name) in `path_value`: the first
// executable regular file, skipping shim directories and any candidate
// that is `self` (a shim reached through a symlinked or unmarked dir).
std::optional<std::string> find_program(std::string_view name, std::string_view path_value,
                                        std::optional<FileId> self);

}  // namespace memgate
