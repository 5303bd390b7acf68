// The wrapper's conversation with the governor, and running the program.
// Kept apart from wrapper.cpp (which decides *whether* to gate) so the
// argument handling there stays readable.
#pragma once

#include <cerrno>
#include <string>
#include <vector>

namespace memgate {

// One program to run, fully resolved.
struct Launch {
  std::string exe;                // the file to execute (already searched for)
  std::vector<std::string> argv;  // its argv; argv[0] is what the program sees
  std::string path_env;           // PATH for the program: shim dirs removed
};

// The status a shell gives a program it cannot run: 127 when the file is
// missing, else 126.
constexpr int exec_failure_status(int err) { return err == ENOENT || err == ENOTDIR ? 127 : 126; }

// Replaces this process with the program (no fork). Returns only if exec
// failed, after printing "memgate: error: cannot run 'X': ...", with the
// status a shell would give (exec_failure_status).
int exec_program(const Launch& launch);

// The gated run: request, wait for a grant, spawn a child that joins the
// granted cgroups and execs; report started / exit, obey the verdict (rerun means wait
// for the next grant on the same connection). Returns the program's exit
// code, or re-raises the signal that killed it. Fails open: when the
// governor cannot be reached or hangs up before a grant, the program is
// exec'd directly after warn_ungated_once().
int run_gated(const Launch& launch, const std::string& socket_path);

// "memgate: warning: governor at PATH is not answering; running jobs
// ungated", printed by only one wrapper per build: the first to create
// "<socket>.warned" (or, when the socket's directory is gone, a marker
// under /tmp named after a hash of the socket path).
void warn_ungated_once(const std::string& socket_path);

}  // namespace memgate
