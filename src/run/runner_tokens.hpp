// The jobserver a run serves to make, cargo and gcc's LTO (the pool and
// its policy: run/jobserver.hpp, governor/jobserver.hpp): whether to serve
// one at all, telling the governor what its clients hold, reclaiming the
// tokens of clients that died holding them, keeping as many on offer as
// the governor allows, and the --jobserver-log. The runner's loop calls
// tell() before each governor step and offer() after it.
#pragma once

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "governor/governor.hpp"
#include "run/jobserver.hpp"
#include "run/runner.hpp"
#include "util/private_dir.hpp"

namespace memgate {

class RunnerTokens {
 public:
  RunnerTokens() = default;
  RunnerTokens(const RunnerTokens&) = delete;
  RunnerTokens& operator=(const RunnerTokens&) = delete;
  ~RunnerTokens() { close(); }

  // Serves a jobserver from `dir` unless --jobserver off, or (without
  // `always`) the user chose the build's parallelism: MAKEFLAGS and
  // CARGO_MAKEFLAGS go into the build's `env`, the descriptors it inherits
  // into `fds`. Returns why none is served when one was wanted ("" if
  // served or not wanted).
  std::string serve(const RunOptions& opt, const PrivateDir& dir, int slots, std::map<std::string, std::string>& env,
                    std::vector<int>& fds);
  bool served() const { return pool_.has_value(); }
  // Tells `gov` what the clients hold at `t`, after reclaiming any tokens
  // no live client can hold (LeakWatch; at most every 0.25 s).
  void tell(Governor& gov, double t);
  // Puts in or takes back tokens until what `gov` offers now waits in the
  // fifo; logs held and waiting when they change.
  void offer(const Governor& gov, const MemoryView& view, double t);
  // The fifo goes before its directory does; the log is closed.
  void close();

 private:
  // The processes below memgate that have the fifo open, with their
  // children and threads (see LeakWatch).
  std::vector<TokenOpener> openers() const;

  std::optional<TokenPool> pool_;
  FILE* log_ = nullptr;  // --jobserver-log
  int logged_held_ = -1, logged_waiting_ = -1;
  int told_held_ = 0;  // what tell() last told the governor clients hold
  LeakWatch leaks_;
  double next_leak_scan_ = 0;
  int reclaimed_ = 0;
};

}  // namespace memgate
