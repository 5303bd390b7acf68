#include "wrap/tu_size.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <string_view>

#include "util/clock.hpp"

extern char** environ;

namespace memgate {

namespace {

const std::set<std::string_view> kCompilers = {"gcc", "g++", "cc", "c++", "clang", "clang++"};
const std::set<std::string_view> kCSources = {"c", "cc", "cp", "cpp", "cxx", "c++", "C", "CPP"};
// Flags whose next argument is a file the compile would write.
const std::set<std::string_view> kDropWithValue = {"-o", "-MF", "-MT", "-MQ"};
const std::set<std::string_view> kDrop = {"-c", "-MD", "-MMD", "-save-temps", "-E", "-S", "-fsyntax-only"};

std::string_view extension(std::string_view path) {
  const auto slash = path.find_last_of('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const auto dot = name.find_last_of('.');
  return dot == std::string_view::npos || dot == 0 ? std::string_view{} : name.substr(dot + 1);
}

// -Wp,-MD,file and friends: the preprocessor told to write a dependency file.
bool writes_through_wp(std::string_view a) {
  return a.starts_with("-Wp,") && (a.find(",-MD") != std::string_view::npos || a.find(",-MMD") != std::string_view::npos ||
                                   a.find(",-MF") != std::string_view::npos);
}

}  // namespace

std::optional<std::vector<std::string>> preprocess_command(const std::vector<std::string>& argv,
                                                           const CommandInfo& info) {
  if (argv.empty() || info.mode != "compile" || !kCompilers.count(info.key.tool)) return std::nullopt;
  if (info.source.empty() || info.source == "-" || !kCSources.count(extension(info.source))) return std::nullopt;
  std::vector<std::string> out;
  out.reserve(argv.size() + 3);
  out.push_back(argv[0]);
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (kDropWithValue.count(a)) {
      ++i;
      continue;
    }
    // -ofile, -MFfile: the value joined to the flag.
    if ((a.size() > 2 && a.starts_with("-o")) || (a.size() > 3 && (a.starts_with("-MF") || a.starts_with("-MT") ||
                                                                    a.starts_with("-MQ"))))
      continue;
    if (kDrop.count(a) || a.starts_with("-save-temps=") || writes_through_wp(a)) continue;
    out.push_back(a);
  }
  out.insert(out.end(), {"-E", "-o", "-"});
  return out;
}

Bytes preprocessed_size(const std::string& exe, const std::vector<std::string>& argv, double timeout_s) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return 0;
  std::vector<std::string> env_storage;
  for (char** e = environ; e && *e; ++e)
    if (!std::string_view(*e).starts_with("MEMGATE_JOB=")) env_storage.emplace_back(*e);
  env_storage.emplace_back("MEMGATE_JOB=probe");
  std::vector<char*> envp, args;
  for (auto& s : env_storage) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_storage = argv;
  for (auto& s : argv_storage) args.push_back(s.data());
  args.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  // Its own process group, so a timeout ends the driver and its cc1plus.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, exe.c_str(), &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    return 0;
  }

  Bytes n = 0;
  bool timed_out = false;
  const double deadline = monotonic_s() + timeout_s;
  char buf[65536];
  for (;;) {
    const double left = deadline - monotonic_s();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{pipefd[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t got = ::read(pipefd[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    n += got;
  }
  ::close(pipefd[0]);
  if (timed_out) ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? n : 0;
}

}  // namespace memgate
