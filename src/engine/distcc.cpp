#include "engine/distcc.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>

namespace memgate {

int distcc_remote_slots(std::string_view hosts) {
  int total = 0;
  std::size_t i = 0;
  while (i < hosts.size()) {
    while (i < hosts.size() && (hosts[i] == ' ' || hosts[i] == '\t' || hosts[i] == '\n')) ++i;
    std::size_t end = i;
    while (end < hosts.size() && hosts[end] != ' ' && hosts[end] != '\t' && hosts[end] != '\n') ++end;
    std::string_view spec = hosts.substr(i, end - i);
    i = end;
    if (spec.empty() || spec.rfind("--", 0) == 0) continue;  // options such as --randomize
    std::string_view host = spec.substr(0, spec.find_first_of(":/,"));
    if (host == "localhost") continue;
    int limit = 4;
    if (auto slash = spec.find('/'); slash != std::string_view::npos) {
      int v = 0;
      std::size_t k = slash + 1;
      for (; k < spec.size() && spec[k] >= '0' && spec[k] <= '9' && v < 100000; ++k) v = v * 10 + (spec[k] - '0');
      if (k > slash + 1) limit = v;
    }
    total += limit;
  }
  return total;
}

namespace {

// "distcc[1234] " -> 1234 and the rest of the line; -1 for a line of
// another shape.
long distcc_line_pid(std::string_view line, std::string_view& rest) {
  constexpr std::string_view kPrefix = "distcc[";
  if (line.substr(0, kPrefix.size()) != kPrefix) return -1;
  std::size_t i = kPrefix.size();
  long pid = 0;
  std::size_t digits = 0;
  for (; i < line.size() && line[i] >= '0' && line[i] <= '9' && digits < 10; ++i, ++digits) pid = pid * 10 + (line[i] - '0');
  if (digits == 0 || i + 1 >= line.size() || line[i] != ']' || line[i + 1] != ' ') return -1;
  rest = line.substr(i + 2);
  return pid;
}

// rs_log's severities above info, after an optional "(function) ".
bool is_warning_or_worse(std::string_view rest) {
  if (!rest.empty() && rest[0] == '(') {
    auto close = rest.find(") ");
    if (close == std::string_view::npos) return false;
    rest = rest.substr(close + 2);
  }
  for (std::string_view sev : {"Warning: ", "ERROR: ", "CRITICAL! ", "ALERT! ", "EMERGENCY! "})
    if (rest.substr(0, sev.size()) == sev) return true;
  return false;
}

}  // namespace

DistccRun read_distcc_log(std::string_view log, long pid, bool verbose, bool cut) {
  DistccRun run;
  if (cut) {
    auto nl = log.find('\n');
    log = nl == std::string_view::npos ? std::string_view() : log.substr(nl + 1);
  }
  while (!log.empty()) {
    auto nl = log.find('\n');
    std::string_view line = log.substr(0, nl);
    log = nl == std::string_view::npos ? std::string_view() : log.substr(nl + 1);
    if (line.empty()) continue;
    std::string_view rest;
    long who = distcc_line_pid(line, rest);
    if (verbose || (who >= 0 && is_warning_or_worse(rest))) run.stderr_lines.emplace_back(line);
    if (who != pid || rest.substr(0, 8) != "exec on ") continue;
    run.seen = true;
    run.ran_here = rest.substr(8, 11) == "localhost: ";
  }
  return run;
}

namespace {

class DistccLog final : public EngineAttempt {
 public:
  DistccLog() = default;
  DistccLog(const DistccLog&) = delete;
  DistccLog& operator=(const DistccLog&) = delete;
  ~DistccLog() override {
    if (fd_ >= 0) ::close(fd_);
  }

  // Nothing when no log can be had: the job is then taken at its word.
  std::vector<std::string> environment() override {
    const char* verbose = ::getenv("DISTCC_VERBOSE");
    verbose_ = verbose && *verbose && std::strcmp(verbose, "0") != 0;
    if (const char* user = ::getenv("DISTCC_LOG"); user && *user) {
      fd_ = ::open(user, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
      struct stat st {};
      if (fd_ >= 0 && (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode))) {
        ::close(fd_);
        fd_ = -1;
      }
      start_ = fd_ >= 0 ? st.st_size : 0;
      return {};
    }
    fd_ = ::memfd_create("memgate-distcc-log", MFD_CLOEXEC);
    if (fd_ < 0) return {};
    own_ = true;
    return {fmt::format("DISTCC_LOG=/proc/{}/fd/{}", ::getpid(), fd_)};
  }

  bool ran_here(pid_t child) override {
    if (fd_ < 0) return false;
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || st.st_size <= start_) return false;
    off_t from = std::max<off_t>(start_, st.st_size - kMaxRead);
    std::string text(static_cast<std::size_t>(st.st_size - from), '\0');
    ssize_t n = ::pread(fd_, text.data(), text.size(), from);
    if (n <= 0) return false;
    text.resize(static_cast<std::size_t>(n));
    DistccRun run = read_distcc_log(text, child, verbose_, from > start_);
    if (own_) {
      for (const auto& line : run.stderr_lines) {
        std::string out = line + "\n";
        ssize_t w = ::write(STDERR_FILENO, out.data(), out.size());
        (void)w;
      }
    }
    return run.ran_here;
  }

 private:
  static constexpr off_t kMaxRead = 256 * 1024;  // the end of a log is what tells
  int fd_ = -1;
  off_t start_ = 0;
  bool own_ = false;
  bool verbose_ = false;
};

}  // namespace

std::unique_ptr<EngineAttempt> watch_distcc_log() { return std::make_unique<DistccLog>(); }

}  // namespace memgate
