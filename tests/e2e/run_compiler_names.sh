#!/usr/bin/env bash
# Issue 11, done-means 2: whatever name or path the build uses for the
# compiler, each object is one gated job: CC=gcc-12 with make; build.ninja
# files calling /usr/bin/g++, x86_64-linux-gnu-g++-12 and clang++-14;
# ccache as CMAKE_CXX_COMPILER_LAUNCHER and through its masquerade directory
# (one job per compile, never two, on misses and on hits); and a compiler
# started by a statically linked tool (the library's start-up check).
source "$(dirname "$0")/lib.sh"
command -v gcc-12 >/dev/null && command -v ninja >/dev/null || { echo "SKIP: no gcc-12 or ninja"; exit 77; }
cg=$(cg_make names 4G)
n=0

# jobs_of LABEL EXPECTED_COUNT EXPECTED_TOOL: the last build's jobs.
check_jobs() {
  n=$((n + 1))
  # "--build last" prefers the directory it is asked from: ask from the
  # directory the build ran in.
  (cd "$(cat "$E2E_TMP/last_dir")" && history_json "$E2E_TMP/h.db" "$E2E_TMP/h$n.json")
  assert_eq "$2" "$(json_get "$E2E_TMP/h$n.json" 'len(j["jobs"])')" "$1: gated jobs"
  assert_eq "$3" "$(json_get "$E2E_TMP/h$n.json" '",".join(sorted({x["tool"] for x in j["jobs"]}))')" "$1: tool"
  assert_eq "$2" "$(json_get "$E2E_TMP/h$n.json" 'len({x["identity"] for x in j["jobs"]})')" "$1: distinct identities"
  note "$1: $2 jobs, tool $3"
}
gated() { pwd >"$E2E_TMP/last_dir"; cg_run "$cg" "$MEMGATE" run --quiet --history "$E2E_TMP/h.db" -- "$@"; }

# sources DIR N: N small C++ files.
sources() {
  mkdir -p "$1"
  for i in $(seq 1 "$2"); do printf 'int f%d(int x) { return x * %d; }\n' "$i" "$i" >"$1/f$i.cpp"; done
}

note "CC=gcc-12 make"
mkdir -p "$E2E_TMP/make"
for i in 1 2 3 4; do printf 'int g%d(void) { return %d; }\n' "$i" "$i" >"$E2E_TMP/make/g$i.c"; done
printf 'OBJS := g1.o g2.o g3.o g4.o\nall: $(OBJS)\n%%.o: %%.c\n\t$(CC) -c $< -o $@\n' >"$E2E_TMP/make/Makefile"
(cd "$E2E_TMP/make" && CC=gcc-12 gated make -j2 >/dev/null)
check_jobs "CC=gcc-12 make" 4 gcc

# ninja_with COMPILER TOOL: a hand-written build.ninja of 3 objects.
ninja_with() {
  local dir="$E2E_TMP/ninja-$(basename "$1")"
  sources "$dir" 3
  printf 'rule cxx\n  command = %s -O2 -c $in -o $out\n' "$1" >"$dir/build.ninja"
  for i in 1 2 3; do printf 'build f%d.o: cxx f%d.cpp\n' "$i" "$i" >>"$dir/build.ninja"; done
  gated ninja -C "$dir" >/dev/null
  check_jobs "build.ninja with $1" 3 "$2"
}
ninja_with /usr/bin/g++ g++
ninja_with x86_64-linux-gnu-g++-12 g++
if command -v clang++-14 >/dev/null; then ninja_with clang++-14 clang++; else note "SKIP clang++-14: not installed"; fi

if command -v ccache >/dev/null; then
  export CCACHE_DIR="$E2E_TMP/ccache"
  note "ccache as CMAKE_CXX_COMPILER_LAUNCHER (configured without memgate)"
  sources "$E2E_TMP/cm" 6
  printf 'cmake_minimum_required(VERSION 3.16)\nproject(p CXX)\nadd_library(p STATIC f1.cpp f2.cpp f3.cpp f4.cpp f5.cpp f6.cpp)\n' \
    >"$E2E_TMP/cm/CMakeLists.txt"
  cmake -S "$E2E_TMP/cm" -B "$E2E_TMP/cm/b" -G Ninja -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
  gated cmake --build "$E2E_TMP/cm/b" >/dev/null
  check_jobs "ccache launcher, cache misses" 6 c++
  gated cmake --build "$E2E_TMP/cm/b" --clean-first >/dev/null
  check_jobs "ccache launcher, cache hits" 6 c++
  ccache -s 2>/dev/null | grep -Eiq 'hits: *[1-9]|cache hit.*[1-9]' || note "(ccache -s shows no hits)"

  note "ccache's masquerade directory"
  sources "$E2E_TMP/masq" 4
  printf 'OBJS := f1.o f2.o f3.o f4.o\nall: $(OBJS)\n%%.o: %%.cpp\n\t$(CXX) -c $< -o $@\n' >"$E2E_TMP/masq/Makefile"
  (cd "$E2E_TMP/masq" && PATH="/usr/lib/ccache:$PATH" CXX=g++ gated make -j2 >/dev/null)
  check_jobs "ccache masquerade (/usr/lib/ccache/g++)" 4 g++
  unset CCACHE_DIR
else
  note "SKIP ccache: not installed"
fi

note "a compiler started by a statically linked tool"
cat >"$E2E_TMP/static-run.c" <<'C'
#include <unistd.h>
#include <sys/wait.h>
int main(int argc, char** argv) {
  /* Runs argv[1..] by absolute path from a static binary: no preload here. */
  if (argc < 2) return 2;
  pid_t pid = fork();
  if (pid == 0) { execv(argv[1], argv + 1); _exit(127); }
  int st; waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
C
gcc -static -O2 -o "$E2E_TMP/static-run" "$E2E_TMP/static-run.c" 2>/dev/null || { note "SKIP static: no static libc"; echo PASS; exit 0; }
sources "$E2E_TMP/st" 1
(cd "$E2E_TMP/st" && gated "$E2E_TMP/static-run" /usr/bin/g++ -c f1.cpp -o f1.o 2>"$E2E_TMP/static.err") ||
  fail "static caller: $(cat "$E2E_TMP/static.err")"
[ -s "$E2E_TMP/st/f1.o" ] || fail "static caller: no object"
check_jobs "/usr/bin/g++ started by a static tool" 1 g++
echo "PASS"
