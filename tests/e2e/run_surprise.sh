#!/usr/bin/env bash
# Issue 4, "the surprise test": a third of the jobs use 3x the memory the
# predictor expects on a first run (the default for `cc` is 512 MiB; they
# use 1.5 GiB), in a 3 GiB test cgroup, under
# `memgate run --memory 2560M -- make -j24`. The build succeeds with every
# output correct, memgate had to freeze or requeue, and the test cgroup
# records no OOM kill. SURPRISE_RUNS repeats it (bench/stress uses 20).
# `--jobs 8` stands in for an 8-core machine (this one has 2), so several
# jobs run at once and memory is what runs short.
#
# SURPRISE_DEGRADED=1 (tests/e2e/run_degraded.sh) runs the same workload in
# degraded mode: --no-confine and MEMGATE_NO_FREEZER=1, so memgate can only
# pause jobs with SIGSTOP and kill them with SIGKILL before requeueing. The
# build must still succeed, and both the summary and `doctor` must say what
# was degraded. Unconfined, a kernel OOM kill would land in the test cgroup;
# memgate reruns such a job too, so only that one check is left out.
source "$(dirname "$0")/lib.sh"
require_cgroups
export PATH="$(fake_compilers):$PATH"
runs=${SURPRISE_RUNS:-1}
degraded=${SURPRISE_DEGRADED:-}
mode_args=()
if [ -n "$degraded" ]; then
  export MEMGATE_NO_FREEZER=1
  mode_args=(--no-confine)
  "$MEMGATE" doctor >"$E2E_TMP/doctor.txt"
  grep -q "freezer .*off: MEMGATE_NO_FREEZER is set" "$E2E_TMP/doctor.txt" || fail "doctor does not say the freezer is off"
fi

specs=()
for i in $(seq 0 23); do
  if [ $((i % 3)) -eq 0 ]; then
    # Looks like its neighbours for a while, then triples, and holds it
    # for 2.5 s: on a loaded machine touching 1.5 GiB is slow and stretches
    # each profile, and a short peak let the first wave's two surprises
    # miss each other, so memgate never had to act (a CI failure).
    specs+=("--base 300M --peak 1536M --ramp 0.6 --peak-at 0.9 --hold 2.5 --after 100M --duration 3.8")
  else
    specs+=("--peak 400M --ramp 0.3 --hold 0.6 --after 100M --duration 1.2")
  fi
done
w="$E2E_TMP/work"
memjob_workload "$w" "${specs[@]}"
# Other tests run beside this one in the same cgroup, and their memgate
# cgroups come and go: only a cgroup that was not there before counts.
memgate_cgroups() { find "$(cg_base)" -maxdepth 1 -name 'memgate-[0-9]*' | sort; }
self_before=$(memgate_cgroups)

for run in $(seq 1 "$runs"); do
  make -s -C "$w" clean
  cg=$(cg_make "surprise$run" 3G)
  hist="$E2E_TMP/h$run.db"  # a fresh history each time: always a first run
  set +e
  cg_run "$cg" "$MEMGATE" run "${mode_args[@]}" --jobs 8 --memory 2560M --history "$hist" -- make -s -C "$w" -j24 >"$E2E_TMP/run.log" 2>&1
  rc=$?
  set -e
  if [ "$rc" -ne 0 ]; then cat "$E2E_TMP/run.log" >&2; fail "run $run: exit status $rc"; fi
  check_memjob_outputs "$w" || fail "run $run: outputs missing or wrong"
  [ -n "$degraded" ] || assert_eq 0 "$(cg_oom_kills "$cg")" "run $run: OOM kills in the test cgroup"
  acted=$(python3 - "$hist" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(counters,) = db.execute("select counters from builds order by id desc limit 1").fetchone()
c = json.loads(counters)
print(c.get("frozen", 0) + c.get("requeued", 0) + c.get("oom_killed", 0))
PY
)
  [ "$acted" -gt 0 ] || { cat "$E2E_TMP/run.log" >&2; fail "run $run: memgate never had to act"; }
  # Issue 13, the cost of optimism: frozen job-seconds and the CPU-seconds
  # of requeued attempts are recorded, non-zero where memgate acted, and
  # plausible: no more job-seconds frozen than the 24 jobs over the whole
  # build, no more CPU thrown away than the machine's cores had.
  "$MEMGATE" history --json --build last --history "$hist" >"$E2E_TMP/h.json"
  cost=$(python3 - "$E2E_TMP/h.json" "$(nproc)" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))["build"]
