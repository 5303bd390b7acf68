#include "governor/jobserver.hpp"

#include <algorithm>

namespace memgate {

int jobserver_running(int held, bool client_seen) { return client_seen ? std::max(0, held) + 1 : 0; }

bool fits_cpu_with_tokens(int w, int busy, int js, int slots) {
  if (js > 0 && busy + w <= js) return true;  // its client took a token for it
  return w <= slots - std::max(js, busy);
}

int tokens_to_offer(const TokenInputs& in) {
  if (in.hold_back) return 0;
  const int held = std::max(0, in.held);
  // The implicit token is always kept back: the top client runs a job
  // without asking. Gated weight beyond what the clients run is not
  // theirs, and its slots are not offered.
  const int uncovered = std::max(0, in.busy - (held + 1));
  int offer = in.slots - 1 - held - uncovered;
  if (in.per_token > 0) {
    Bytes fit = std::max<Bytes>(0, in.headroom) / in.per_token;
    offer = static_cast<int>(std::min<Bytes>(offer, fit));
  }
  return std::clamp(offer, 0, std::max(0, in.slots - 1));
}

}  // namespace memgate
