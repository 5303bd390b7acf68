# Loopback icecream (icecc) for the shell tests (sourced, not run; needs
# tests/lib/cgroup.sh and tests/lib/distcc.sh for free_port).
#
# icecc-scheduler 1.4 announces itself by UDP broadcast on every interface
# but lo, even with `-i lo` (its log: "broadcast eth0 ..."), and the
# daemons look for it the same way. These tests use 127.0.0.1 only, so
# the whole suite runs in a network namespace of its own that holds
# nothing but loopback (`icecc_netns_enter`): a broadcast there reaches no
# other machine, and every daemon is also told `-i lo` and the scheduler's
# address. Each daemon runs in the cgroup it is given, in a process group
# of its own, bounded by `timeout`, and is stopped by its process groups.

have_icecc() { command -v icecc >/dev/null && command -v iceccd >/dev/null && command -v icecc-scheduler >/dev/null &&
  command -v icecc-create-env >/dev/null; }

# icecc_netns_enter "$0" "$@": re-runs the calling suite in a new network
# namespace (root only; needs unshare from util-linux and ip from
# iproute2) and brings its loopback up. Returns in the namespace; exits 77
# where none can be had.
icecc_netns_enter() {
  if [ "${MEMGATE_TEST_NETNS:-}" != 1 ]; then
    [ "$(id -u)" = 0 ] || { echo "SKIP: a private network namespace needs root"; exit 77; }
    command -v unshare >/dev/null && command -v ip >/dev/null ||
      { echo "SKIP: no unshare (util-linux) or ip (iproute2)"; exit 77; }
    MEMGATE_TEST_NETNS=1 exec unshare --net -- bash "$@"
  fi
  ip link set lo up
  # Nothing but loopback may be here.
  local links
  links=$(ip -o link show | awk -F': ' '{print $2}' | tr '\n' ' ')
  [ "$links" = "lo " ] || { echo "FAIL: the test's network namespace holds more than lo: $links" >&2; exit 1; }
}

# icecc_env DIR: a compiler environment (the tarball a remote daemon
# unpacks and compiles in) of this machine's gcc and g++; prints its path.
# Made in DIR, or reused from MEMGATE_BUILD/icecc-env when one was made
# there for the same gcc (it takes a minute on a loaded machine).
icecc_env() {
  local dir=$1 out key cache=""
  key="$(gcc -dumpfullversion)-$(stat -c %Y "$(readlink -f "$(command -v gcc)")")"
  if [ -n "${MEMGATE_BUILD:-}" ] && [ -d "$MEMGATE_BUILD" ]; then
    cache="$MEMGATE_BUILD/icecc-env/$key"
    out=$(ls "$cache"/*.tar.* 2>/dev/null | head -1)
    [ -n "$out" ] && { echo "$out"; return 0; }
    dir=$cache
  fi
  mkdir -p "$dir"
  out=$(cd "$dir" && icecc-create-env --gcc "$(command -v gcc)" "$(command -v g++)" 2>&1) ||
    { echo "icecc-create-env failed: $out" >&2; rm -rf "$cache"; return 1; }
  ls "$dir"/*.tar.* 2>/dev/null | head -1
}

# icecc_wait_log FILE PATTERN: waits (at most 30 s) until FILE has PATTERN.
icecc_wait_log() {
  local i
  for i in $(seq 300); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "no '$2' in $1 after 30 s: $(tail -5 "$1" 2>/dev/null)" >&2
  return 1
}

# icecc_scheduler_start CGROUP DIR NETNAME: a scheduler on 127.0.0.1
# (loopback only), logging to DIR/scheduler.log. Prints "PID PORT".
icecc_scheduler_start() {
  local cg=$1 dir=$2 net=$3 port pid
  port=$(free_port)
  cg_run "$cg" setsid timeout -s TERM "${ICECC_TIMEOUT:-600}" icecc-scheduler -i lo -p "$port" -n "$net" \
    -l "$dir/scheduler.log" -vvv >"$dir/scheduler.out" 2>&1 </dev/null &
  pid=$!
  echo "$pid $port"
}

# icecc_daemon_start CGROUP DIR NAME NETNAME SCHEDULER_PORT [ICECCD OPTIONS...]:
# an iceccd called NAME (its unix socket DIR/NAME.sock, its log
# DIR/NAME.log, its environments under DIR/envs-NAME), talking to the
# scheduler at 127.0.0.1:SCHEDULER_PORT. Prints its PID once it is
# connected to the scheduler. DIR must be writable by the icecc user (the
# daemon drops to it). No `-i lo` here: iceccd 1.4 given an interface
# opens its TCP listen socket on it twice and the second bind fails
# ("Failed to bind address to TCP listen socket (Address already in use)"
# every 2 s; it then takes no remote jobs). Without it, it listens on all
# interfaces of the namespace, which holds only lo (icecc_netns_enter
# checks that).
icecc_daemon_start() {
  local cg=$1 dir=$2 name=$3 net=$4 sport=$5 pid
  shift 5
  ICECC_TEST_SOCKET="$dir/$name.sock" cg_run "$cg" setsid timeout -s TERM "${ICECC_TIMEOUT:-600}" \
    iceccd -s "127.0.0.1:$sport" -n "$net" -N "$name" -b "$dir/envs-$name" -l "$dir/$name.log" -vvv "$@" \
    >"$dir/$name.out" 2>&1 </dev/null &
  pid=$!
  icecc_wait_log "$dir/$name.log" "Connected to scheduler" || return 1
  echo "$pid"
}

# icecc_stop CGROUP...: ends the daemons started in these cgroups (only
# the test's own daemons are there): every process group found in them,
# which includes the `timeout` group each was started in and the one each
# daemon makes for itself ("entered process group"); TERM, then KILL after
# 10 s.
icecc_stop() {
  local cg i groups
  icecc_groups() { for cg in "$@"; do for p in $(cg_procs "$cg"); do ps -o pgid= -p "$p" 2>/dev/null; done; done | sort -u; }
  groups=$(icecc_groups "$@")
  for g in $groups; do kill -TERM -- "-$g" 2>/dev/null || true; done
  for i in $(seq 100); do
    [ -z "$(icecc_groups "$@")" ] && return 0
    sleep 0.1
  done
  for g in $(icecc_groups "$@"); do kill -KILL -- "-$g" 2>/dev/null || true; done
}
