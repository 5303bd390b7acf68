#!/usr/bin/env bash
# Issue 12, done-means 3: pressure is the build's own, not the neighbours'.
# A neighbour outside the build, in its own 64 MiB cgroup, thrashes: four
# processes each read a 48 MiB file of their own at random through mmap,
# so their page cache is reclaimed and refaulted without end and the
# machine-wide PSI (/proc/pressure/memory) climbs. The build beside it, in
# its own test cgroup with plenty of room, must run unhindered: nothing
# frozen or requeued, and a summary that does not blame memory.
#
# On cgroup v1 (this project's machines) there is no per-cgroup pressure
# file, so machine-wide PSI is the only PSI memgate has; it counts only
# when the build is itself near its limit (Governor: psi_machine_full_frac).
# The v2 counterpart, with the build's own memory.pressure, is the VM's
# `neighbour` case (tests/vm/cases/neighbour.sh).
#
# "full" PSI needs every runnable task stalled at once, which other work on
# a shared machine prevents: if the neighbour never pushed machine-wide
# "full" to the 10% freeze threshold during the build, the run proves
# nothing and says SKIP (exit 77) rather than PASS.
source "$(dirname "$0")/lib.sh"
require_cgroups
export PATH="$(fake_compilers):$PATH"

cat >"$E2E_TMP/thrash.py" <<'PY'
import mmap, os, random, sys
path, size, ready = sys.argv[1], int(sys.argv[2]) << 20, sys.argv[3]
with open(path, "wb") as f:  # written here, so charged to this cgroup
    block = os.urandom(1 << 20)
    for _ in range(size >> 20):
        f.write(block)
    f.flush()
    os.fsync(f.fileno())
m = mmap.mmap(os.open(path, os.O_RDONLY), size, prot=mmap.PROT_READ)
open(ready, "w").close()
pages, s = size // 4096, 0
while True:
    s += m[random.randrange(pages) * 4096]
PY

# The build: 12 jobs of 40 MB, mostly holding their memory (asleep, so they
# leave the CPUs to the neighbour), in a test cgroup of 1 GiB with a 512 MiB
# budget: room for all of them at once. A first, quiet run teaches memgate
# their size (the cold default for cc, 512 MiB, would run them one by one,
# and the summary would rightly call that memory-bound).
w="$E2E_TMP/work"
specs=()
for i in $(seq 0 11); do specs+=("--peak 40M --ramp 0.3 --hold 1.5 --duration 2.5"); done
memjob_workload "$w" "${specs[@]}"
cg=$(cg_make build 1G)
cg_run "$cg" "$MEMGATE" run --quiet --jobs 4 --memory 512M --history "$E2E_TMP/h.db" -- make -s -C "$w" -j4 ||
  fail "the teaching run"
make -s -C "$w" clean

nb=$(cg_make neighbour 64M)
hogs=()
for i in 1 2 3 4; do
  cg_run "$nb" python3 "$E2E_TMP/thrash.py" "$E2E_TMP/f$i.bin" 48 "$E2E_TMP/ready$i" &
  hogs+=($!)
done
stop_hogs() {
  kill "${hogs[@]}" 2>/dev/null || true
  wait "${hogs[@]}" 2>/dev/null || true
}
trap 'stop_hogs; e2e_cleanup' EXIT

psi() { sed -n "s/^$1 avg10=\([0-9.]*\).*/\1/p" /proc/pressure/memory; }
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
# Until all four have their file, then until the stall shows (avg10 moves
# every 2 s), at most 40 s.
for _ in $(seq 400); do
  n=0
  for i in 1 2 3 4; do [ -e "$E2E_TMP/ready$i" ] && n=$((n + 1)); done
  [ "$n" -eq 4 ] && at_least "$(psi some)" 10 && break
  sleep 0.1
done
note "machine-wide PSI before the build: some $(psi some)%, full $(psi full)%"

(while :; do echo "$(psi some) $(psi full)"; sleep 0.5; done) >"$E2E_TMP/psi.log" &
sampler=$!
set +e
cg_run "$cg" "$MEMGATE" run --jobs 4 --memory 512M --history "$E2E_TMP/h.db" -- make -s -C "$w" -j4 \
  >"$E2E_TMP/run.log" 2>&1
rc=$?
set -e
kill "$sampler"
wait "$sampler" 2>/dev/null || true
stop_hogs
cat "$E2E_TMP/run.log" >&2
some=$(awk '{ if ($1 > m) m = $1 } END { print m + 0 }' "$E2E_TMP/psi.log")
full=$(awk '{ if ($2 > m) m = $2 } END { print m + 0 }' "$E2E_TMP/psi.log")
note "machine-wide PSI during the build: some up to $some%, full up to $full%"

assert_eq 0 "$rc" "exit status"
check_memjob_outputs "$w" || fail "outputs"
assert_eq 0 "$(cg_oom_kills "$cg")" "OOM kills in the build's test cgroup"
(cd "$w" && history_json "$E2E_TMP/h.db" "$E2E_TMP/h.json")
assert_eq 12 "$(json_get "$E2E_TMP/h.json" 'len(j["jobs"])')" "jobs"
assert_eq 0 "$(json_get "$E2E_TMP/h.json" 'j["build"]["counters"].get("frozen", 0)')" "jobs frozen because of the neighbour"
assert_eq 0 "$(json_get "$E2E_TMP/h.json" 'j["build"]["counters"].get("requeued", 0)')" "jobs requeued because of the neighbour"
! grep -q 'memory stalls at' "$E2E_TMP/run.log" || fail "memgate blamed the neighbour's stalls on the build"
! grep -q 'memory-bound' "$E2E_TMP/run.log" || fail "the summary says memory limited the build"
if ! at_least "$full" 10; then
  echo "SKIP: the neighbour pushed machine-wide PSI full only to $full% (some $some%), under the 10% freeze threshold: other work on this machine kept the CPUs busy, so this run proves nothing"
  exit 77
fi
echo "PASS"
