// memjob's options and command line (memjob.cpp runs the profile): the
// profile its options and spec lines describe, and what a compiler-style
// command line names. Self-contained like memjob: no memgate library.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memjob {

struct Profile {
  std::uint64_t base = 0, peak = 0, after = 0;
  bool after_set = false;
  double ramp = 0, peak_at = -1, hold = 0, duration = 0;
  double work = 0;  // --work: CPU-seconds to burn at the end, however long that takes
  std::string curve;  // --curve FILE
  double rate = 0;    // --rate: CPU seconds per curve second (0: the wall clock)
  bool cpu = false, forever = false;
  int fail = 0;
  double step_ms = 50;
  std::string out, pidfile, ready, hold_until;
};

struct Invocation {
  std::vector<std::string> memjob_args;  // our own options, from the command line
  std::vector<std::string> sources;
  std::string out, depfile;
  bool make_depfile = false;  // -MD / -MMD
  bool preprocess = false;    // -E
};

[[noreturn]] void die(int code, const std::string& msg);
// "512M", "2GiB", "1048576" (K, M, G, T: powers of 1024); false if not a size.
bool parse_size(const std::string& s, std::uint64_t& out);
// A non-negative number of seconds; false if not one.
bool parse_seconds(const std::string& s, double& out);
// Applies "--name value" / "--name=value" tokens (from argv or a spec line).
void apply_tokens(Profile& p, const std::vector<std::string>& tokens);
// Every line of `text` containing "memjob:" adds the options after it.
void apply_spec_lines(Profile& p, const std::string& text);
// The command line: memjob's own options, sources, -o and the depfile flags.
Invocation parse_command_line(int argc, char** argv);
std::uint64_t fnv1a64(std::string_view s, std::uint64_t h = 14695981039346656037ULL);
std::string read_whole(const std::string& path);
void write_text(const std::string& path, const std::string& text);
// The dependency file -MD/-MF asks for, or "".
std::string depfile_for(const Invocation& inv, const std::string& out);

}  // namespace memjob
