// memgate-wrap: the wrapper alone, in a small binary of its own.
//
// Every gated compiler call starts one wrapper, thousands per build. The
// full memgate binary pays several milliseconds of dynamic linking and
// relocation on each start (SQLite, fmt, libstdc++, CLI11); this one links
// only the wrapper's code, libstdc++ statically and fmt header-only, and
// starts about as fast as /bin/true. `memgate run` points its shims and
// launcher variables here when memgate-wrap sits next to memgate, and at
// memgate itself otherwise: both behave the same.
#include <cstdio>
#include <cstring>

#include "wrap/wrapper.hpp"

int main(int argc, char** argv) {
  if (argc > 0) {
    if (auto tool = memgate::shim_tool_name(argv[0])) return memgate::shim_main(*tool, argc, argv);
  }
  if (argc > 1 && std::strcmp(argv[1], "wrap") == 0) return memgate::wrap_main(argc - 2, argv + 2);
  std::fprintf(stderr,
               "memgate: error: memgate-wrap is memgate's wrapper: run it as 'memgate-wrap wrap -- PROGRAM "
               "[ARGS...]' or through a compiler shim; 'memgate --help' lists the commands\n");
  return 2;
}
