// memgate's own messages: always on stderr, always prefixed "memgate:".
// The build's output never passes through here. A sink hook lets the live
// status line clear itself before a message is printed (line-atomic output).
#pragma once

#include <fmt/core.h>

#include <functional>
#include <string>
#include <string_view>

namespace memgate::log {

enum class Level { debug, info, warning, error };

// Writes one whole line. The default sink writes to stderr with a single
// write(2), so lines from concurrent processes do not interleave.
using Sink = std::function<void(Level, std::string_view line)>;
void set_sink(Sink sink);
void reset_sink();
void set_quiet(bool quiet);    // drops info (not warnings or errors)
void set_verbose(bool verbose);  // enables debug (MEMGATE_DEBUG=1 does too)
bool verbose();

void write(Level level, std::string_view message);

template <class... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (verbose()) write(Level::debug, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::info, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::warning, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::error, fmt::format(f, std::forward<Args>(args)...));
}

// "memgate: warning: text\n" and friends, without writing anything.
std::string format_line(Level level, std::string_view message);

}  // namespace memgate::log
