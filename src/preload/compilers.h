/* What counts as a compiler: the one table that decides which programs
 * memgate gates, shared by the preload library (C, no allocation, safe in a
 * vfork child), the wrapper, the shim directory and the ungated detector.
 *
 * A program is named by its basename in one of these forms:
 *
 *   TOOL                      g++, clang, nvcc, rustc, ld.lld
 *   TOOL-VERSION              gcc-12, clang++-15, ld.lld-14, gcc-12.2
 *   PREFIX-TOOL[-VERSION]     x86_64-linux-gnu-g++-12, arm-none-eabi-gcc, musl-gcc
 *
 * VERSION is digits and dots starting with a digit; PREFIX is anything
 * non-empty (a target triple, usually). Launchers (ccache, sccache, distcc,
 * icecc, buildcache, and the extra names memgate run found in CC/CXX) only
 * count in front of a compiler: `ccache g++ -c a.cpp` is one job, the
 * launcher's call; `ccache -s` is no job at all. Launchers take no version
 * or prefix forms.
 *
 * Linkers called directly (ld, ld.gold, ld.lld, mold, ...) are gated too:
 * big links are where builds most often run out of memory (LLVM's
 * LLVM_PARALLEL_LINK_JOBS exists for that reason), and the predictor already
 * classifies them. A linker called by a compiler driver (collect2 -> ld,
 * clang -fuse-ld=lld) is inside that driver's job and passes through.
 *
 * Not in the table on purpose: the driver's own helpers (cc1, cc1plus,
 * collect2, as, ptxas, cicc: always nested in a driver's job), archivers
 * (ar, ranlib: light), rustdoc and the preprocessor alone.
 */
#ifndef MEMGATE_PRELOAD_COMPILERS_H
#define MEMGATE_PRELOAD_COMPILERS_H

#include <stddef.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

enum mg_kind { MG_NOT_A_TOOL = 0, MG_COMPILER = 1, MG_LINKER = 2, MG_LAUNCHER = 3 };

/* Flags of one entry. MG_SHIM: the fallback PATH shim directory holds a
 * link of this name (the names a build looks up in PATH). MG_FORMS: the
 * versioned and prefixed forms count too. */
#define MG_SHIM 1
#define MG_FORMS 2

/* The table: X(name, kind, flags). */
#define MEMGATE_TOOL_TABLE(X)                  \
  X("cc", MG_COMPILER, MG_SHIM | MG_FORMS)     \
  X("c++", MG_COMPILER, MG_SHIM | MG_FORMS)    \
  X("gcc", MG_COMPILER, MG_SHIM | MG_FORMS)    \
  X("g++", MG_COMPILER, MG_SHIM | MG_FORMS)    \
  X("clang", MG_COMPILER, MG_SHIM | MG_FORMS)  \
  X("clang++", MG_COMPILER, MG_SHIM | MG_FORMS) \
  X("nvcc", MG_COMPILER, MG_SHIM | MG_FORMS)   \
  X("hipcc", MG_COMPILER, MG_SHIM | MG_FORMS)  \
  X("rustc", MG_COMPILER, MG_FORMS)            \
  X("gfortran", MG_COMPILER, MG_FORMS)         \
  X("icx", MG_COMPILER, MG_FORMS)              \
  X("icpx", MG_COMPILER, MG_FORMS)             \
  X("nvc", MG_COMPILER, MG_FORMS)              \
  X("nvc++", MG_COMPILER, MG_FORMS)            \
  X("ld", MG_LINKER, MG_FORMS)                 \
  X("ld.bfd", MG_LINKER, MG_FORMS)             \
  X("ld.gold", MG_LINKER, MG_FORMS)            \
  X("ld.lld", MG_LINKER, MG_FORMS)             \
  X("ld.mold", MG_LINKER, MG_FORMS)            \
  X("lld", MG_LINKER, MG_FORMS)                \
  X("mold", MG_LINKER, MG_FORMS)               \
  X("ccache", MG_LAUNCHER, 0)                  \
  X("sccache", MG_LAUNCHER, 0)                 \
  X("distcc", MG_LAUNCHER, 0)                  \
  X("icecc", MG_LAUNCHER, 0)                   \
  X("buildcache", MG_LAUNCHER, 0)

