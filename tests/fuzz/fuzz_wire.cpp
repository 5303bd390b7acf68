// The wire decoder (src/wrap/protocol.hpp): what a hostile or broken peer
// can send to memgate run's socket, and a fake governor to a wrapper.
//
// Input: byte 0 picks the chunk size, the rest is the byte stream. The
// stream is fed to a FrameDecoder in those chunks and all at once; both
// must give the same messages and the same end. Every decoded message
// must survive encode -> decode unchanged, and the whole input is also
// tried as one payload.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "wrap/protocol.hpp"

using namespace memgate;

namespace {

struct Decoded {
  std::vector<std::string> payloads;  // re-encoded messages
  bool failed = false;
  bool mid_frame = false;
};

void check_round_trip(const Message& m) {
  std::string p = encode_payload(m);
  auto again = decode_payload(p);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(encode_payload(*again) == p);
  std::string frame = encode_frame(m);
  FUZZ_CHECK(frame.size() == p.size() + 4);
  FUZZ_CHECK(frame.compare(4, std::string::npos, p) == 0);
}

Decoded drain(FrameDecoder& d, Decoded out) {
  while (auto r = d.pop()) {
    if (!r->ok()) {
      FUZZ_CHECK(d.failed());
      out.failed = true;
      FUZZ_CHECK(!d.pop().has_value() || !d.pop()->ok());  // the error is sticky
      return out;
    }
    check_round_trip(**r);
    out.payloads.push_back(encode_payload(**r));
  }
  return out;
}

Decoded decode_in_chunks(std::string_view stream, std::size_t chunk) {
  FrameDecoder d;
  Decoded out;
  for (std::size_t pos = 0; pos < stream.size() && !out.failed; pos += chunk) {
    d.feed(stream.substr(pos, chunk));
    out = drain(d, std::move(out));
  }
  out.mid_frame = d.mid_frame();
  FUZZ_CHECK(d.buffered() <= stream.size());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t chunk = 1 + data[0] % 17;
  std::string_view stream = fuzz::as_text(data + 1, size - 1);

  Decoded whole = decode_in_chunks(stream, stream.size() + 1);
  Decoded pieces = decode_in_chunks(stream, chunk);
  FUZZ_CHECK(whole.payloads == pieces.payloads);
  FUZZ_CHECK(whole.failed == pieces.failed);
  if (!whole.failed) FUZZ_CHECK(whole.mid_frame == pieces.mid_frame);

  if (stream.size() >= 4) (void)decode_length(reinterpret_cast<const unsigned char*>(stream.data()));
  if (auto m = decode_payload(stream); m.ok()) check_round_trip(*m);
  return 0;
}
