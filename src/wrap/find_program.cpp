#include "wrap/find_program.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "util/fs.hpp"
#include "util/text.hpp"
#include "wrap/shims.hpp"

namespace memgate {
namespace {

// glibc's execvp default when PATH is unset.
constexpr std::string_view kDefaultPath = "/bin:/usr/bin";

std::vector<std::string_view> split(std::string_view list) {
  std::vector<std::string_view> out;
  for (;;) {
    auto colon = list.find(':');
    out.push_back(list.substr(0, colon));
    if (colon == std::string_view::npos) return out;
    list.remove_prefix(colon + 1);
  }
}

bool is_executable_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<FileId> file_id(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

std::optional<FileId> self_exe_id() { return file_id("/proc/self/exe"); }

std::string env_path() {
  const char* p = std::getenv("PATH");
  return p ? std::string(p) : std::string(kDefaultPath);
}

std::string path_without_shims(std::string_view path_value) {
  std::string out;
  bool first = true;
  for (auto dir : split(path_value)) {
    // An empty entry means the current directory; it is kept as it was.
    if (!dir.empty() && is_shim_dir(std::string(dir))) continue;
    if (!first) out += ':';
    out += dir;
    first = false;
  }
  return out;
}

std::optional<std::string> find_program(std::string_view name, std::string_view path_value,
                                        std::optional<FileId> self) {
  if (name.empty() || name.find('/') != std::string_view::npos) return std::nullopt;
  for (auto dir : split(path_value)) {
    std::string d = dir.empty() ? std::string(".") : std::string(dir);
    if (is_shim_dir(d)) continue;
    std::string candidate = join_path(d, name);
    if (!is_executable_file(candidate)) continue;
    if (self && file_id(candidate) == self) continue;
    return candidate;
  }
  return std::nullopt;
}

}  // namespace memgate
