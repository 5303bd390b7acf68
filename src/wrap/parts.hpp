// Where this copy of memgate keeps its parts. memgate finds them relative
// to its own binary (/proc/self/exe), never through PATH or a per-user
// directory, so a build-tree copy and any number of installed copies never
// see each other's files.
//
//   build tree   build/memgate, build/memgate-wrap, build/libmemgate-preload.so, build/shims/
//   install      P/bin/memgate, P/libexec/memgate/{memgate-wrap, libmemgate-preload.so, shims/}
//
// (The install's parts directory is set at configure time:
// CMAKE_INSTALL_LIBEXECDIR/memgate relative to CMAKE_INSTALL_BINDIR.)
//
// memgate run hands these parts to the build: the library goes into
// LD_PRELOAD and is loaded by every compiler, the wrapper is run for every
// job, often as root, long after memgate started. So they are used only
// when trusted_parts() passes: checked once at start, which is enough only
// because the rule leaves nobody else able to swap them later.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "util/result.hpp"

namespace memgate {

inline constexpr const char* kWrapperName = "memgate-wrap";
inline constexpr const char* kPreloadName = "libmemgate-preload.so";

struct Parts {
  std::string memgate;  // this binary, symlinks resolved
  std::string dir;      // the directory holding the parts
  std::string wrapper;  // memgate-wrap; memgate itself when there is none (it behaves the same)
  std::string preload;  // libmemgate-preload.so; "" when this copy has none
  std::string shim_dir; // the fallback PATH shims of this copy: <dir>/shims (may not exist yet)
};

// The parts of the memgate at `self` (an absolute path); `exists` says
// whether a file is there (tests pass a fake).
Parts find_parts_for(const std::string& self, const std::function<bool(const std::string&)>& exists);

// The parts of the running binary.
Parts find_parts();

// `p` with every path resolved, if memgate may hand its parts to a build
// run as `uid`: the parts directory passes open_trusted_dir (it and every
// directory above it owned by root or `uid`; none writable by group or
// others unless sticky, the parts directory not at all), and so do the
// wrapper and the preload library as files (regular, owned by root or
// `uid`, writable by nobody else; a symlink is checked where it leads).
// Else why not, naming the path that failed.
Result<Parts> trusted_parts(const Parts& p, uid_t uid);

}  // namespace memgate
