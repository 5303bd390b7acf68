# bench/lib/common.sh: cgroups, contender runs and result rows for bench/run
# (sourced, not run).
#
# Every contender runs in a fresh cgroup below the bench's own cgroup
# (itself below the memory cgroup this process is in), with a hard memory
# limit that stands for the machine's RAM. The cgroups come from
# tests/lib/cgroup.sh, shared with the tests, on cgroup v1 or v2. A fresh
# cgroup per run means its peak is that run's peak and its OOM kill count
# only that run's kills. Everything created here is removed on exit, and
# only processes started here are ever killed: what is left inside our own
# cgroups, and (v1) memgate's freezer cgroup named after the memgate we
# started.

bench_die() { echo "bench: error: $*" >&2; exit 1; }
bench_log() { echo "bench: $*" >&2; }

source "$(dirname "${BASH_SOURCE[0]}")/../../tests/lib/cgroup.sh"

BENCH_CG=""            # the bench's cgroup: every contender's cgroup is below it
BENCH_MEMGATE_PIDS=""  # memgates we started (their freezer cgroups to clean up)

# bench_cg_init LIMIT: the bench's cgroup, a safety net above every
# contender. Needs BENCH_TMP.
bench_cg_init() {
  cglib_init "$BENCH_TMP"
  have_cgroups || bench_die "needs a writable memory cgroup (v1 or v2; run as root, or in a delegated cgroup)"
  cg_prepare || bench_die "cannot enable the memory controller below $(cg_base) (cgroup v2)"
  BENCH_CG=$(cg_new "memgate-bench-$$" "$1")
}

# bench_cg_new NAME LIMIT -> prints the new cgroup's directory.
bench_cg_new() { cg_child "$BENCH_CG" "$1" "$2"; }

# Removes the v1 freezer cgroups of the memgates we started, if any survived.
memgate_freezer_cleanup() {
  local pid
  for pid in $BENCH_MEMGATE_PIDS; do cg_memgate_leftovers "$pid"; done
  BENCH_MEMGATE_PIDS=""
}

bench_cleanup() {
  memgate_freezer_cleanup
  cglib_cleanup
  [ -n "${BENCH_TMP:-}" ] && rm -rf "$BENCH_TMP"
}

# run_in_cgroup DIR TIMEOUT_S LOG CMD... : runs CMD in the foreground inside
# cgroup DIR, its own process group, output to LOG; sets RUN_WALL (seconds),
# RUN_RC, RUN_PID (the pid CMD ran as). A run over TIMEOUT_S is killed.
run_in_cgroup() {
  local dir=$1 limit=$2 log=$3 t0 t1 pidfile="$BENCH_TMP/run.pid" sampler
  shift 3
  rm -f "$pidfile"
  sampler=$(cg_sample_peak "$dir")  # only where the kernel keeps no peak
  t0=$EPOCHREALTIME
  set +e
  timeout -k 5 "$limit" setsid bash -c 'echo $$ >"$1/cgroup.procs" && echo $$ >"$2" && shift 2 && exec "$@"' \
    run "$dir" "$pidfile" "$@" >"$log" 2>&1 </dev/null
  RUN_RC=$?
  set -e
  t1=$EPOCHREALTIME
  [ -z "$sampler" ] || kill "$sampler" 2>/dev/null || true
  RUN_WALL=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
  RUN_PID=$(cat "$pidfile" 2>/dev/null || echo 0)
}

# One CSV row per run. Columns (bench/README.md explains them):
# frozen_s and requeued_cpu_s (memgate only): the cost of optimism (issue 13),
# job-seconds spent frozen and CPU-seconds of attempts ended by memory.
BENCH_CSV_HEADER="workload,contender,kind,jobs_n,wall_s,status,exit,oom_kills,peak_bytes,outputs_ok,outputs_total,frozen,requeued,retried,load1,note,frozen_s,requeued_cpu_s"
csv_row() {  # fields in header order; the note may contain commas
  local IFS=,
  local fields=("$@")
  fields[15]="\"${fields[15]//\"/\'}\""
  echo "${fields[*]}" >>"$BENCH_CSV"
}

load1() { cut -d' ' -f1 /proc/loadavg; }

# read_memgate_counters HISTORY: prints "oom_killed requeued frozen retried
# frozen_s requeued_cpu_s" of the last build in that history (zeros when it
# cannot be read; "-" for a cost an older memgate did not record).
read_memgate_counters() {
  "$MEMGATE" history --json --build last --history "$1" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
try:
    c = json.load(sys.stdin)["build"]["counters"]
except Exception:
    c = {}
def secs(k):
    return f"{c[k] / 1000:.1f}" if k in c else "-"
print(c.get("oom_killed", 0), c.get("requeued", 0), c.get("frozen", 0), c.get("retried", 0),
      secs("frozen_ms"), secs("requeued_cpu_ms"))' 2>/dev/null || echo "0 0 0 0 - -"
}
