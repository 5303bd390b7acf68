#!/usr/bin/env bash
# Issue 12, item 7: what a run lost must be on its `degraded:` line, not
# only in a warning scrolled away:
# 1. shims refused: a copy of memgate whose shim directory holds an extra
#    file (a `make` that would shadow the build command) refuses the
#    directory; with MEMGATE_NO_PRELOAD=1 nothing gates the compilers.
# 2. confinement lost mid-run: the build tool moves itself out of the
#    build's cgroup; memgate notices (it checks every 0.5 s) and says so.
source "$(dirname "$0")/lib.sh"
cd "$E2E_TMP"

note "1. shims refused"
parts="$E2E_TMP/parts"
mkdir -m 0755 "$parts"
cp "$MEMGATE" "$(dirname "$MEMGATE")/memgate-wrap" "$parts/"
mkdir -m 0755 "$parts/shims"
touch "$parts/shims/.memgate-shims"
printf '#!/bin/sh\necho planted\n' >"$parts/shims/make"
chmod 0755 "$parts/shims/make"
MEMGATE_NO_PRELOAD=1 "$parts/memgate" run --history "$E2E_TMP/h.db" --no-confine -- true 2>err.txt ||
  fail "the run failed: $(cat err.txt)"
cat err.txt >&2
grep -q '^memgate: degraded: .*compiler shims refused: ' err.txt || fail "no 'shims refused' on the degraded line"
[ -e "$parts/shims/make" ] || fail "the planted file was deleted (refuse, never delete)"

note "2. confinement lost mid-run"
require_cgroups
cat >"$E2E_TMP/escape.sh" <<'SH'
# The build tool leaves the build's cgroup for memgate's own, then waits
# until memgate has said it noticed (bounded).
set -eu
if grep -q '^[0-9]*:[^:]*memory' /proc/self/cgroup; then
  rel=$(sed -n 's/^[0-9]*:[^:]*memory[^:]*://p' /proc/self/cgroup)
  mnt=$(awk '$9 == "cgroup" && $NF ~ /(^|,)memory(,|$)/ {print $5; exit}' /proc/self/mountinfo)
  target="$mnt$(dirname "$(dirname "$rel")")"
else
  rel=$(sed -n 's/^0:://p' /proc/self/cgroup)
  mnt=$(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)
  target="$mnt$(dirname "$(dirname "$rel")")"
  [ -d "$target/memgate-leaf" ] && target="$target/memgate-leaf"
fi
echo $$ >"$target/cgroup.procs"
for _ in $(seq 1 400); do
  grep -q 'left its cgroup' "$ERR" && exit 0
  sleep 0.05
done
echo "memgate did not notice" >&2
exit 1
SH
ERR="$E2E_TMP/err2.txt" "$MEMGATE" run --history "$E2E_TMP/h.db" -- bash "$E2E_TMP/escape.sh" 2>"$E2E_TMP/err2.txt" ||
  { cat "$E2E_TMP/err2.txt" >&2; fail "the build failed"; }
cat "$E2E_TMP/err2.txt" >&2
grep -q '^memgate: degraded: .*confinement lost mid-run (the build tool left its cgroup)' "$E2E_TMP/err2.txt" ||
  fail "no 'confinement lost' on the degraded line"
echo "PASS"
