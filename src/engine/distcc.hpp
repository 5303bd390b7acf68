// distcc as memgate reads it: its hosts' remote slots and its client log,
// the fallback signal of engine.hpp.
//
// distcc logs "exec on HOST: COMMAND" at info level each time it starts a
// compile: HOST is the server ("127.0.0.1:3632/4"), or "localhost" when
// it compiles here (its fallback after a refused or failed remote compile,
// its local retry after a remote error, localhost picked from
// DISTCC_HOSTS, a command it does not distribute). Info lines reach only a
// log file (DISTCC_LOG); on stderr distcc shows warnings and worse, or
// everything with DISTCC_VERBOSE. So every attempt launched through
// distcc gets a log of its own: an anonymous memfd that distcc opens by
// its /proc path (DISTCC_LOG=/proc/<wrapper>/fd/<n>; nothing on disk,
// gone with the wrapper), read after distcc exits; what distcc would have
// printed on stderr is printed then, after the compiler's own output. A
// user's own DISTCC_LOG is kept, and read from where it ended when the
// attempt began (at most its last 256 KiB, lines of that pid only).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.hpp"

namespace memgate {

// How many jobs a distcc client may send out at once, from DISTCC_HOSTS
// ("127.0.0.1:3632/8 buildbox/4 localhost/2 --randomize"): the /LIMIT of
// every host but localhost, 4 where none is given (distcc's default).
// 0 when no remote host is listed.
int distcc_remote_slots(std::string_view hosts);

// What distcc's client log says about one run.
struct DistccRun {
  bool seen = false;      // `pid` logged a compile it started
  bool ran_here = false;  // ...and the last one was on localhost
  // What distcc would have written to stderr without DISTCC_LOG, in order
  // (warnings and worse; every line when `verbose`).
  std::vector<std::string> stderr_lines;
};
// `log` is the log's text (a leading partial line is skipped when
// `cut` says the text starts mid-file); `pid` the distcc client whose
// compiles count. Pure.
DistccRun read_distcc_log(std::string_view log, long pid, bool verbose, bool cut = false);

// The watch of one attempt (the wrapper's, through Engine::watch).
std::unique_ptr<EngineAttempt> watch_distcc_log();

}  // namespace memgate
