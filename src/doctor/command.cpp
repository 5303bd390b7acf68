#include "doctor/command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>

namespace memgate::doctor {

namespace {

// In the child: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const std::vector<char*>& args, int out_fd) {
  ::setpgid(0, 0);
  int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null >= 0) ::dup2(null, STDIN_FILENO);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(out_fd, STDERR_FILENO);
  ::execvp(args[0], args.data());
  ::_exit(127);
}

int shell_status(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return -1;
}

}  // namespace

std::optional<CommandOutput> run_captured(const std::vector<std::string>& argv, double timeout_s, size_t max_bytes) {
  if (argv.empty() || argv[0].empty()) return std::nullopt;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) exec_child(args, fds[1]);
  ::setpgid(pid, pid);  // also here: no race with the kill below
  ::close(fds[1]);

  CommandOutput out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      out.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;  // timeout: checked at the top
    ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: the program (and all it started) closed the pipe
    size_t room = max_bytes > out.output.size() ? max_bytes - out.output.size() : 0;
    out.output.append(buf, std::min(room, static_cast<size_t>(got)));
  }
  ::close(fds[0]);
  // A program that closed its output may still run: wait until the
  // deadline, then end its group.
  int wstatus = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &wstatus, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (r == 0 && std::chrono::steady_clock::now() >= deadline) {
      out.timed_out = true;
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    if (r == 0) ::usleep(2000);
  }
  out.status = shell_status(wstatus);
  if (out.status == 127 && out.output.empty()) return std::nullopt;  // exec failed
  return out;
}

}  // namespace memgate::doctor
