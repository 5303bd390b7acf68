# bench/lib/common.sh: cgroups, contender runs and result rows for bench/run
# (sourced, not run).
#
# Every contender runs in a fresh cgroup v1 below the bench's own cgroup
# (itself below the memory cgroup this process is in), with a hard
# memory.limit_in_bytes that stands for the machine's RAM. A fresh cgroup per
# run means memory.max_usage_in_bytes is that run's peak and oom_kill counts
# only that run's kills. Everything created here is removed on exit, and
# only processes started here are ever killed: what is left inside our own
# cgroups, and memgate's freezer cgroup named after the memgate we started.

bench_die() { echo "bench: error: $*" >&2; exit 1; }
bench_log() { echo "bench: $*" >&2; }

BENCH_CG=""            # the bench's cgroup: every contender's cgroup is below it
BENCH_MEMGATE_PIDS=""  # memgates we started (their freezer cgroups to clean up)

cg_self_dir() {  # $1: controller (memory, freezer)
  local line
  line=$(grep -E "^[0-9]+:([^:]*,)?$1(,[^:]*)?:" /proc/self/cgroup || true)
  [ -n "$line" ] || return 1
  echo "/sys/fs/cgroup/$1${line##*:}"
}

# bench_cg_init LIMIT: the bench's cgroup, a safety net above every contender.
bench_cg_init() {
  local self
  self=$(cg_self_dir memory) && [ -w "$self" ] ||
    bench_die "needs a writable cgroup v1 memory controller (/sys/fs/cgroup/memory; run as root)"
  BENCH_CG="$self/memgate-bench-$$"
  mkdir "$BENCH_CG"
  echo "$1" >"$BENCH_CG/memory.limit_in_bytes"
}

# bench_cg_new NAME LIMIT -> prints the new cgroup's directory.
bench_cg_new() {
  local dir="$BENCH_CG/$1"
  mkdir "$dir"
  echo "$2" >"$dir/memory.limit_in_bytes"
  echo "$dir"
}

# Thaws, then kills, whatever is left in a cgroup tree, and removes it
# (deepest first). Works for memory and freezer directories alike.
cg_destroy() {
  local dir=$1 sub pid tries pids
  [ -d "$dir" ] || return 0
  [ -f "$dir/freezer.state" ] && echo THAWED >"$dir/freezer.state" 2>/dev/null
  for sub in "$dir"/*/; do [ -d "$sub" ] && cg_destroy "${sub%/}"; done
  for tries in $(seq 100); do
    pids=$(cat "$dir/cgroup.procs" 2>/dev/null || true)
    [ -z "$pids" ] && break
    for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
    sleep 0.1
  done
  rmdir "$dir" 2>/dev/null || bench_log "could not remove cgroup $dir"
}

# Removes the freezer cgroups of the memgates we started, if any survived.
memgate_freezer_cleanup() {
  local fz pid
  fz=$(cg_self_dir freezer 2>/dev/null) || return 0
  for pid in $BENCH_MEMGATE_PIDS; do cg_destroy "$fz/memgate-$pid"; done
  BENCH_MEMGATE_PIDS=""
}

bench_cleanup() {
  memgate_freezer_cleanup
  [ -n "$BENCH_CG" ] && cg_destroy "$BENCH_CG"
  [ -n "${BENCH_TMP:-}" ] && rm -rf "$BENCH_TMP"
}

cg_oom_kills() { awk '$1=="oom_kill"{print $2}' "$1/memory.oom_control"; }
cg_peak() { cat "$1/memory.max_usage_in_bytes"; }

# run_in_cgroup DIR TIMEOUT_S LOG CMD... : runs CMD in the foreground inside
# cgroup DIR, its own process group, output to LOG; sets RUN_WALL (seconds),
# RUN_RC, RUN_PID (the pid CMD ran as). A run over TIMEOUT_S is killed.
run_in_cgroup() {
  local dir=$1 limit=$2 log=$3 t0 t1 pidfile="$BENCH_TMP/run.pid"
  shift 3
  rm -f "$pidfile"
  t0=$EPOCHREALTIME
  set +e
  timeout -k 5 "$limit" setsid bash -c 'echo $$ >"$1/cgroup.procs" && echo $$ >"$2" && shift 2 && exec "$@"' \
    run "$dir" "$pidfile" "$@" >"$log" 2>&1 </dev/null
  RUN_RC=$?
  set -e
  t1=$EPOCHREALTIME
  RUN_WALL=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
  RUN_PID=$(cat "$pidfile" 2>/dev/null || echo 0)
}

# One CSV row per run. Columns (bench/README.md explains them):
BENCH_CSV_HEADER="workload,contender,kind,jobs_n,wall_s,status,exit,oom_kills,peak_bytes,outputs_ok,outputs_total,frozen,requeued,retried,load1,note"
csv_row() {  # fields in header order; the note may contain commas
  local IFS=,
  local fields=("$@")
  fields[15]="\"${fields[15]//\"/\'}\""
  echo "${fields[*]}" >>"$BENCH_CSV"
}

load1() { cut -d' ' -f1 /proc/loadavg; }

# read_memgate_counters HISTORY: prints "oom_killed requeued frozen" of the
# last build in that history (0 0 0 when it cannot be read).
read_memgate_counters() {
  "$MEMGATE" history --json --build last --history "$1" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
try:
    c = json.load(sys.stdin)["build"]["counters"]
except Exception:
    c = {}
print(c.get("oom_killed", 0), c.get("requeued", 0), c.get("frozen", 0))' 2>/dev/null || echo "0 0 0"
}
