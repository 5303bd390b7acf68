// The real `memgate` binary as a wrapper, driven by a fake governor: a
// JobServer in this process with a scripted policy (wrapper_test.cpp: the
// grant, the program's end and the governor's loss; wrapper_shim_test.cpp:
// shims, probes and what passes straight through).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "util/fs.hpp"
#include "run/job_server.hpp"
#include "wrap/client.hpp"
#include "wrap/shims.hpp"


namespace memgate::wrapper_test {

using Env = std::map<std::string, std::string>;

inline int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

class WrapperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/memgate-wrapper-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    tmp_ = tmpl;
    auto s = JobServer::listen(sock());
    ASSERT_TRUE(s.ok()) << s.error();
    server_.emplace(std::move(s.value()));
    server_->on_message = [this](ConnId id, const Message& m) { on_message(id, m); };
    server_->on_closed = [this](ConnId id) { closed_.insert(id); };
    shims_ = tmp_ + "/shims";
    ASSERT_TRUE(ensure_shim_dir(shims_, MEMGATE_BINARY).ok());
    real_ = tmp_ + "/real";
    ASSERT_EQ(::mkdir(real_.c_str(), 0755), 0);
  }
  void TearDown() override {
    server_.reset();
    EXPECT_EQ(std::system(("rm -rf " + tmp_).c_str()), 0);
  }

  // The fake governor's policy: grant every request, say "rerun" to the
  // first `reruns_` exits, optionally hang up at a chosen moment.
  void on_message(ConnId id, const Message& m) {
    messages_.emplace_back(id, m);
    if (std::holds_alternative<RequestMsg>(m)) {
      if (hang_up_on_request_) return server_->close(id);
      grant(id);
    } else if (std::holds_alternative<StartedMsg>(m)) {
      if (hang_up_on_started_) server_->close(id);
    } else if (std::holds_alternative<ExitMsg>(m)) {
      if (no_verdicts_) return;
      bool rerun = reruns_ > 0;
      if (rerun) --reruns_;
      server_->send(id, VerdictMsg{rerun});
      if (rerun) grant(id);
    }
  }
  void grant(ConnId id) { server_->send(id, GrantMsg{42, ++attempts_[id], cgroups_, {}, false}); }

  std::string sock() const { return tmp_ + "/memgate.sock"; }
  Env base_env() const {
    return {{"PATH", "/usr/bin:/bin"}, {"HOME", tmp_}, {"MEMGATE_SOCKET", sock()}};
  }

  // Starts `exe` with `argv` (argv[0] as given) and `env`; stderr and
  // stdout go to files named after the returned pid.
  pid_t spawn(const std::string& exe, const std::vector<std::string>& argv, const Env& env) {
    pid_t pid = ::fork();
    if (pid != 0) return pid;
    std::string out = tmp_ + "/out." + std::to_string(::getpid()), err = tmp_ + "/err." + std::to_string(::getpid());
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    if (::chdir(tmp_.c_str()) != 0) ::_exit(120);
    std::vector<std::string> envs;
    for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
    std::vector<char*> a, ev;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    for (const auto& s : envs) ev.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ev.push_back(nullptr);
    ::execve(exe.c_str(), a.data(), ev.data());
    ::_exit(121);
  }
  pid_t wrap(const std::vector<std::string>& args, const Env& env) {
    std::vector<std::string> argv = {"memgate", "wrap", "--"};
    argv.insert(argv.end(), args.begin(), args.end());
    return spawn(MEMGATE_BINARY, argv, env);
  }

  // Serves the socket until `pid` exits (its pidfd is polled alongside the
  // server's fds); returns the raw wait status.
  int wait_for(pid_t pid, int timeout_ms = 30000) {
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    EXPECT_GE(pidfd, 0);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      std::vector<pollfd> fds = {{pidfd, POLLIN, 0}};
      server_->append_pollfds(fds);
      if (::poll(fds.data(), fds.size(), 200) > 0) server_->handle_ready(fds);
      if (fds[0].revents & POLLIN) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ADD_FAILURE() << "wrapper " << pid << " did not finish";
        break;
      }
    }
    ::close(pidfd);
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    // Let the server see the hang-ups and any last frames.
    std::vector<pollfd> fds;
    server_->append_pollfds(fds);
    if (!fds.empty() && ::poll(fds.data(), fds.size(), 0) > 0) server_->handle_ready(fds);
    return status;
  }
  // Serves until `done` holds.
  template <class Pred>
  bool serve_until(Pred done, int timeout_ms = 30000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::vector<pollfd> fds;
      server_->append_pollfds(fds);
      if (::poll(fds.data(), fds.size(), 200) > 0) server_->handle_ready(fds);
    }
    return true;
  }
  std::string err_of(pid_t pid) { return read_file(tmp_ + "/err." + std::to_string(pid)).value_or(""); }
  std::string out_of(pid_t pid) { return read_file(tmp_ + "/out." + std::to_string(pid)).value_or(""); }

  template <class T>
  std::vector<T> all() const {
    std::vector<T> out;
    for (const auto& [id, m] : messages_)
      if (auto* p = std::get_if<T>(&m)) out.push_back(*p);
    return out;
  }

  void make_script(const std::string& path, const std::string& body) {
    ASSERT_TRUE(write_file(path, "#!/bin/sh\n" + body + "\n", true).ok());
    ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
  }

  std::string tmp_, shims_, real_;
  std::optional<JobServer> server_;
  std::vector<std::pair<ConnId, Message>> messages_;
  std::set<ConnId> closed_;
  std::map<ConnId, int> attempts_;
  std::vector<std::string> cgroups_;
  int reruns_ = 0;
  bool hang_up_on_request_ = false, hang_up_on_started_ = false, no_verdicts_ = false;
};

}  // namespace memgate::wrapper_test
