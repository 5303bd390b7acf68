#include "history/pending.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/core.h>

#include "util/log.hpp"

namespace memgate {
namespace {

// A side file waits on a held lock no longer than a run does.
constexpr int kPendingBusyMs = 1000;

struct Split {
  std::string dir, base;
};

Split split_path(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

std::string in_dir(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

void remove_db_files(const std::string& path) {
  for (const char* side : {"", "-wal", "-shm", "-journal"}) ::unlink((path + side).c_str());
}

// The side files beside the database: "<base>.pending-<pid>-<n>", not
// their -wal/-shm companions and not one being merged.
std::vector<std::string> pending_files(const std::string& db_path) {
  const Split p = split_path(db_path);
  const std::string prefix = p.base + ".pending-";
  std::vector<std::string> out;
  DIR* d = ::opendir(p.dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name.substr(0, prefix.size()) != prefix || e->d_type == DT_LNK) continue;
    std::string_view rest = name.substr(prefix.size());
    if (rest.find_first_not_of("0123456789-") != std::string_view::npos) continue;
    out.push_back(in_dir(p.dir, std::string(name)));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Result<std::string> save_pending(const std::string& db_path, const BuildRecord& build) {
  const Split p = split_path(db_path);
  for (int n = 0; n < 100; ++n) {
    std::string path = in_dir(p.dir, fmt::format("{}.pending-{}-{}", p.base, ::getpid(), n));
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return Error{fmt::format("cannot create {}: {}", path, std::strerror(errno))};
    ::close(fd);
    auto side = History::open(path, kPendingBusyMs);
    if (!side) {
      remove_db_files(path);
      return Error{side.error()};
    }
    auto id = (*side)->save_build(build);
    side->reset();
    if (!id) {
      remove_db_files(path);
      return Error{id.error()};
    }
    return path;
  }
  return Error{fmt::format("cannot create a side file beside {}: too many exist", db_path)};
}

int merge_pending(History& history, const std::string& db_path) {
  int merged = 0;
  for (const std::string& path : pending_files(db_path)) {
    // Claim it: of two runs merging at once, only one renames it.
    std::string mine = fmt::format("{}.merging-{}", path, ::getpid());
    if (::rename(path.c_str(), mine.c_str()) != 0) continue;
    for (const char* side : {"-wal", "-shm"}) ::rename((path + side).c_str(), (mine + side).c_str());
    auto side = History::open(mine, kPendingBusyMs);
    bool whole = side.ok();
    if (whole) {
      auto builds = (*side)->list_builds(-1);
      std::reverse(builds.begin(), builds.end());  // oldest first, as they happened
      for (const auto& s : builds) {
        auto b = (*side)->load_build(s.id);
        if (b && history.save_build(*b)) {
          ++merged;
        } else {
          whole = false;
          break;
        }
      }
      side->reset();
    }
    if (whole) {
      remove_db_files(mine);
    } else {
      // Put it back for a later run (a build merged already may be merged
      // twice then; losing one is worse).
      ::rename(mine.c_str(), path.c_str());
      for (const char* ext : {"-wal", "-shm"}) ::rename((mine + ext).c_str(), (path + ext).c_str());
      log::warn("could not merge {} into the history yet; keeping it", path);
    }
  }
  return merged;
}

}  // namespace memgate
