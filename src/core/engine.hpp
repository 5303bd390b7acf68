// Distributed compilation engines (issue 15): which programs send a
// compile to another machine, which jobs they can take, and how such a
// job's key differs from the same compile run here. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/job.hpp"

namespace memgate {

// distcc, icecc, and pump (distcc's include server), by basename. sccache
// is not one: without its dist server it compiles, or finds in its cache,
// locally.
bool is_remote_engine(std::string_view program);

// Whether an engine can take the job: a C or C++ compile. Links, nvcc,
// hipcc and rustc stay local.
bool distributable(const JobKey& key);

// How many jobs a distcc client may send out at once, from DISTCC_HOSTS
// ("127.0.0.1:3632/8 buildbox/4 localhost/2 --randomize"): the /LIMIT of
// every host but localhost, 4 where none is given (distcc's default).
// 0 when no remote host is listed.
int distcc_remote_slots(std::string_view hosts);

// What distcc's client log says about one run (issue 15). distcc logs
// "exec on HOST: COMMAND" at info level each time it starts a compile:
// HOST is the server ("127.0.0.1:3632/4"), or "localhost" when it compiles
// here (its fallback after a refused or failed remote compile, its local
// retry after a remote error, localhost picked from DISTCC_HOSTS, a
// command it does not distribute). Info lines reach only a log file
// (DISTCC_LOG); on stderr distcc shows warnings and worse, or everything
// with DISTCC_VERBOSE.
struct DistccRun {
  bool seen = false;      // `pid` logged a compile it started
  bool ran_here = false;  // ...and the last one was on localhost
  // What distcc would have written to stderr without DISTCC_LOG, in order
  // (warnings and worse; every line when `verbose`).
  std::vector<std::string> stderr_lines;
};
// `log` is the log's text (a leading partial line is skipped when
// `cut` says the text starts mid-file); `pid` the distcc client whose
// compiles count.
DistccRun read_distcc_log(std::string_view log, long pid, bool verbose, bool cut = false);

// What a remote job's local side is predicted to need before anything of
// its kind was measured: the launcher and a preprocessor run, far below a
// compile's cold default (512 MiB to 1 GiB) but not nothing (heavy C++
// headers preprocess in ~100-200 MB). The first one measured replaces it.
inline constexpr Bytes kRemoteDefaultPeak = 128 * MiB;

}  // namespace memgate
