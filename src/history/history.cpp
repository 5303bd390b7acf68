// Where the history file lives, and opening it: WAL and a busy timeout so
// concurrent builds share it, an integrity check so a damaged file is
// moved aside instead of failing builds, then the schema migrations.
#include "history/history.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <fmt/core.h>

#include "history/schema.hpp"
#include "history/sqlite_history.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"
#include "util/trusted_dir.hpp"

namespace memgate {
namespace {

constexpr int kBusyTimeoutMs = 10'000;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// mkdir -p for the file's directory; private, since commands may carry secrets.
void make_parent_dirs(const std::string& path) {
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1))
    ::mkdir(path.substr(0, pos).c_str(), 0700);
}

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool exists = false;
  bool operator==(const FileId& o) const { return exists == o.exists && dev == o.dev && ino == o.ino; }
};

FileId file_id(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return {};
  return {st.st_dev, st.st_ino, true};
}

struct OpenAttempt {
  std::optional<sql::Db> db;
  std::string error;
  bool corrupt = false;
};

// The connection settings every user of the file needs.
OpenAttempt configure(sql::Db db) {
  OpenAttempt a;
  auto mode = db.query_text("PRAGMA journal_mode=WAL");
  if (!mode) {
    a.corrupt = db.last_was_corrupt();
    a.error = mode.error();
    return a;
  }
  if (auto s = db.exec("PRAGMA synchronous=NORMAL"); !s) {
    a.error = s.error();
    return a;
  }
  auto check = db.query_text("PRAGMA quick_check");
  if (!check) {
    a.corrupt = db.last_was_corrupt();
    a.error = check.error();
    return a;
  }
  if (*check != "ok") {
    a.corrupt = true;
    a.error = "integrity check failed: " + *check;
    return a;
  }
  if (auto s = migrate_history(db); !s) {
    a.error = s.error();
    return a;
  }
  a.db = std::move(db);
  return a;
}

OpenAttempt try_open(const std::string& path, int busy_ms) {
  auto db = sql::Db::open(path, busy_ms);
  if (!db) return {std::nullopt, db.error(), false};
  return configure(std::move(*db));
}

// PATH -> PATH.corrupt-<time>, with its WAL and shared-memory files, unless
// another process already replaced the file we found damaged.
std::optional<std::string> move_aside(const std::string& path, const FileId& seen) {
  if (!(file_id(path) == seen)) return std::nullopt;
  std::string dest = fmt::format("{}.corrupt-{}", path, static_cast<long long>(std::time(nullptr)));
  for (int n = 2; path_exists(dest); ++n) dest = fmt::format("{}.corrupt-{}-{}", path, std::time(nullptr), n);
  if (::rename(path.c_str(), dest.c_str()) != 0) return std::nullopt;
  for (const char* side : {"-wal", "-shm", "-journal"}) {
    std::string from = path + side;
    if (path_exists(from)) ::rename(from.c_str(), (dest + side).c_str());
  }
  return dest;
}

// The history is written, a damaged one moved aside and side files made
// beside it, all by path (SQLite knows no other way), often as root: safe
// only in a directory nobody else can write (util/trusted_dir.hpp).
Status check_trusted(const std::string& path) {
  const auto slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  if (dir[0] != '/') dir = join_path(current_dir(), dir);
  auto fd = open_trusted_dir(dir, ::geteuid());
  if (!fd)
    return Error{fmt::format("cannot use history database {}: {} (memgate keeps a history only where nobody but "
                             "root or you can write)",
                             path, fd.error())};
  return ok_status();
}

}  // namespace

std::string History::default_path() {
  std::string xdg = env("XDG_CACHE_HOME");
  if (!xdg.empty() && xdg[0] == '/') return join_path(xdg, "memgate/history.db");
  std::string home = env("HOME");
  if (home.empty()) {
    if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) home = pw->pw_dir;
  }
  if (home.empty()) return fmt::format("/tmp/memgate-{}/history.db", ::getuid());
  return join_path(home, ".cache/memgate/history.db");
}

std::string History::resolve_path(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  std::string from_env = env("MEMGATE_HISTORY");
  if (!from_env.empty()) return from_env;
  return default_path();
}

Result<std::unique_ptr<History>> History::open(const std::string& path) { return open(path, kBusyTimeoutMs); }

Status History::check_location(const std::string& path) {
  if (path.empty()) return Error{"the history path is empty"};
  if (path == default_path()) return ok_status();  // open() makes it
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ok_status();  // the working directory
  const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return Error{fmt::format("cannot use history database {}: its directory {} {} (memgate creates only the "
                             "default location, {}; create the directory or fix the path)",
                             path, dir, errno == ENOENT ? "does not exist" : std::strerror(errno),
                             default_path())};
  if (!S_ISDIR(st.st_mode))
    return Error{fmt::format("cannot use history database {}: {} is not a directory", path, dir)};
  return ok_status();
}

Result<std::unique_ptr<History>> History::open(const std::string& path, int busy_timeout_ms) {
  if (auto s = check_location(path); !s) return Error{s.error()};
  if (path == default_path()) make_parent_dirs(path);
  if (auto s = check_trusted(path); !s) return Error{s.error()};
  for (int attempt = 0;; ++attempt) {
    const FileId seen = file_id(path);
    OpenAttempt a = try_open(path, busy_timeout_ms);
    if (a.db) return std::unique_ptr<History>(new SqliteHistory(std::move(*a.db), path));
    if (!a.corrupt || attempt >= 2)
      return Error{fmt::format("cannot use history database {}: {}", path, a.error)};
    if (auto dest = move_aside(path, seen))
      log::warn("history database {} is corrupt; moved it to {}; starting a new one", path, *dest);
  }
}

}  // namespace memgate
