// Writing a whole file over another, as root, in a directory others may
// share (/tmp): the HTML report, the trace, the summary JSON, an exported
// profile file.
//
// - The directory must pass open_trusted_base (util/trusted_dir.hpp): the
//   chain owned by root or the user, none writable by others unless
//   sticky. In a directory others can write without the sticky bit they
//   could swap the path under us, or rename our temporary file away, and
//   choose where root's file lands.
// - The content goes to a temporary file created O_EXCL|O_NOFOLLOW, with
//   an unpredictable name, relative to the verified directory's fd, then
//   is renamed over the final name (renameat never follows a symlink
//   there: one planted at the final name is replaced, not written
//   through), so a reader never sees half a file and a failed write leaves
//   the old one alone.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "util/result.hpp"

namespace memgate {

// `mode` is narrowed by the umask, as for any file the user writes. The
// error names `path` and the cause.
Status write_file_atomically(const std::string& path, std::string_view content, mode_t mode = 0644);

// Whether write_file_atomically(path, ...) could succeed now: the same
// checks (a file name, a trusted directory), a temporary file created and
// removed again beside it, and `path` not a directory. Run before a build
// so a typo in an output path stops it before anything ran.
Status check_writable_output(const std::string& path);

}  // namespace memgate
