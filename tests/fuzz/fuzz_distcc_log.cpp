// read_distcc_log (src/engine/distcc.hpp): distcc's client log, which the
// wrapper reads after every compile it launched through distcc to tell
// whether distcc compiled it here (the build's distcc writes it, or the
// user's DISTCC_LOG holds anything).
//
// Input: byte 0: bit 0 verbose, bit 1 cut (the text starts mid-file),
// bits 2-7 the pid; then the log. What it finds is consistent: no
// "compiled here" without an exec line, every line it would print is a
// whole line of the input, never more of them than the input has lines.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "engine/distcc.hpp"
#include "fuzz_input.hpp"

using namespace memgate;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool verbose = data[0] & 1;
  const bool cut = data[0] & 2;
  const long pid = data[0] >> 2;
  std::string_view log = fuzz::as_text(data + 1, size - 1);
  DistccRun run = read_distcc_log(log, pid, verbose, cut);
  FUZZ_CHECK(!run.ran_here || run.seen);
  const auto lines = static_cast<std::size_t>(std::count(log.begin(), log.end(), '\n')) + 1;
  FUZZ_CHECK(run.stderr_lines.size() <= lines);
  for (const auto& line : run.stderr_lines) {
    FUZZ_CHECK(!line.empty());
    FUZZ_CHECK(line.find('\n') == std::string::npos);
    FUZZ_CHECK(log.find(line) != std::string_view::npos);
  }
  return 0;
}
