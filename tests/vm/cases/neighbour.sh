#!/usr/bin/env bash
# A neighbour under heavy memory pressure does not freeze the build: a hog
# in a cgroup of its own, throttled at its memory.high, stalls the machine
# (machine-wide PSI "full" well above memgate's 10% freeze threshold) while
# the build has plenty of room. memgate reads the build cgroup's own
# memory.pressure, so it freezes nothing and reports no memory stalls.
#
# The suite's only test of neighbours' pressure with real processes: on a
# shared host, other work keeps the CPUs busy, so machine-wide PSI "full"
# (every runnable task stalled at once) never reaches the threshold and a
# host test could prove nothing. In the guest nothing else runs, so the
# hog's pressure is certain, and a run in which it fell short fails. (On
# cgroup v1 memgate has only machine-wide PSI and counts it only when the
# build is near its own limit: GovernorPressure.* tests that rule.)
source "$(dirname "$0")/vmlib.sh"
export PATH="$(fake_compilers):$PATH"
w="$E2E_TMP/work"
specs=()
for i in $(seq 0 11); do specs+=("--peak 40M --ramp 0.3 --hold 1.0 --duration 2.0"); done
memjob_workload "$w" "${specs[@]}"

nb=$(cg_make neighbour 400M)
echo 32M >"$nb/memory.high"
# The hog allocates far past memory.high; every page over it is throttled.
for i in 1 2; do cg_run "$nb" "$MEMJOB" --peak 300M --ramp 60 --forever >/dev/null 2>&1 & done
psi_full() { sed -n 's/^full avg10=\([0-9.]*\).*/\1/p' /proc/pressure/memory; }
stalled() { awk -v p="$(psi_full)" 'BEGIN { exit !(p >= 20) }'; }
wait_for 30 stalled || true
note "machine-wide PSI full avg10 before the build: $(psi_full)%"

watch_tree "$E2E_TMP/psi.log" psi_full
cg=$(cg_make build 600M)
set +e
cg_run "$cg" "$MEMGATE" run --jobs 4 --memory 512M --reserve 64M --history "$E2E_TMP/h.db" -- make -s -C "$w" -j4 \
  >"$E2E_TMP/run.log" 2>&1
rc=$?
set -e
stop_watch
cat "$E2E_TMP/run.log" >&2
max=$(sort -n "$E2E_TMP/psi.log" | tail -n1)
note "machine-wide PSI full avg10 during the build: up to $max%"
assert_eq 0 "$rc" "exit status"
check_clean_run "$cg" "$w"
last_build "$E2E_TMP/h.db" "$E2E_TMP/h.json"
assert_eq 0 "$(json_num "$E2E_TMP/h.json" frozen)" "jobs frozen because of the neighbour"
! grep -q 'memory stalls at' "$E2E_TMP/run.log" || fail "memgate blamed the neighbour's stalls on the build"
awk -v p="$max" 'BEGIN { exit !(p >= 10) }' || fail "the neighbour never pushed machine-wide PSI full to 10% (max $max%): the test proves nothing"
echo PASS
