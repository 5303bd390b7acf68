#include "cli/config.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/core.h>

#include "cli/help.hpp"
#include "core/capacity.hpp"
#include "util/fs.hpp"
#include "util/size.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace memgate {

namespace {

MachineConfig g_config;
std::string g_config_error;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string home_dir() {
  std::string home = env("HOME");
  if (home.empty())
    if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) home = pw->pw_dir;
  return home;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The line without its comment: from a '#' that starts it or follows a blank.
std::string_view strip_comment(std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i)
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) return line.substr(0, i);
  return line;
}

// Why `value` cannot be the value of `key` ("" if it can); sets the field.
std::string assign(MachineConfig& c, const std::string& key, const std::string& value) {
  if (key == "memory") {
    if (std::string why = memory_flag_problem(value); !why.empty()) return why;
    c.memory = value;
  } else if (key == "reserve") {
    if (auto r = parse_size(value, 100 * GiB); !r) return r.error();
    c.reserve = value;
  } else if (key == "jobs") {
    int n = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > kMaxJobs)
      return fmt::format("jobs wants a number from 1 to {}, not '{}'", kMaxJobs, printable(value));
    c.jobs = n;
  } else if (key == "history") {
    std::string path = value;
    if (path.rfind("~/", 0) == 0) {
      const std::string home = home_dir();
      if (home.empty()) return "history: '~/' but no home directory is known";
      path = join_path(home, path.substr(2));
    }
    if (path.empty() || path[0] != '/')
      return fmt::format("history wants an absolute path (or one starting with ~/), not '{}'", printable(value));
    c.history = path;
  }
  return "";
}

}  // namespace

std::string config_path() {
  std::string xdg = env("XDG_CONFIG_HOME");
  if (!xdg.empty() && xdg[0] == '/') return join_path(xdg, "memgate/config");
  std::string home = home_dir();
  return home.empty() ? "" : join_path(home, ".config/memgate/config");
}

Result<MachineConfig> parse_config(std::string_view text, const std::string& file) {
  static const std::vector<std::string> kKeys = {"memory", "reserve", "jobs", "history"};
  MachineConfig c;
  c.file = file;
  std::vector<int> set_on(kKeys.size(), 0);
  int line_no = 0;
  for (std::string_view raw : split(text, '\n')) {
    ++line_no;
    auto fail = [&](const std::string& why) { return Error{fmt::format("{}:{}: {}", file, line_no, why)}; };
    std::string_view line = trim(strip_comment(raw));
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string_view::npos)
      return fail(fmt::format("expected 'key = value', got '{}'", printable(line)));
    const std::string key(trim(line.substr(0, eq)));
    const std::string value(trim(line.substr(eq + 1)));
    size_t k = 0;
    while (k < kKeys.size() && kKeys[k] != key) ++k;
    if (k == kKeys.size()) {
      std::string msg = fmt::format("unknown key '{}'", printable(key));
      if (auto near = nearest(key, kKeys)) msg += fmt::format("; did you mean '{}'?", *near);
      return fail(msg + " (keys: memory, reserve, jobs, history)");
    }
    if (set_on[k]) return fail(fmt::format("{} is set twice (first on line {})", key, set_on[k]));
    set_on[k] = line_no;
    c.line_of[key] = line_no;
    if (value.empty()) return fail(fmt::format("{} has no value", key));
    if (std::string why = assign(c, key, value); !why.empty()) return fail(fmt::format("{}: {}", key, why));
  }
  return c;
}

Result<MachineConfig> load_config(const std::string& path) {
  if (path.empty()) return MachineConfig{};
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return MachineConfig{};
  // A config sets where root's history goes: one that someone else can
  // write (their XDG_CONFIG_HOME, a group-writable file) is not read at all.
  auto file = open_trusted_file(path, ::geteuid());
  if (!file)
    return Error{fmt::format("refusing the config file {}: {} (memgate reads a config only if the file and every "
                             "directory above it belong to root or to you and nobody else can write them)",
                             path, file.error())};
  const int fd = file->fd.get();
  std::string text;
  std::string failure;
  char buf[8192];
  while (failure.empty()) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) failure = std::strerror(errno);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxConfigBytes)
      failure = fmt::format("larger than {} KiB, which no memgate config is", kMaxConfigBytes / 1024);
  }
  if (!failure.empty()) return Error{fmt::format("cannot read the config file {}: {}", path, failure)};
  return parse_config(text, path);
}

const MachineConfig& machine_config() { return g_config; }

void set_machine_config(MachineConfig config) { g_config = std::move(config); }

const std::string& machine_config_error() { return g_config_error; }
void set_machine_config_error(std::string error) { g_config_error = std::move(error); }

std::vector<doctor::Setting> setting_origins(const MachineConfig& config, const std::string& env_history,
                                             const std::string& default_history, int cores) {
  auto from_config = [&](const char* key) { return fmt::format("config {}:{}", config.file, config.line_of.at(key)); };
  std::vector<doctor::Setting> out;
  out.push_back(config.reserve ? doctor::Setting{"reserve", *config.reserve, from_config("reserve")}
                               : doctor::Setting{"reserve", "", "default (the rule above)"});
  out.push_back(config.memory ? doctor::Setting{"memory", *config.memory, from_config("memory")}
                              : doctor::Setting{"memory", "", "default (capacity - reserve)"});
  out.push_back(config.jobs ? doctor::Setting{"jobs", std::to_string(*config.jobs), from_config("jobs")}
                            : doctor::Setting{"jobs", std::to_string(cores), "default (the usable cores)"});
  if (!env_history.empty()) out.push_back({"history", env_history, "environment (MEMGATE_HISTORY)"});
  else if (config.history) out.push_back({"history", *config.history, from_config("history")});
  else out.push_back({"history", default_history, "default"});
  return out;
}

std::string history_flag_or_config(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (!env("MEMGATE_HISTORY").empty()) return "";
  return g_config.history.value_or("");
}

}  // namespace memgate
