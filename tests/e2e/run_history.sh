#!/usr/bin/env bash
# Issue 5 with real builds:
#  1. the mixed workload twice: on the second run the median prediction
#     error of the peak is <= 15% and every prediction is within 2x;
#  2. two `memgate run` at once share one history file: both succeed and
#     no rows are lost;
#  3. a corrupt database: the build succeeds, a warning is printed, the
#     database is recreated.
source "$(dirname "$0")/lib.sh"
require_cgroups
export PATH="$(fake_compilers):$PATH"
cg=$(cg_make history 3G)
peaks=(150M 600M 300M 900M 200M 450M 750M 250M)
specs=()
for i in $(seq 0 15); do specs+=("--peak ${peaks[$((i % 8))]} --ramp 0.2 --hold 0.3 --after 50M --duration 0.8"); done
w="$E2E_TMP/mixed"
memjob_workload "$w" "${specs[@]}"
h="$E2E_TMP/h.db"
run() { cg_run "$cg" "$MEMGATE" run --quiet --jobs 4 --history "$@"; }

note "1. two runs of the mixed workload"
for n in 1 2; do
  make -s -C "$w" clean
  run "$h" -- make -s -C "$w" -j8
  check_memjob_outputs "$w" || fail "run $n outputs"
done
"$MEMGATE" history --json --build last --history "$h" >"$E2E_TMP/second.json"
python3 - "$E2E_TMP/second.json" <<'PY' || fail "second-run predictions"
import json, statistics, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
assert len(jobs) == 16, len(jobs)
errs = [abs(j["predicted_peak_bytes"] - j["peak_bytes"]) / j["peak_bytes"] for j in jobs]
ratios = [j["predicted_peak_bytes"] / j["peak_bytes"] for j in jobs]
print(f"median error {statistics.median(errs):.1%}, ratio range {min(ratios):.2f}..{max(ratios):.2f}", file=sys.stderr)
assert statistics.median(errs) <= 0.15
assert all(0.5 <= r <= 2.0 for r in ratios)
assert all(j["predicted_source"] == "history" for j in jobs)
PY

note "2. two builds at once, one history file"
a="$E2E_TMP/a" b="$E2E_TMP/b"
memjob_workload "$a" "${specs[@]:0:10}"
memjob_workload "$b" "${specs[@]:0:12}"
before=$("$MEMGATE" history --json --history "$h" --limit 1000 >"$E2E_TMP/l0.json" && json_get "$E2E_TMP/l0.json" 'len(j["builds"])')
run "$h" -- make -s -C "$a" -j8 &
pa=$!
run "$h" -- make -s -C "$b" -j8 &
pb=$!
wait "$pa" || fail "first concurrent build"
wait "$pb" || fail "second concurrent build"
"$MEMGATE" history --json --history "$h" --limit 1000 >"$E2E_TMP/l1.json"
assert_eq $((before + 2)) "$(json_get "$E2E_TMP/l1.json" 'len(j["builds"])')" "builds in history"
assert_eq "10 12" "$(json_get "$E2E_TMP/l1.json" '" ".join(str(b["job_count"]) for b in sorted(j["builds"][:2], key=lambda b: b["job_count"]))')" "jobs of the two builds"

note "3. a corrupt database"
c="$E2E_TMP/c.db"
head -c 65536 /dev/urandom >"$c"
make -s -C "$a" clean
set +e
run "$c" -- make -s -C "$a" -j8 2>"$E2E_TMP/corrupt.err"
rc=$?
set -e
cat "$E2E_TMP/corrupt.err" >&2
assert_eq 0 "$rc" "build with a corrupt history"
grep -q "warning: .*corrupt" "$E2E_TMP/corrupt.err" || fail "no warning about the corrupt database"
ls "$c".corrupt-* >/dev/null || fail "the corrupt file was not moved aside"
"$MEMGATE" history --json --history "$c" >"$E2E_TMP/c.json"
assert_eq 1 "$(json_get "$E2E_TMP/c.json" 'len(j["builds"])')" "builds in the recreated database"
echo "PASS"
