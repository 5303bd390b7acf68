// parse_size (src/util/size.hpp): --memory, --reserve and MEMGATE_* sizes.
//
// Input: the text, tried without and with a percentage base. A size that
// parses is never negative, and format_bytes/format_duration take any value.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz_input.hpp"
#include "util/size.hpp"

using namespace memgate;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  for (std::optional<Bytes> base : {std::optional<Bytes>(), std::optional<Bytes>(64 * GiB),
                                    std::optional<Bytes>(Bytes{1} << 52)}) {
    auto r = parse_size(text, base);
    if (r.ok()) {
      FUZZ_CHECK(*r >= 0);
      (void)format_bytes(*r);
    }
  }
  if (size >= 8) {
    std::int64_t raw;
    std::memcpy(&raw, data, sizeof raw);
    (void)format_bytes(raw);
    double seconds;
    std::memcpy(&seconds, data, sizeof seconds);
    (void)format_duration(seconds);
  }
  return 0;
}
