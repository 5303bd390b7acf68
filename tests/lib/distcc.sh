# Loopback distcc servers for the shell tests and the bench (sourced, not
# run; needs tests/lib/cgroup.sh). A server listens on 127.0.0.1 only,
# allows 127.0.0.1 only, runs in the cgroup it is given, in a process group
# of its own, bounded by `timeout`, and is stopped by pid and process
# group, never by name. distccd makes a process group of its own for
# itself and its preforked children, so both groups are ended.

# have_distcc: distcc and distccd are installed.
have_distcc() { command -v distcc >/dev/null && command -v distccd >/dev/null; }

# free_port: a TCP port on 127.0.0.1 nobody listens on (the kernel's pick).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# distccd_start CGROUP DIR JOBS [PREFIX...]: starts a distccd in CGROUP,
# logging to DIR/distccd.log (DIR must be writable by the daemon: as root,
# distccd becomes the `distccd` user). PREFIX, if given, is a command it
# runs under (`memgate run --`). Prints "PID PORT"; PID leads the
# daemon's process group. Waits until the daemon listens (at most 30 s).
distccd_start() {
  local cg=$1 dir=$2 jobs=$3 port pid i
  shift 3
  port=$(free_port)
  : >"$dir/distccd.log"
  chmod 666 "$dir/distccd.log"
  # setsid: its own process group, so it is stopped as one, and a
  # terminal's signals never reach it.
  cg_run "$cg" setsid timeout -s TERM "${DISTCCD_TIMEOUT:-600}" "$@" distccd --no-detach --daemon \
    --listen 127.0.0.1 --allow 127.0.0.1 --port "$port" --jobs "$jobs" \
    --log-file "$dir/distccd.log" --log-level info --pid-file "$dir/distccd.pid" >"$dir/distccd.out" 2>&1 </dev/null &
  pid=$!
  for i in $(seq 300); do
    grep -q "listening on 127.0.0.1:$port" "$dir/distccd.log" 2>/dev/null && { echo "$pid $port"; return 0; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "distccd did not start: $(cat "$dir/distccd.out" "$dir/distccd.log" 2>/dev/null | tail -5)" >&2
  kill -TERM -- "-$pid" 2>/dev/null || true
  return 1
}

# distccd_stop DIR PID: ends what distccd_start started (PID's process
# group, and the daemon's own from DIR/distccd.pid): TERM, then KILL
# after 10 s; waits for it.
distccd_stop() {
  local dir=$1 pid=$2 dpid dpg groups g i alive
  groups="$pid"
  dpid=$(cat "$dir/distccd.pid" 2>/dev/null || true)
  if [ -n "$dpid" ]; then
    dpg=$(ps -o pgid= -p "$dpid" 2>/dev/null | tr -d ' ' || true)
    [ -n "$dpg" ] && [ "$dpg" != "$pid" ] && groups="$groups $dpg"
  fi
  for g in $groups; do kill -TERM -- "-$g" 2>/dev/null || true; done
  for i in $(seq 100); do
    alive=0
    for g in $groups; do kill -0 -- "-$g" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for g in $groups; do kill -KILL -- "-$g" 2>/dev/null || true; done
  wait "$pid" 2>/dev/null || true
}

# distccd_remote_ok LOG: how many compiles the daemon finished OK.
distccd_remote_ok() { grep -c 'COMPILE_OK' "$1" || true; }
