// Running a program to read what it prints (`nvcc --version`), for the
// doctor's readers: fork and exec without a shell, stdin from /dev/null,
// stdout and stderr captured up to a bound, and the whole process group
// killed when it overruns its time.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace memgate::doctor {

struct CommandOutput {
  std::string output;  // stdout and stderr, interleaved, at most max_bytes
  int status = -1;     // shell-style: exit code, or 128 + signal
  bool timed_out = false;
};

// argv[0] is run as given (an absolute path, or looked up in PATH).
// nullopt if it could not be started at all.
std::optional<CommandOutput> run_captured(const std::vector<std::string>& argv, double timeout_s = 10.0,
                                          size_t max_bytes = 1 << 20);

}  // namespace memgate::doctor
