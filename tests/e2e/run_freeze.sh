#!/usr/bin/env bash
# Issue 4: a frozen job resumes and completes. Two jobs share a 2 GiB
# budget: A holds 1.2 GB, B grows slowly towards 1.1 GB. When the build
# nears the budget memgate freezes B (the newest), thaws it once A is done,
# and B finishes in its first attempt: nothing is killed or rerun.
#
# The scenario is driven by events, not by timing, because allocation speed
# varies widely on a loaded VM: B starts once A holds its peak (A's --ready
# file), and A holds it until the test has seen memgate freeze B. Had A still
# been growing, freezing B could not stop the build's growth, and killing
# B would have been the right call.
source "$(dirname "$0")/lib.sh"
require_cgroups
export PATH="$(fake_compilers):$PATH"
w="$E2E_TMP/work"
memjob_workload "$w" \
  "--peak 1200M --ramp 0.2 --hold 0.5 --hold-until $w/a.release --after 50M --ready $w/a.ready" \
  "--base 200M --peak 1100M --ramp 7 --peak-at 8 --hold 0.2 --after 50M --duration 8.5"
# j001 must be the newer job, and start once j000 holds its peak.
sed -i 's/^\t$(CC)/\t@if [ $@ = j001.o ]; then while [ ! -e a.ready ]; do sleep 0.05; done; fi\n\t$(CC)/' "$w/Makefile"

cg=$(cg_make freeze 3G)
set +e
cg_run "$cg" "$MEMGATE" run --jobs 2 --memory 2G --history "$E2E_TMP/h.db" -- make -s -C "$w" -j2 >"$E2E_TMP/run.log" 2>&1 &
pid=$!
# Release A once B is frozen (or once memgate has ended, and the checks
# below say what went wrong).
while kill -0 "$pid" 2>/dev/null && ! grep -q '^memgate: freeze job' "$E2E_TMP/run.log"; do sleep 0.1; done
touch "$w/a.release"
wait "$pid"
rc=$?
set -e
grep -v '^memgate: \[' "$E2E_TMP/run.log" >&2
assert_eq 0 "$rc" "exit status"
check_memjob_outputs "$w" || fail "outputs"
"$MEMGATE" history --json --build last --history "$E2E_TMP/h.db" >"$E2E_TMP/h.json"
c() { json_get "$E2E_TMP/h.json" "j['build']['counters'].get('$1', 0)"; }
[ "$(c frozen)" -ge 1 ] || fail "nothing was frozen"
[ "$(c thawed)" -ge 1 ] || fail "nothing was thawed"
assert_eq 0 "$(c requeued)" "requeues"
assert_eq 0 "$(c oom_killed)" "OOM kills"
assert_eq "1 1" "$(json_get "$E2E_TMP/h.json" '" ".join(str(x["attempts"]) for x in j["jobs"])')" "attempts"
frozen=$(json_get "$E2E_TMP/h.json" '[x for x in j["jobs"] if x["identity"].endswith("j001.o")][0]["frozen_s"]')
python3 -c "import sys; sys.exit(0 if $frozen > 0 else 1)" || fail "j001 was not frozen for any time ($frozen s)"
# memgate acted, so the summary says what it did (issue 16): the waits and
# freezes, the counts, the heaviest jobs.
grep -Eq '^memgate: jobs waited .* for memory in total \(.*\), [0-9.]+s frozen$' "$E2E_TMP/run.log" || fail "no wait/frozen line"
grep -Eq '^memgate: [0-9]+ freezes?$' "$E2E_TMP/run.log" || fail "the summary does not count the freezes"
grep -q '^memgate: heaviest jobs (peak, predicted):$' "$E2E_TMP/run.log" || fail "no heaviest jobs"
echo "PASS"
