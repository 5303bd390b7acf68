#!/usr/bin/env bash
# The budget test (tests/e2e/run_budget.sh) at a sixth of its size: 20
# memjob compiles of 40-180 MB. Plain `make -j16` in a 600 MiB cgroup runs
# out of memory; under `memgate run --memory 512M` the same build succeeds,
# confined (no degraded line), with every output right and no OOM kill
# outside memgate's cgroup.
source "$(dirname "$0")/vmlib.sh"
export PATH="$(fake_compilers):$PATH"
peaks=(40M 180M 60M 140M 80M 160M 50M 110M 170M 70M)
specs=()
for i in $(seq 0 19); do specs+=("--peak ${peaks[$((i % 10))]} --ramp 0.3 --hold 0.4 --duration 1.0"); done
w="$E2E_TMP/work"
memjob_workload "$w" "${specs[@]}"

plain=$(cg_make plain 600M)
set +e
cg_run "$plain" make -s -k -C "$w" -j16 >"$E2E_TMP/plain.log" 2>&1
plain_rc=$?
set -e
plain_ooms=$(cg_oom_kills "$plain")
note "plain make -j16 in 600 MiB: exit $plain_rc, $plain_ooms OOM kills"
[ "$plain_rc" -ne 0 ] || [ "$plain_ooms" -gt 0 ] || fail "plain make -j16 should have run out of memory"

make -s -C "$w" clean
gated=$(cg_make gated 600M)
set +e
cg_run "$gated" "$MEMGATE" run --jobs 16 --memory 512M --reserve 64M --history "$E2E_TMP/h.db" -- make -s -C "$w" -j16 \
  >"$E2E_TMP/gated.log" 2>&1
rc=$?
set -e
cat "$E2E_TMP/gated.log" >&2
assert_eq 0 "$rc" "memgate run exit status"
! grep -q '^memgate: degraded' "$E2E_TMP/gated.log" || fail "the run was degraded on cgroup v2"
check_clean_run "$gated" "$w"
last_build "$E2E_TMP/h.db" "$E2E_TMP/h.json"
note "gated: $(json_num "$E2E_TMP/h.json" job_count) jobs, peak $(json_num "$E2E_TMP/h.json" peak_bytes) B," \
  "$(json_num "$E2E_TMP/h.json" oom_killed) OOM-killed in memgate's cgroup and rerun"
echo PASS
