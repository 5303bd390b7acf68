#!/usr/bin/env bash
# The install build docs/install.md's "From source" uses: -DBUILD_TESTING=OFF
# (CTest's convention) configures only what `cmake --install` installs. Its
# build has no test, bench, test-tool or fuzz target and no CTest tests;
# `cmake --install` from it into a temp prefix gives memgate, its parts and
# the man page; and the installed memgate gates a real make -j build.
#
# The build directory sits beside the suite's (BUILD.install-check, removed
# at the end) and takes the suite's build type, warnings and compiler
# launcher: with scripts/test's ccache (path-independent, see
# scripts/deps.sh), its compiles are cache hits of the suite's own build.
# The machine's compiler cache, found before lib.sh moves XDG_CACHE_HOME into
# the test's directory: the install build compiles from it, not from cold.
if command -v ccache >/dev/null; then export CCACHE_DIR=${CCACHE_DIR:-$(ccache -k cache_dir)}; fi
source "$(dirname "$0")/lib.sh"
: "${MEMGATE_BUILD:?}" "${MEMGATE_SRC:?}"
cg=$(cg_make install 4G)
dir="$MEMGATE_BUILD.install-check"
rm -rf "$dir"
trap 'rm -rf "$dir"; e2e_cleanup' EXIT
cache_of() { sed -n "s/^$1:[A-Z]*=//p" "$MEMGATE_BUILD/CMakeCache.txt"; }
args=(-DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE="$(cache_of CMAKE_BUILD_TYPE)" -DMEMGATE_WERROR="$(cache_of MEMGATE_WERROR)")
for var in CMAKE_C_COMPILER_LAUNCHER CMAKE_CXX_COMPILER_LAUNCHER; do
  [ -z "$(cache_of $var)" ] || args+=("-D$var=$(cache_of $var)")
done
cmake -S "$MEMGATE_SRC" -B "$dir" -G Ninja "${args[@]}" >"$E2E_TMP/configure.log" 2>&1 ||
  fail "configure with -DBUILD_TESTING=OFF: $(tail -20 "$E2E_TMP/configure.log")"

ninja -C "$dir" -t targets all >"$E2E_TMP/targets.txt" || fail "ninja -t targets"
bad=$(grep -oE '^(memgate_tests|libmemgate_test_support\.a|memjob|exec_probe|bench_[a-z_]+|fuzz_[a-z_]+|test): ' \
  "$E2E_TMP/targets.txt" | tr '\n' ' ' || true)
assert_eq "" "$bad" "test, bench or fuzz targets in the install build"
for t in memgate memgate-wrap libmemgate-preload.so install; do
  grep -q "^$t: " "$E2E_TMP/targets.txt" || fail "no $t target in the install build"
done
tests=$(cd "$dir" && ctest --show-only=json-v1 | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["tests"]))')
assert_eq 0 "$tests" "CTest tests in the install build"

cmake --build "$dir" >"$E2E_TMP/build.log" 2>&1 || fail "build: $(tail -30 "$E2E_TMP/build.log")"
note "$(grep -c 'Building' "$E2E_TMP/build.log") compiles"
! grep -qE 'memgate_tests|bench_|memjob|exec_probe' "$E2E_TMP/build.log" || fail "the install build built test code"
prefix="$E2E_TMP/prefix"
cmake --install "$dir" --prefix "$prefix" >"$E2E_TMP/install.log" 2>&1 || fail "install: $(cat "$E2E_TMP/install.log")"
for f in bin/memgate libexec/memgate/memgate-wrap libexec/memgate/libmemgate-preload.so libexec/memgate/shims/cc \
  share/bash-completion/completions/memgate share/zsh/site-functions/_memgate; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
if command -v help2man >/dev/null; then [ -s "$prefix/share/man/man1/memgate.1" ] || fail "no man page installed"; fi
assert_eq "" "$(find "$prefix" -name 'memjob*' -o -name 'bench_*' -o -name 'memgate_tests')" "test programs installed"

note "the installed memgate gates make -j4"
w="$E2E_TMP/w"
mkdir -p "$w"
for i in 1 2 3 4; do printf 'int f%d(void) { return %d; }\n' "$i" "$i" >"$w/f$i.c"; done
printf 'SRCS := $(wildcard *.c)\nall: $(SRCS:.c=.o)\n%%.o: %%.c\n\tcc -c $< -o $@\n' >"$w/Makefile"
cg_run "$cg" "$prefix/bin/memgate" run --quiet --history "$E2E_TMP/h.db" -- make -s -C "$w" -j4 || fail "installed memgate run"
assert_eq 4 "$(ls "$w"/*.o | wc -l)" "objects"
"$prefix/bin/memgate" history --json --build last --history "$E2E_TMP/h.db" >"$E2E_TMP/h.json"
assert_eq 4 "$(json_get "$E2E_TMP/h.json" 'len(j["jobs"])')" "gated jobs"
echo PASS
