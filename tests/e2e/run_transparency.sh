#!/usr/bin/env bash
# Issue 3, "transparency": a small real C++ project built through memgate
# with make and with CMake+Ninja gives byte-identical objects and the same
# exit status as a direct build; a failing compile fails the same way,
# with the same error text.
source "$(dirname "$0")/lib.sh"
src="$MEMGATE_SRC/tests/e2e/projects/hello"
cg=$(cg_make transparency 4G)

copy() { mkdir -p "$1" && cp "$src"/*.cpp "$src"/*.hpp "$src"/Makefile "$src"/CMakeLists.txt "$1"/; }

note "make: direct vs through memgate"
copy "$E2E_TMP/direct" && copy "$E2E_TMP/gated"
cg_run "$cg" make -C "$E2E_TMP/direct" -j2 >"$E2E_TMP/direct.out" 2>&1
cg_run "$cg" "$MEMGATE" run --quiet --history "$E2E_TMP/h.db" -- make -C "$E2E_TMP/gated" -j2 >"$E2E_TMP/gated.out" 2>&1
for o in main.o greet.o math.o; do
  cmp "$E2E_TMP/direct/$o" "$E2E_TMP/gated/$o" || fail "$o differs"
done
"$E2E_TMP/gated/hello" | grep -qx "hello, memgate 385" || fail "the built program does not work"
jobs=$("$MEMGATE" history --json --build last --history "$E2E_TMP/h.db" >"$E2E_TMP/h.json" && json_get "$E2E_TMP/h.json" 'len(j["jobs"])')
assert_eq 4 "$jobs" "gated jobs (3 compiles and a link)"

note "a failing compile: same status, same error text"
set +e
(cd "$E2E_TMP/direct" && make bad.o) >"$E2E_TMP/bad.direct" 2>&1
rc_direct=$?
(cd "$E2E_TMP/gated" && cg_run "$cg" "$MEMGATE" run --quiet --history "$E2E_TMP/h.db" -- make bad.o) >"$E2E_TMP/bad.gated" 2>&1
rc_gated=$?
set -e
assert_eq "$rc_direct" "$rc_gated" "exit status of a failing build"
[ "$rc_direct" -ne 0 ] || fail "bad.cpp should not compile"
diff <(grep -v '^memgate: ' "$E2E_TMP/bad.direct") <(grep -v '^memgate: ' "$E2E_TMP/bad.gated") ||
  fail "error text differs"

note "CMake + Ninja: direct vs through memgate (fresh configure)"
for kind in direct gated; do
  if [ $kind = direct ]; then run=(); else run=("$MEMGATE" run --quiet --history "$E2E_TMP/h.db" --); fi
  cg_run "$cg" "${run[@]}" cmake -S "$src" -B "$E2E_TMP/cm-$kind" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cg_run "$cg" "${run[@]}" cmake --build "$E2E_TMP/cm-$kind" >/dev/null
done
for o in main.cpp.o greet.cpp.o math.cpp.o; do
  cmp "$E2E_TMP/cm-direct/CMakeFiles/hello.dir/$o" "$E2E_TMP/cm-gated/CMakeFiles/hello.dir/$o" || fail "cmake $o differs"
done
"$MEMGATE" history --json --build last --history "$E2E_TMP/h.db" >"$E2E_TMP/h2.json"
[ "$(json_get "$E2E_TMP/h2.json" 'len(j["jobs"])')" -ge 3 ] || fail "the CMake compiles were not gated"
# The CMake cache keeps working without memgate (it records the real compiler).
cg_run "$cg" cmake --build "$E2E_TMP/cm-gated" --clean-first >/dev/null || fail "plain rebuild of a memgate-configured tree"
echo "PASS"
