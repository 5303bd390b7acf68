#include "util/log.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "util/text.hpp"

namespace memgate::log {
namespace {

Sink& sink() {
  static Sink s;
  return s;
}
bool g_quiet = false;
int g_verbose = -1;  // -1: not decided yet, read MEMGATE_DEBUG lazily

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    s.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

void set_sink(Sink s) { sink() = std::move(s); }
void reset_sink() { sink() = nullptr; }
void set_quiet(bool quiet) { g_quiet = quiet; }
void set_verbose(bool v) { g_verbose = v ? 1 : 0; }

bool verbose() {
  if (g_verbose < 0) {
    const char* e = std::getenv("MEMGATE_DEBUG");
    g_verbose = (e && *e && std::strcmp(e, "0") != 0) ? 1 : 0;
  }
  return g_verbose == 1;
}

std::string format_line(Level level, std::string_view message) {
  std::string line = "memgate: ";
  if (level == Level::warning) line += "warning: ";
  if (level == Level::error) line += "error: ";
  if (level == Level::debug) line += "debug: ";
  // Messages carry commands, paths and identities the build chose: one
  // line each, and nothing in them may drive the terminal.
  line += printable(message);
  line += '\n';
  return line;
}

void write(Level level, std::string_view message) {
  if (level == Level::info && g_quiet) return;
  std::string line = format_line(level, message);
  if (sink()) {
    sink()(level, line);
    return;
  }
  write_all(STDERR_FILENO, line);
}

}  // namespace memgate::log
