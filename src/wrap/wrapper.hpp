// The wrapper: the tiny client side that every gated compiler invocation
// runs through (as `memgate wrap -- PROG ARGS...` or as a shim named like
// the compiler). It asks the governor for a grant, runs the real program,
// reports what it measured, and fails open when no governor answers.
#pragma once

#include <optional>
#include <string>

namespace memgate {

// If argv0's basename is one of the shim names (cc, c++, gcc, g++, clang,
// clang++, nvcc, hipcc), that name.
std::optional<std::string> shim_tool_name(const char* argv0);

// argv[0] is the shim; argv[1..] are the compiler's arguments.
int shim_main(const std::string& tool, int argc, char** argv);

// `memgate wrap [--] PROG ARGS...`: argv here starts after "wrap".
int wrap_main(int argc, char** argv);

// `memgate-wrap exec PATH ARGV0 ARGS...`, how the preload library
// (src/preload/preload.c) hands over an intercepted exec: run the file PATH
// with exactly that argv, gated. argv here starts after "exec".
int exec_main(int argc, char** argv);

// MEMGATE_JOB as the wrapper leaves it for a program it runs ungated on
// purpose: a version probe, or a run that failed open because the
// governor did not answer. A gated program gets its job id instead.
inline constexpr const char* kJobProbe = "probe";
inline constexpr const char* kJobFailOpen = "ungated";

// A whole command line that is a wrapper call (argv[0] a shim name,
// `PROGRAM wrap ...` or `PROGRAM exec ...`) runs as one and gives its status; anything else is
// nullopt. The first thing both memgate and memgate-wrap do, before any
// option parsing: hundreds of wrappers may be starting at once.
std::optional<int> run_if_wrapper(int argc, char** argv);

}  // namespace memgate
