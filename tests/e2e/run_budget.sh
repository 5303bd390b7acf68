#!/usr/bin/env bash
# Issue 3, "the budget test": 40 memjob compiles with peaks of 200 MB to
# 1.2 GB. Plain `make -j16` in a 3 GiB cgroup gets jobs OOM-killed; the same
# build under `memgate run --memory 2560M` succeeds with every output
# correct and no OOM kill in the test cgroup.
#
# This machine has 2 cores; `--jobs 16` stands in for a 16-core machine so
# that memory, not CPU slots, is what memgate must get right here.
source "$(dirname "$0")/lib.sh"
require_cgroups
export PATH="$(fake_compilers):$PATH"

peaks=(200M 1200M 350M 900M 500M 1000M 250M 700M 1100M 400M)
specs=()
for i in $(seq 0 39); do
  specs+=("--peak ${peaks[$((i % 10))]} --ramp 0.3 --hold 0.4 --duration 1.0")
done
w="$E2E_TMP/work"
memjob_workload "$w" "${specs[@]}"

note "plain make -j16 in a 3 GiB cgroup"
plain=$(cg_make plain 3G)
set +e
cg_run "$plain" make -s -k -C "$w" -j16 >"$E2E_TMP/plain.log" 2>&1
plain_rc=$?
set -e
plain_ooms=$(cg_oom_kills "$plain")
note "plain: exit $plain_rc, $plain_ooms OOM kills"
[ "$plain_rc" -ne 0 ] || [ "$plain_ooms" -gt 0 ] || fail "plain make -j16 should have run out of memory"

make -s -C "$w" clean
note "memgate run --memory 2560M -- make -j16 in a fresh 3 GiB cgroup"
gated=$(cg_make gated 3G)
set +e
cg_run "$gated" "$MEMGATE" run --jobs 16 --memory 2560M --history "$E2E_TMP/h.db" -- make -s -C "$w" -j16 \
  >"$E2E_TMP/gated.log" 2>&1
rc=$?
set -e
cat "$E2E_TMP/gated.log" >&2
assert_eq 0 "$rc" "memgate run exit status"
check_memjob_outputs "$w" || fail "outputs missing or wrong"
assert_eq 0 "$(cg_oom_kills "$gated")" "OOM kills in the test cgroup"
# Nothing of memgate's is left in the test cgroup.
assert_eq "" "$(find "$gated" -mindepth 1 -type d)" "cgroups left behind"
echo "PASS"
