#!/usr/bin/env bash
# `memgate plan` from the command line: the flash-attn job table on a
# hypothetical machine (table, JSON, --recommend), a machine where nothing
# is safe, a .ninja_log, and the errors. Pure simulation: nothing here
# allocates real memory, so no cgroup is needed.
source "$(dirname "$0")/lib.sh"
: "${MEMGATE_SRC:?}"
csv="$MEMGATE_SRC/tests/fixtures/flash-attn/flash-attn-nvcc-jobs.csv"
log="$MEMGATE_SRC/tests/fixtures/ninja_log/flash-attn.ninja_log"
export MEMGATE_HISTORY="$E2E_TMP/history.db"

note "table for 128 cores and 432 GiB"
"$MEMGATE" plan --jobs-csv "$csv" --cores 128 --capacity 432G --nvcc-threads 4 --gpu-targets 4 >"$E2E_TMP/table.txt"
cat "$E2E_TMP/table.txt" >&2
grep -q '^memgate plan: 96 jobs' "$E2E_TMP/table.txt" || fail "table title"
grep -q '^machine: 128 cores, 432 GiB capacity, 8.00 GiB reserve' "$E2E_TMP/table.txt" || fail "machine line"
grep -q '^recommended: -j [0-9]' "$E2E_TMP/table.txt" || fail "recommendation line"
grep -q '^memgate ' "$E2E_TMP/table.txt" || fail "memgate row"

note "JSON agrees with --recommend"
"$MEMGATE" plan --jobs-csv "$csv" --cores 128 --capacity 432G --nvcc-threads 4 --gpu-targets 4 --json >"$E2E_TMP/plan.json"
rec=$("$MEMGATE" plan --jobs-csv "$csv" --cores 128 --capacity 432G --nvcc-threads 4 --gpu-targets 4 --recommend)
assert_eq "$(json_get "$E2E_TMP/plan.json" 'j["recommended_jobs"]')" "$rec" "--recommend vs JSON"
assert_eq 96 "$(json_get "$E2E_TMP/plan.json" 'j["job_count"]')" "job count"
assert_eq 128 "$(json_get "$E2E_TMP/plan.json" 'j["machine"]["cores"]')" "cores"
assert_eq $((432 << 30)) "$(json_get "$E2E_TMP/plan.json" 'j["machine"]["capacity_bytes"]')" "capacity"
assert_eq True "$(json_get "$E2E_TMP/plan.json" \
  'all(set(r) >= {"jobs","wall_s","objects_per_min","peak_bytes","oom_risk"} for r in j["rows"])')" "row keys"
assert_eq True "$(json_get "$E2E_TMP/plan.json" \
  '[r["worst_peak_bytes"] <= j["machine"]["budget_bytes"] for r in j["rows"] if r["jobs"] == j["recommended_jobs"]] == [True]')" \
  "the recommended row stays within capacity - reserve"
assert_eq True "$(json_get "$E2E_TMP/plan.json" 'j["memgate"]["wall_s"] > 0 and j["memgate"]["finished"]')" "memgate row"

note "--jobs-range 1-4 gives those rows"
"$MEMGATE" plan --jobs-csv "$csv" --cores 8 --capacity 64G --jobs-range 1-4 --json >"$E2E_TMP/range.json"
assert_eq "[1, 2, 3, 4]" "$(json_get "$E2E_TMP/range.json" '[r["jobs"] for r in j["rows"]]')" "rows of 1-4"

note "nothing is safe when one job needs more than capacity - reserve"
set +e
out=$("$MEMGATE" plan --jobs-csv "$csv" --cores 8 --capacity 6G --recommend 2>"$E2E_TMP/unsafe.err")
rc=$?
set -e
cat "$E2E_TMP/unsafe.err" >&2
assert_eq 3 "$rc" "exit status when nothing is safe"
assert_eq 1 "$out" "still prints 1"
grep -q "no static job count is safe" "$E2E_TMP/unsafe.err" || fail "warning on stderr"

note "--memory, plan's old name for --capacity, still works and says so"
"$MEMGATE" plan --jobs-csv "$csv" --cores 8 --memory 64G --jobs-range 1-4 --json >"$E2E_TMP/old.json" 2>"$E2E_TMP/old.err"
assert_eq "$(json_get "$E2E_TMP/range.json" 'j["machine"]')" "$(json_get "$E2E_TMP/old.json" 'j["machine"]')" "--memory as --capacity"
grep -q "plan --memory is now --capacity" "$E2E_TMP/old.err" || fail "no deprecation note for --memory"

note ".ninja_log with per-tool defaults (empty history)"
"$MEMGATE" plan --ninja-log "$log" --cores 4 --capacity 32G --json >"$E2E_TMP/ninja.json" 2>"$E2E_TMP/ninja.err"
assert_eq 15 "$(json_get "$E2E_TMP/ninja.json" 'j["job_count"]')" "jobs in the log (the last entry per output)"
grep -q "not in history" "$E2E_TMP/ninja.err" || fail "says that memory is guessed"

note "errors"
set +e
"$MEMGATE" plan --jobs-csv "$csv" --jobs-range 4-2 >/dev/null 2>&1
assert_eq 2 "$?" "bad --jobs-range"
"$MEMGATE" plan --jobs-csv "$E2E_TMP/missing.csv" >/dev/null 2>&1
assert_eq 1 "$?" "missing table"
(cd "$E2E_TMP" && "$MEMGATE" plan >/dev/null 2>"$E2E_TMP/nohist.err")
assert_eq 1 "$?" "no recorded build"
set -e
grep -q "memgate run" "$E2E_TMP/nohist.err" || fail "tells how to record a build"
echo "PASS"
