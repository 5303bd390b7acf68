#!/usr/bin/env bash
# Freeze and thaw through cgroup.freeze (tests/e2e/run_freeze.sh, scaled):
# A holds 250 MB, B grows slowly towards 220 MB in a 400 MiB budget. memgate
# freezes B (its job cgroup's cgroup.freeze, seen as "frozen 1" in
# cgroup.events, with B's process not stopped by a signal), thaws it once
# A is done, and B finishes in its first attempt. A teaching run with tiny
# jobs first, so that both start together (the cold default alone, 512 MiB,
# would not fit this budget twice).
source "$(dirname "$0")/vmlib.sh"
export PATH="$(fake_compilers):$PATH"
w="$E2E_TMP/work"
hist="$E2E_TMP/h.db"
memjob_workload "$w" "--peak 20M --duration 0.3" "--peak 20M --duration 0.3"
cg=$(cg_make freeze 600M)
cg_run "$cg" "$MEMGATE" run --jobs 2 --memory 400M --reserve 64M --history "$hist" -- make -s -C "$w" -j2 \
  >"$E2E_TMP/teach.log" 2>&1 || { cat "$E2E_TMP/teach.log" >&2; fail "the teaching run failed"; }
make -s -C "$w" clean
printf 'memjob: %s\n' "--peak 250M --ramp 0.2 --hold 0.5 --hold-until $w/a.release --after 20M --ready $w/a.ready" >"$w/j000.job"
printf 'memjob: %s\n' "--base 40M --peak 220M --ramp 7 --peak-at 8 --hold 0.2 --after 20M --duration 8.5" >"$w/j001.job"
# j001 must be the newer job, and start once j000 holds its peak.
sed -i 's/^\t$(CC)/\t@if [ $@ = j001.o ]; then while [ ! -e a.ready ]; do sleep 0.05; done; fi\n\t$(CC)/' "$w/Makefile"

set +e
cg_run "$cg" "$MEMGATE" run --jobs 2 --memory 400M --reserve 64M --history "$hist" -- make -s -C "$w" -j2 \
  >"$E2E_TMP/run.log" 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null && ! grep -q '^memgate: freeze job' "$E2E_TMP/run.log"; do sleep 0.1; done
# The freeze is the kernel's: a job cgroup says frozen, and no process is stopped.
seen=""
saw_it() { seen=$(stopped_or_frozen "$cg"); [ -n "$seen" ]; }
wait_for 10 saw_it || true
touch "$w/a.release"
wait "$pid"
rc=$?
set -e
grep -v '^memgate: \[' "$E2E_TMP/run.log" >&2
assert_eq 0 "$rc" "exit status"
case $seen in
  frozen:*/job-*) note "seen while B was frozen: $seen" ;;
  *) fail "no job cgroup reported frozen in cgroup.events (saw '$seen')" ;;
esac
grep -q stopped: <<<"$seen" && fail "a job was stopped by a signal, not frozen by its cgroup: $seen"
check_clean_run "$cg" "$w"
last_build "$hist" "$E2E_TMP/h.json"
[ "$(json_num "$E2E_TMP/h.json" frozen)" -ge 1 ] || fail "nothing was frozen"
[ "$(json_num "$E2E_TMP/h.json" thawed)" -ge 1 ] || fail "nothing was thawed"
assert_eq 0 "$(json_num "$E2E_TMP/h.json" requeued)" "requeues"
assert_eq 0 "$(json_num "$E2E_TMP/h.json" oom_killed)" "OOM kills"
assert_eq "1 1" "$(json_all "$E2E_TMP/h.json" attempts)" "attempts"
echo PASS