c, cores = b["counters"], int(sys.argv[2])
wall_ms = b["wall_s"] * 1000
for k in ("frozen_ms", "requeued_cpu_ms", "retried", "oom_killed"):
    if k not in c:
        sys.exit(f"counter {k} not recorded")
if c["frozen"] > 0 and not 0 < c["frozen_ms"] <= 24 * wall_ms:
    sys.exit(f"{c['frozen']} freezes but {c['frozen_ms']} ms frozen in a {wall_ms:.0f} ms build")
if c["frozen"] == 0 and c["frozen_ms"] != 0:
    sys.exit(f"no freeze but {c['frozen_ms']} ms frozen")
memory_deaths = c["requeued"] + c["oom_killed"]
if memory_deaths > 0 and not 0 < c["requeued_cpu_ms"] <= cores * wall_ms:
    sys.exit(f"{memory_deaths} attempts ended by memory but {c['requeued_cpu_ms']} ms of CPU requeued "
             f"in a {wall_ms:.0f} ms build on {cores} cores")
if memory_deaths == 0 and c["requeued_cpu_ms"] != 0:
    sys.exit(f"nothing requeued but {c['requeued_cpu_ms']} ms of CPU requeued")
if c["retried"] < memory_deaths - c.get("failed", 0):
    sys.exit(f"{memory_deaths} memory deaths, {c['retried']} retries")
print(f"{c['frozen_ms'] / 1000:.1f} job-s frozen, {c['requeued_cpu_ms'] / 1000:.2f} CPU-s requeued, "
      f"{c['retried']} retries")
PY
) || { cat "$E2E_TMP/h.json" >&2; fail "run $run: the cost of optimism: $cost"; }
  "$MEMGATE" history --build last --history "$hist" 2>/dev/null | grep -Eq '^  cost      [0-9.]+ job-s frozen, [0-9.]+ CPU-s requeued, [0-9]+ retries, [0-9]+ OOM kills$' ||
    fail "run $run: history --build does not show the cost line"
  note "run $run: cost of optimism: $cost"
  grep -Eq 'froze|frozen|freez|requeue' "$E2E_TMP/run.log" || fail "run $run: the summary does not show the freezes or requeues"
  if [ -n "$degraded" ]; then
    grep -q '^memgate: degraded: build not confined (--no-confine); jobs paused with SIGSTOP (MEMGATE_NO_FREEZER is set)$' \
      "$E2E_TMP/run.log" || { cat "$E2E_TMP/run.log" >&2; fail "run $run: the summary does not say what was degraded"; }
  elif grep -q '^memgate: degraded' "$E2E_TMP/run.log"; then
    fail "run $run: a normal run calls itself degraded"
  fi
  left=$(cat "$cg/cgroup.procs")
  [ -z "$left" ] || fail "run $run: processes left in the test cgroup: $left"
  [ -z "$(find "$cg" -mindepth 1 -type d)" ] || fail "run $run: cgroups left behind"
  cg_destroy "$cg"
  note "run $run: ok ($acted pressure actions: $(grep -Eo "[0-9]+ freezes?, [0-9]+ requeues?.*" "$E2E_TMP/run.log" | tail -n1))"
done
assert_eq "" "$(comm -13 <(echo "$self_before") <(memgate_cgroups) | grep . || true)" "memgate cgroups left in our own cgroup"
echo "PASS"
