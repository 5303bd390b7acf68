#!/usr/bin/env bash
# memgate's own loop runs before the build's processes (run/build_process.hpp,
# raise_own_priority): once the build has started, memgate raises its
# priority; the build, and everything it starts, keeps the niceness memgate
# was started with.
source "$(dirname "$0")/lib.sh"
cg=$(cg_make priority 1G)
[ "$(id -u)" = 0 ] || { echo "SKIP: raising a priority needs root"; exit 77; }
cg_run "$cg" env MEMGATE_DEBUG=1 nice -n 3 "$MEMGATE" run --history "$E2E_TMP/h.db" -- sh -c 'ps -o ni= -p $$' \
  >"$E2E_TMP/out" 2>"$E2E_TMP/err"
cat "$E2E_TMP/err" >&2
assert_eq 3 "$(tr -d ' ' <"$E2E_TMP/out")" "the build's niceness"
grep -q 'memgate runs at nice -20$' "$E2E_TMP/err" || fail "memgate did not say it raised its own priority"
echo PASS
