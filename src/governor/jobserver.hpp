// The jobserver's policy: how many GNU make jobserver tokens memgate keeps
// on offer, and when a gated job is already covered by one. Pure: the
// runner reads the pipe and the governor's state, and carries it out.
//
// A jobserver client (make, cargo, rustc, gcc's LTO, ninja 1.13) runs one
// job on its implicit token and takes a token for every further one; a
// recursive client runs on the token its parent took for it. So a build
// whose top command is a client runs at most held + 1 jobs, and memgate
// offers at most slots - 1 tokens.
//
// Tokens and exec gating share the CPU slots. The client's jobs are where
// gated jobs come from, so the CPU in use is max(held + 1, gated weight):
// a gated job that fits under held + 1 already has its slot (its token)
// and does not wait for CPU again; only its memory is checked, since its
// prediction is known only now. Gated jobs beyond that (a ninja beside the
// client, a client's compile that took no token) take slots as before and
// shrink what is offered.
#pragma once

#include "core/job.hpp"

namespace memgate {

// Jobs the jobserver's clients run: held tokens plus the implicit one,
// once a client has shown itself (taken a token); 0 before.
int jobserver_running(int held, bool client_seen);

// Whether a gated job of CPU weight `w` may start, with `busy` gated
// weight running and `js` jobs run by the jobserver's clients.
bool fits_cpu_with_tokens(int w, int busy, int js, int slots);

struct TokenInputs {
  int slots = 1;
  int busy = 0;            // gated CPU weight running
  int held = 0;            // tokens the clients hold now
  bool hold_back = false;  // pressure, or a job waits for memory: offer nothing new
  Bytes headroom = 0;      // what admission believes is free
  Bytes per_token = 0;     // what a job is expected to need (0: memory is not asked)
};

// How many tokens should wait in the pipe now, 0..slots-1.
int tokens_to_offer(const TokenInputs& in);

}  // namespace memgate
