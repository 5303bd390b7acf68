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

// A whole command line that is a wrapper call (argv[0] a shim name, or
// `PROGRAM wrap ...`) runs as one and gives its status; anything else is
// nullopt. The first thing both memgate and memgate-wrap do, before any
// option parsing: hundreds of wrappers may be starting at once.
std::optional<int> run_if_wrapper(int argc, char** argv);

}  // namespace memgate
