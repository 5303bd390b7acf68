# Helpers for the VM's cases (sourced): the e2e helpers (tests/e2e/lib.sh,
# with the cgroup library), sizes scaled to a guest of about 1 GiB, and JSON
# read with grep instead of python, which the VM does not carry.
export MEMGATE=/memgate/bin/memgate MEMJOB=/memgate/bin/memjob
source /memgate/tests/e2e/lib.sh
require_cgroups
[ "$(cg_version)" = v2 ] || fail "not cgroup v2 in the VM: $(cg_version)"

# json_num FILE KEY: the first number under "KEY" in pretty-printed JSON
# (memgate's --json output), 0 when the key is missing.
json_num() {
  local v
  v=$(grep -Eo "\"$2\": *-?[0-9.]+" "$1" | head -n1 | sed 's/.*: *//')
  echo "${v:-0}"
}
# json_all FILE KEY: every number under "KEY", space-separated.
json_all() { grep -Eo "\"$2\": *-?[0-9.]+" "$1" | sed 's/.*: *//' | tr '\n' ' ' | sed 's/ $//'; }
# json_str FILE KEY: the first string under "KEY".
json_str() { grep -Eo "\"$2\": *\"[^\"]*\"" "$1" | head -n1 | sed 's/.*: *"//; s/"$//'; }

# counters_of HISTORY: the last build's JSON, for json_num.
last_build() { "$MEMGATE" history --json --build last --history "$1" >"$2"; }

# now_ms: wall clock in milliseconds.
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# No process of the test cgroup DIR (or below) is stopped, and no cgroup
# there is frozen. Prints what is, if anything.
stopped_or_frozen() {
  local dir=$1 pid f
  for pid in $(find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null); do
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = T ] && echo "stopped:$pid"
  done
  for f in $(find "$dir" -name cgroup.events 2>/dev/null); do
    grep -qx 'frozen 1' "$f" && echo "frozen:${f%/cgroup.events}"
  done
  return 0
}

# The usual end checks of a memgate run in test cgroup DIR: every output
# written, no OOM kill of a process outside memgate's own cgroup, nothing
# of memgate's left behind.
check_clean_run() {
  local dir=$1 w=$2
  check_memjob_outputs "$w" || fail "outputs missing or wrong"
  assert_eq 0 "$(cg_oom_kills "$dir")" "OOM kills in the test cgroup outside memgate's cgroup"
  assert_eq "" "$(find "$dir" -mindepth 1 -type d)" "cgroups left behind in $dir"
  assert_eq "" "$(cg_procs "$dir")" "processes left in $dir"
}

# wait_for SECONDS CMD...: polls CMD every 0.1 s until it succeeds (0) or
# SECONDS of wall time pass (1). Time-based: under TCG every fork is slow.
wait_for() {
  local until=$(($(now_ms) + $1 * 1000))
  shift
  until "$@"; do
    [ "$(now_ms)" -lt "$until" ] || return 1
    sleep 0.1
  done
}

# watch_tree FILE CMD...: runs CMD every 0.1 s in the background, output to
# FILE, until stop_watch; errors inside do not stop it.
watch_tree() {
  local out=$1
  shift
  ( set +e; while :; do "$@"; sleep 0.1; done ) >"$out" 2>/dev/null &
  WATCHER=$!
}
stop_watch() { kill "$WATCHER" 2>/dev/null || true; wait "$WATCHER" 2>/dev/null || true; }
