// The wrapper's conversation with the governor, and running the program.
// Kept apart from wrapper.cpp (which decides *whether* to gate) so the
// argument handling there stays readable.
#pragma once

#include <cerrno>
#include <string>
#include <vector>

#include "platform/cgroup_files.hpp"
#include "wrap/protocol.hpp"

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

// Who serves the socket `fd` is connected to (SO_PEERCRED): "" when it is
// this user (the effective uid) or root, else why it is not to be trusted.
// A MEMGATE_SOCKET can outlive its memgate (daemons started by the build
// keep it, a killed memgate leaves its directory) and then be served by
// anyone; the wrapper, often root, must not take orders from them.
std::string untrusted_governor(int fd);

// Why the wrapper will not join the granted cgroup `dir`, or "" when it
// may: an absolute path without '.' or '..' components, strictly below a
// cgroup2 mount or a cgroup v1 mount with the memory or freezer
// controller (`mounts`, from /proc/self/mountinfo).
std::string grant_path_problem(const std::string& dir, const std::vector<platform::CgroupMount>& mounts);

// Drops (with a warning) the grant's cgroups that grant_path_problem
// refuses; the job then runs outside them and the runner measures it
// through /proc.
void accept_grant(GrantMsg& grant, const std::vector<platform::CgroupMount>& mounts);

// "memgate: warning: governor at PATH is not answering; running jobs
// ungated", printed by only one wrapper per build: the first to create
// "<socket>.warned" (or, when the socket's directory is gone, a marker
// under /tmp named after a hash of the socket path).
void warn_ungated_once(const std::string& socket_path);

}  // namespace memgate
