// memgate-wrap: the wrapper alone, in a small binary of its own.
//
// Every gated compiler call starts one wrapper, thousands per build. The
// full memgate binary pays several milliseconds of dynamic linking and
// relocation on each start (SQLite, fmt, libstdc++, CLI11); this one links
// only the wrapper's code, libstdc++ statically and fmt header-only, and
// starts on about half the CPU (bench/overhead's last row). `memgate run` points its shims and
// launcher variables here when memgate-wrap sits next to memgate, and at
// memgate itself otherwise: both behave the same.
#include <cstdio>

#include "wrap/wrapper.hpp"

int main(int argc, char** argv) {
  if (auto status = memgate::run_if_wrapper(argc, argv)) return *status;
  std::fprintf(stderr,
               "memgate: error: memgate-wrap is memgate's wrapper: run it as 'memgate-wrap wrap -- PROGRAM "
               "[ARGS...]' or through a compiler shim; 'memgate --help' lists the commands\n");
  return 2;
}
