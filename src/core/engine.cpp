#include "core/engine.hpp"

#include <array>
#include <string>

#include "core/job_class.hpp"

namespace memgate {
namespace {

std::string_view last_component(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

bool is_remote_engine(std::string_view program) {
  std::string_view base = last_component(program);
  return base == "distcc" || base == "icecc" || base == "pump";
}

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

bool distributable(const JobKey& key) {
  constexpr std::array<std::string_view, 6> kCFamily = {"cc", "c++", "gcc", "g++", "clang", "clang++"};
  bool c_family = false;
  for (auto t : kCFamily) c_family |= key.tool == t;
  const JobClass klass = parse_job_class(key.klass);
  return c_family && !klass.remote() && klass.tool == key.tool && klass.is_compile();
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

}  // namespace memgate
