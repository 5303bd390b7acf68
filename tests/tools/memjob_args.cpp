// memjob's options and command line (memjob_args.hpp).
#include "memjob_args.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace memjob {

[[noreturn]] void die(int code, const std::string& msg) {
  std::string line = "memjob: error: " + msg + "\n";
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
  std::_Exit(code);
}

bool parse_size(const std::string& s, std::uint64_t& out) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || errno != 0 || !(v >= 0)) return false;
  std::string unit(end);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "IB") unit.resize(unit.size() - 2);
  else if (unit.size() >= 2 && unit.back() == 'B') unit.pop_back();
  double scale = 1;
  if (unit == "K") scale = 1024.0;
  else if (unit == "M") scale = 1024.0 * 1024;
  else if (unit == "G") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty() && unit != "B") return false;
  out = static_cast<std::uint64_t>(std::llround(v * scale));
  return true;
}

bool parse_seconds(const std::string& s, double& out) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !(v >= 0) || !std::isfinite(v)) return false;
  out = v;
  return true;
}

bool takes_value(std::string_view name) {
  return name != "cpu" && name != "forever";
}

bool is_memjob_option(std::string_view name) {
  static const char* const names[] = {"peak",  "base",     "ramp",    "peak-at", "hold",   "after",   "duration",
                                      "cpu",   "out",      "fail",    "step-ms", "forever", "pidfile", "ready",
                                      "hold-until", "work", "curve", "rate"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

void apply_option(Profile& p, const std::string& name, const std::string& value) {
  bool ok = true;
  if (name == "peak") ok = parse_size(value, p.peak);
  else if (name == "base") ok = parse_size(value, p.base);
  else if (name == "after") ok = parse_size(value, p.after), p.after_set = true;
  else if (name == "ramp") ok = parse_seconds(value, p.ramp);
  else if (name == "peak-at") ok = parse_seconds(value, p.peak_at);
  else if (name == "hold") ok = parse_seconds(value, p.hold);
  else if (name == "duration") ok = parse_seconds(value, p.duration);
  else if (name == "work") ok = parse_seconds(value, p.work);
  else if (name == "step-ms") ok = parse_seconds(value, p.step_ms) && p.step_ms >= 1;
  else if (name == "cpu") p.cpu = true;
  else if (name == "forever") p.forever = true;
  else if (name == "out") p.out = value;
  else if (name == "pidfile") p.pidfile = value;
  else if (name == "ready") p.ready = value;
  else if (name == "hold-until") p.hold_until = value;
  else if (name == "curve") p.curve = value;
  else if (name == "rate") ok = parse_seconds(value, p.rate) && p.rate > 0 && p.rate <= 1;
  else if (name == "fail") {
    char* end = nullptr;
    long v = std::strtol(value.c_str(), &end, 10);
    ok = end != value.c_str() && *end == '\0' && v >= 0 && v <= 255;
    p.fail = static_cast<int>(v);
  }
  if (!ok) die(2, "invalid value '" + value + "' for --" + name);
}

// Applies "--name value" / "--name=value" tokens (from argv or a spec line).
void apply_tokens(Profile& p, const std::vector<std::string>& tokens) {
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (t.rfind("--", 0) != 0) die(2, "unexpected '" + t + "' in memjob options");
    std::string name = t.substr(2), value;
    auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (takes_value(name) && is_memjob_option(name)) {
      if (i + 1 >= tokens.size()) die(2, "--" + name + " needs a value");
      value = tokens[++i];
    }
    if (!is_memjob_option(name)) die(2, "unknown memjob option --" + name);
    apply_option(p, name, value);
  }
}

// Compiler flags whose argument is the next word (gcc, clang, nvcc).
bool flag_takes_argument(std::string_view a) {
  static const char* const flags[] = {
      "-MF", "-MT", "-MQ", "-I", "-D", "-U", "-include", "-imacros", "-isystem", "-iquote", "-idirafter",
      "-isysroot", "-x", "-L", "-l", "-gencode", "--generate-code", "-arch", "--gpu-architecture", "-code",
      "--gpu-code", "--threads", "-t", "-Xcompiler", "--compiler-options", "-Xlinker", "--linker-options",
      "-Xptxas", "--ptxas-options", "-Xnvlink", "-Xfatbin", "-Xcudafe", "-Xclang", "-mllvm", "-ccbin",
      "--compiler-bindir", "-maxrregcount", "--maxrregcount", "--std", "-target", "--target", "-MJ",
      "--output-file", "-odir", "--output-directory", "--keep-dir", "-keep-dir", "--default-stream",
      "-diag-suppress", "--diag-suppress", "--diag_suppress", "--param", "-aux-info", "-Xassembler",
      "-Xpreprocessor", "--dependency-output", "-isystem-after", "-iprefix", "-iwithprefix"};
  for (const char* f : flags)
    if (a == f) return true;
  return false;
}

Invocation parse_command_line(int argc, char** argv) {
  Invocation inv;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(2, "'" + a + "' needs an argument");
      return argv[++i];
    };
    if (a.rfind("--", 0) == 0 && a.size() > 2) {
      std::string name = a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2);
      if (is_memjob_option(name)) {
        inv.memjob_args.push_back(a);
        if (a.find('=') == std::string::npos && takes_value(name)) inv.memjob_args.push_back(next());
        continue;
      }
    }
    if (a == "-o" || a == "--output-file") inv.out = next();
    else if (a.rfind("-o", 0) == 0 && a.size() > 2 && a[2] != '-' && a != "-odir") inv.out = a.substr(2);
    else if (a == "-MF") inv.depfile = next();
    else if (a == "-E") inv.preprocess = true;
    else if (a == "-MD" || a == "-MMD") inv.make_depfile = true;
    else if (flag_takes_argument(a)) next();
    else if (a.empty() || a[0] == '-' || a[0] == '@') continue;  // any other flag: ignored
    else inv.sources.push_back(a);
  }
  return inv;
}

std::uint64_t fnv1a64(std::string_view s, std::uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string read_whole(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) die(1, "cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void apply_spec_lines(Profile& p, const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    auto at = line.find("memjob:");
    if (at == std::string::npos) continue;
    std::istringstream words(line.substr(at + 7));
    std::vector<std::string> tokens;
    for (std::string w; words >> w;) tokens.push_back(w);
    apply_tokens(p, tokens);
  }
}

void write_text(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) die(1, "cannot write " + path + ": " + std::strerror(errno));
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    die(1, "cannot write " + path + ": " + std::strerror(errno));
  ::close(fd);
}

std::string depfile_for(const Invocation& inv, const std::string& out) {
  if (!inv.depfile.empty()) return inv.depfile;
  if (!inv.make_depfile) return "";
  std::string base = out.empty() ? "memjob.o" : out;
  auto dot = base.find_last_of('.');
  if (dot != std::string::npos && base.find('/', dot) == std::string::npos) base.resize(dot);
  return base + ".d";
}

}  // namespace memjob
