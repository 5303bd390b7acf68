#!/usr/bin/env bash
# Issue 16, Done means 2: a run in which nothing notable happened ends with
# at most 3 memgate lines (`memgate run -- true`: one; a small build: jobs,
# time and peak, then what limited it), and no zero counters; --verbose
# gives the details. A run with freezes prints them: tests/e2e/run_freeze.sh.
# `history --build` keeps the internal counters for --json.
source "$(dirname "$0")/lib.sh"
require_cgroups
export PATH="$(fake_compilers):$PATH"
export MEMGATE_HISTORY="$E2E_TMP/h.db"
cg=$(cg_make summary 3G)  # a budget above the 512 MiB a job never seen is given

note "memgate run -- true"
cg_run "$cg" "$MEMGATE" run -- true 2>"$E2E_TMP/true.err"
cat "$E2E_TMP/true.err" >&2
n=$(grep -c '^memgate:' "$E2E_TMP/true.err" || true)
[ "$n" -le 3 ] || fail "memgate run -- true printed $n memgate lines"
grep -Eq '^memgate: finished in [0-9.]+s, no compiler jobs gated$' "$E2E_TMP/true.err" || fail "no one-line summary"
! grep -q ' 0 freezes\|dropped_malformed' "$E2E_TMP/true.err" || fail "zero counters in a quiet summary"

note "a small build"
w="$E2E_TMP/work"
memjob_workload "$w" "--peak 16M --duration 0.2" "--peak 16M --duration 0.2" "--peak 16M --duration 0.2"
cg_run "$cg" "$MEMGATE" run -- make -s -C "$w" -j2 2>"$E2E_TMP/make.err"
cat "$E2E_TMP/make.err" >&2
grep -v '^memgate: \[' "$E2E_TMP/make.err" | grep '^memgate:' >"$E2E_TMP/summary" || true
[ "$(wc -l <"$E2E_TMP/summary")" -le 3 ] || fail "$(wc -l <"$E2E_TMP/summary") summary lines for a build where memgate did nothing"
grep -Eq '^memgate: 3 jobs in [0-9.]+s \([0-9.]+/min\), peak .* of .* \([0-9]+%\)$' "$E2E_TMP/summary" || fail "no jobs/time/peak line"
! grep -q 'freeze\|requeue\|heaviest' "$E2E_TMP/summary" || fail "details in a quiet summary"

note "--verbose gives the details"
make -s -C "$w" clean
cg_run "$cg" "$MEMGATE" run --verbose -- make -s -C "$w" -j2 2>"$E2E_TMP/verbose.err"
grep -q '^memgate: 0 freezes, 0 requeues, 0 retries, 0 OOM kills, 0 jobs ran alone$' "$E2E_TMP/verbose.err" ||
  { cat "$E2E_TMP/verbose.err" >&2; fail "--verbose does not show the counters"; }
grep -q '^memgate: heaviest jobs (peak, predicted):$' "$E2E_TMP/verbose.err" || fail "--verbose does not list the heaviest jobs"

note "history --build shows what memgate did, not its internal counters (those are in --json)"
"$MEMGATE" history --build last >"$E2E_TMP/hist.txt" 2>/dev/null
! grep -q 'dropped_malformed\|refused_uid\|wrapper_connections' "$E2E_TMP/hist.txt" || fail "internal counters in history --build: $(cat "$E2E_TMP/hist.txt")"
"$MEMGATE" history --build last --json | grep -q '"dropped_malformed"' || fail "the counters are missing from --json"
echo "ok"
