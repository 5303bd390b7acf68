#!/usr/bin/env bash
# `memgate plan` from a build `memgate run` recorded: 8 memjob compiles
# (50-150 MB, 0.5-1 s) in a 1 GiB test cgroup, then plan by default (the
# last build in this directory), with --build last and with --build ID.
source "$(dirname "$0")/lib.sh"
require_cgroups
export PATH="$(fake_compilers):$PATH"

specs=()
for i in $(seq 0 7); do
  specs+=("--peak $((50 + 15 * i))M --ramp 0.1 --hold 0.2 --after 20M --duration 0.$((5 + i % 5))")
done
w="$E2E_TMP/work"
memjob_workload "$w" "${specs[@]}"
cg=$(cg_make rec 1G)
history="$E2E_TMP/h.db"
(cd "$w" && cg_run "$cg" "$MEMGATE" run --quiet --history "$history" -- make -s -j4) >&2 || fail "recording failed"
check_memjob_outputs "$w" || fail "bad outputs"

(cd "$w" && "$MEMGATE" plan --history "$history" --json --cores 2 --capacity 1G) >"$E2E_TMP/here.json"
assert_eq 8 "$(json_get "$E2E_TMP/here.json" 'j["job_count"]')" "jobs of the last build here"
assert_eq True "$(json_get "$E2E_TMP/here.json" '"make -s -j4" in j["source"]')" "the recorded command"
# The largest job peaks near 155 MB: the simulated -j1 peak must be close.
assert_eq True "$(json_get "$E2E_TMP/here.json" \
  '120e6 < [r for r in j["rows"] if r["jobs"] == 1][0]["peak_bytes"] < 250e6')" "-j1 peak from the recording"
assert_eq True "$(json_get "$E2E_TMP/here.json" 'j["recommended_jobs"] >= 1')" "a recommendation"

"$MEMGATE" plan --history "$history" --build last --json --cores 2 --capacity 1G >"$E2E_TMP/last.json"
assert_eq 8 "$(json_get "$E2E_TMP/last.json" 'j["job_count"]')" "--build last"
id=$(json_get "$E2E_TMP/last.json" 'j["source"].split()[1].lstrip("#")')
"$MEMGATE" plan --history "$history" --build "$id" --recommend --cores 2 --capacity 1G >"$E2E_TMP/rec.txt"
assert_eq "$(json_get "$E2E_TMP/last.json" 'j["recommended_jobs"]')" "$(cat "$E2E_TMP/rec.txt")" "--build ID"
(cd "$E2E_TMP" && "$MEMGATE" plan --history "$history" --json --cores 2 --capacity 1G 2>"$E2E_TMP/else.err") \
  >"$E2E_TMP/else.json"
grep -q "planning from build #$id, the last anywhere" "$E2E_TMP/else.err" || fail "note when no build was recorded here"
echo "PASS"
