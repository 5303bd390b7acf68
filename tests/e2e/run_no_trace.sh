#!/usr/bin/env bash
# Issue 11, done-means 3: memgate leaves no trace in the build.
# - A CMake+Ninja directory configured under memgate records the real
#   compiler: `grep -c memgate CMakeCache.txt build.ninja` is 0.
# - With memgate's binaries (a copy installed to a temporary prefix) and
#   its cache directory removed, that directory still builds directly.
# - make's echoed command lines are the same with and without memgate.
source "$(dirname "$0")/lib.sh"
command -v c++ >/dev/null && command -v ninja >/dev/null || { echo "SKIP: no c++ or ninja"; exit 77; }
cg=$(cg_make notrace 4G)
# The project and the prefix live under a name without "memgate" in it:
# CMakeCache.txt records its own paths.
work=$(mktemp -d /tmp/notrace.XXXXXX)
trap 'rm -rf "$work"; e2e_cleanup' EXIT
prefix="$work/prefix"
mg=$(install_memgate "$prefix")
cp -r "$MEMGATE_SRC/tests/e2e/projects/tenfiles" "$work/src"

note "configure and build under the installed memgate"
cg_run "$cg" "$mg" run --quiet --history "$E2E_TMP/h.db" -- cmake -S "$work/src" -B "$work/b" -G Ninja >/dev/null
cg_run "$cg" "$mg" run --quiet --history "$E2E_TMP/h.db" -- cmake --build "$work/b" >/dev/null
history_json "$E2E_TMP/h.db" "$E2E_TMP/h.json"
assert_eq 10 "$(json_get "$E2E_TMP/h.json" 'len(j["jobs"])')" "gated jobs of the build"
counts=$(cd "$work/b" && grep -c memgate CMakeCache.txt build.ninja || true)
assert_eq "$(printf 'CMakeCache.txt:0\nbuild.ninja:0')" "$counts" "grep -c memgate CMakeCache.txt build.ninja"
grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=/usr/bin/c++$' "$work/b/CMakeCache.txt" ||
  fail "recorded compiler: $(grep '^CMAKE_CXX_COMPILER:' "$work/b/CMakeCache.txt")"
for v in CMAKE_CXX_COMPILER_LAUNCHER CMAKE_C_COMPILER_LAUNCHER; do
  grep -q "^$v" "$work/b/CMakeCache.txt" && fail "$v was recorded"
done

note "memgate removed: the directory builds directly"
rm -rf "$prefix" "$XDG_CACHE_HOME"
cg_run "$cg" cmake --build "$work/b" --clean-first >/dev/null || fail "direct rebuild without memgate"
[ "$(find "$work/b" -name '*.o' | wc -l)" -eq 10 ] || fail "direct rebuild made no objects"

note "make's command lines: identical with and without memgate"
mg=$(install_memgate "$prefix")
mkdir "$work/m"
for i in 1 2 3; do printf 'int h%d(void) { return %d; }\n' "$i" "$i" >"$work/m/h$i.c"; done
printf 'OBJS := h1.o h2.o h3.o\nall: $(OBJS)\n%%.o: %%.c\n\t$(CC) -O2 -c $< -o $@\nclean:\n\trm -f $(OBJS)\n' \
  >"$work/m/Makefile"
make -C "$work/m" -j1 >"$E2E_TMP/direct.out"
make -C "$work/m" -s clean
cg_run "$cg" "$mg" run --quiet --history "$E2E_TMP/h.db" -- make -C "$work/m" -j1 >"$E2E_TMP/gated.out"
diff "$E2E_TMP/direct.out" "$E2E_TMP/gated.out" || fail "make echoed other command lines under memgate"
grep -qx 'cc -O2 -c h1.c -o h1.o' "$E2E_TMP/gated.out" || fail "make's echo: $(cat "$E2E_TMP/gated.out")"
history_json "$E2E_TMP/h.db" "$E2E_TMP/h2.json"
assert_eq 3 "$(json_get "$E2E_TMP/h2.json" 'len(j["jobs"])')" "gated jobs of the make build"
echo "PASS"
