// Distributed compilation engines (issue 15): which programs send a
// compile to another machine, which jobs they can take, and how such a
// job's key differs from the same compile run here. Pure.
#pragma once

#include <string_view>

#include "core/job.hpp"

namespace memgate {

// distcc, icecc, and pump (distcc's include server), by basename. sccache
// is not one: without its dist server it compiles, or finds in its cache,
// locally.
bool is_remote_engine(std::string_view program);

// The key of a job run through `engine`. Its local side (the launcher and
// the preprocessor) is a different job from the local compile, so it is
// learned and predicted apart: "distcc>" in front of identity and klass.
JobKey remote_key(JobKey key, std::string_view engine);
bool is_remote_klass(std::string_view klass);

// Whether an engine can take the job: a C or C++ compile. Links, nvcc,
// hipcc and rustc stay local.
bool distributable(const JobKey& key);

// How many jobs a distcc client may send out at once, from DISTCC_HOSTS
// ("127.0.0.1:3632/8 buildbox/4 localhost/2 --randomize"): the /LIMIT of
// every host but localhost, 4 where none is given (distcc's default).
// 0 when no remote host is listed.
int distcc_remote_slots(std::string_view hosts);

// What a remote job's local side is predicted to need before anything of
// its kind was measured: the launcher and a preprocessor run, far below a
// compile's cold default (512 MiB to 1 GiB) but not nothing (heavy C++
// headers preprocess in ~100-200 MB). The first one measured replaces it.
inline constexpr Bytes kRemoteDefaultPeak = 128 * MiB;

}  // namespace memgate