struct mg_tool {
  const char* name;
  int kind;
  int flags;
};

#define MG_TOOL_ENTRY_(name, kind, flags) {name, kind, flags},
static const struct mg_tool mg_tools[] = {MEMGATE_TOOL_TABLE(MG_TOOL_ENTRY_)};
#undef MG_TOOL_ENTRY_
#define MG_TOOL_COUNT (sizeof mg_tools / sizeof mg_tools[0])

/* The last path component ("" stays ""). */
static inline const char* mg_basename(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* The entry named exactly s[0..n), or NULL. `formed`: the name came with a
 * version or a prefix, which only MG_FORMS entries accept. */
static inline const struct mg_tool* mg_lookup_(const char* s, size_t n, int formed) {
  size_t i;
  for (i = 0; i < MG_TOOL_COUNT; ++i) {
    const struct mg_tool* t = &mg_tools[i];
    if (strlen(t->name) == n && memcmp(t->name, s, n) == 0) return (formed && !(t->flags & MG_FORMS)) ? NULL : t;
  }
  return NULL;
}

/* s[0..n) without a trailing -VERSION: the new length. */
static inline size_t mg_strip_version_(const char* s, size_t n) {
  size_t i = n;
  while (i > 0 && ((s[i - 1] >= '0' && s[i - 1] <= '9') || s[i - 1] == '.')) --i;
  if (i == n || i < 2 || s[i - 1] != '-' || !(s[i] >= '0' && s[i] <= '9')) return n;
  return i - 1;
}

/* The kind of the program named by basename s[0..n): exact names first,
 * then without a version, then the longest tool name after a '-'. */
static inline int mg_classify_name(const char* s, size_t n) {
  const struct mg_tool* t = mg_lookup_(s, n, 0);
  size_t end, i;
  if (t) return t->kind;
  end = mg_strip_version_(s, n);
  if (end < n && (t = mg_lookup_(s, end, 1)) != NULL) return t->kind;
  for (i = 0; i + 1 < end; ++i) {
    if (s[i] != '-' || i == 0) continue;
    if ((t = mg_lookup_(s + i + 1, end - i - 1, 1)) != NULL) return t->kind;
  }
  return MG_NOT_A_TOOL;
}

/* Whether `list` (names separated by ':', may be NULL) holds s[0..n). */
static inline int mg_list_has_(const char* list, const char* s, size_t n) {
  while (list && *list) {
    const char* end = strchr(list, ':');
    size_t len = end ? (size_t)(end - list) : strlen(list);
    if (len == n && n > 0 && memcmp(list, s, n) == 0) return 1;
    if (!end) break;
    list = end + 1;
  }
  return 0;
}

/* The kind of the program at `path` (any path; only its basename counts),
 * with `extra_launchers` (':'-separated basenames, may be NULL) counted as
 * launchers. */
static inline int mg_classify_program(const char* path, const char* extra_launchers) {
  const char* base = mg_basename(path);
  size_t n = strlen(base);
  int kind = mg_classify_name(base, n);
  if (kind == MG_NOT_A_TOOL && mg_list_has_(extra_launchers, base, n)) kind = MG_LAUNCHER;
  return kind;
}

/* Whether starting `path` with `argv` is a job to gate: a compiler or a
 * linker, or a launcher whose next argument is one (argv[1] naming the
 * compiler, as ccache, sccache, distcc and CMake's launchers are called). */
static inline int mg_is_job(const char* path, char* const argv[], const char* extra_launchers) {
  int kind;
  if (!path || !*path) return 0;
  kind = mg_classify_program(path, extra_launchers);
  if (kind == MG_COMPILER || kind == MG_LINKER) return 1;
  if (kind != MG_LAUNCHER || !argv || !argv[0] || !argv[1]) return 0;
  kind = mg_classify_program(argv[1], NULL);
  return kind == MG_COMPILER || kind == MG_LINKER;
}

#ifdef __cplusplus
}
#endif

#endif /* MEMGATE_PRELOAD_COMPILERS_H */
