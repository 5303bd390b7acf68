#include "wrap/parts.hpp"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fs.hpp"
#include "util/trusted_dir.hpp"

#ifndef MEMGATE_PARTS_FROM_BINDIR
#define MEMGATE_PARTS_FROM_BINDIR "../libexec/memgate"
#endif

namespace memgate {
namespace {

std::string parent_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// "a/b/../c" -> "a/c", without touching the filesystem.
std::string normalize(const std::string& path) {
  std::string out;
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string part = path.substr(i, j - i);
    if (part == "..") {
      auto slash = out.find_last_of('/');
      out.resize(slash == std::string::npos ? 0 : slash);
    } else if (!part.empty() && part != ".") {
      out += '/';
      out += part;
    }
    i = j + 1;
  }
  return out.empty() ? "/" : out;
}

}  // namespace

Parts find_parts_for(const std::string& self, const std::function<bool(const std::string&)>& exists) {
  Parts p;
  p.memgate = self;
  std::string here = parent_of(self);
  std::string installed = normalize(join_path(here, MEMGATE_PARTS_FROM_BINDIR));
  if (exists(join_path(here, kWrapperName))) p.dir = here;
  else if (exists(join_path(installed, kWrapperName))) p.dir = installed;
  else p.dir = here;
  std::string wrapper = join_path(p.dir, kWrapperName);
  p.wrapper = exists(wrapper) ? wrapper : self;
  std::string preload = join_path(p.dir, kPreloadName);
  if (exists(preload)) p.preload = preload;
  p.shim_dir = join_path(p.dir, "shims");
  return p;
}

Parts find_parts() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string self = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("memgate");
  return find_parts_for(self, [](const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  });
}

Result<Parts> trusted_parts(const Parts& p, uid_t uid) {
  Parts out = p;
  if (auto dir = open_trusted_dir(p.dir, uid, false, 0755, &out.dir); !dir) return Error{dir.error()};
  out.shim_dir = join_path(out.dir, "shims");
  auto wrapper = open_trusted_file(p.wrapper, uid);
  if (!wrapper) return Error{wrapper.error()};
  out.wrapper = wrapper->path;
  if (!p.preload.empty()) {
    auto lib = open_trusted_file(p.preload, uid);
    if (!lib) return Error{lib.error()};
    out.preload = lib->path;
  }
  return out;
}

}  // namespace memgate
