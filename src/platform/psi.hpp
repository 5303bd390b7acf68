// Pressure stall information (/proc/pressure/memory, or a cgroup's
// memory.pressure). Kernels without PSI simply lack the file; that is a
// value (nullopt), not an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memgate::platform {

struct PsiWindow {
  double avg10 = 0, avg60 = 0, avg300 = 0;  // percent of wall time stalled
  std::uint64_t total_us = 0;               // cumulative stall time
};

struct Psi {
  std::optional<PsiWindow> some, full;  // "full" is absent on old kernels' cpu file
};

// A malformed "some"/"full" line leaves that window unknown; nullopt when
// no window could be read at all.
std::optional<Psi> parse_psi(std::string_view text);
std::optional<Psi> read_psi(const std::string& path = "/proc/pressure/memory");

}  // namespace memgate::platform
