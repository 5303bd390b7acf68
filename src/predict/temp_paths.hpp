// Recognising temporary directories and file names in command lines, so
// that job identities and argv digests do not change with the random
// directory pip (or Python's tempfile, uv, mktemp, nvcc, ccache) chose
// for this particular build. Pure string functions; no I/O except reading
// $TMPDIR.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace memgate {

// "/a//b/./c" -> {"a", "b", "c"}; ".." is kept (use lexical_normal first).
std::vector<std::string> path_components(std::string_view path);

// Lexical normalisation ("a/./b/../c" -> "a/c"); never touches the disk.
std::string lexical_normal(std::string_view path);

// A directory or file name that a temp-file API made up: pip-req-build-*,
// pip-install-*, pip-build-env-* (any pip-<words>-<random>), tmpXXXXXXXX,
// .tmpXXXXXX, tmp.XXXXXXXXXX, tmpxft_*.
bool is_random_temp_name(std::string_view name);

// The part of an absolute or relative path below its innermost temp
// directory (the /tmp, /var/tmp, /dev/shm or $TMPDIR prefix, a random temp
// name, or a ccache/sccache tmp dir), as relative components. A path
// without one is returned whole.
std::vector<std::string> strip_temp_dirs(std::string_view path);

// The same text with random temp names replaced by fixed placeholders
// ("-I/tmp/pip-build-env-x1y2z3/overlay" -> "-I/tmp/pip-build-env-*/overlay").
// Works on whole arguments, which may carry an option prefix.
std::string mask_temp_names(std::string_view text);

// The last `n` of `components`, joined with '/'.
std::string last_components(const std::vector<std::string>& components, size_t n);

}  // namespace memgate
