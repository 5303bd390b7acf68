# Loopback distcc servers, and what the suites of distributed engines
# (run_distcc, run_distcc_fallback, run_offload, run_governed_server,
# run_icecc, run_sccache) and the bench share: a project of small C files,
# a directory of memjob "compilers", a distcc client's environment
# (sourced, not run; needs tests/lib/cgroup.sh). A server listens on 127.0.0.1 only,
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

# distccd_dir DIR: makes DIR for a daemon's log and pid file. distccd
# runs as the `distccd` user when started as root: DIR and its parents
# must let it in.
distccd_dir() {
  chmod 755 "$(dirname "$1")"
  mkdir -p "$1" && chmod 777 "$1"
}

# distcc_client_env HOSTS DIR: the environment of a distcc client that
# sends to HOSTS ("127.0.0.1:PORT/N ..."), with its lock and state files in
# DIR. With DISTCC_STRICT=1, a compile that cannot run remotely fails
# rather than run here unannounced (no fallback, no local retry), and
# there is no backoff (a host that failed once is tried again at once).
# Otherwise distcc's defaults: fallback, local retry, backoff. Never
# fallback without backoff: distcc 3.4 then retries a host that refuses
# the connection for ever (it picks it again at once), and never falls
# back.
distcc_client_env() {
  export DISTCC_HOSTS="$1" DISTCC_DIR="$2"
  mkdir -p "$DISTCC_DIR"
  if [ "${DISTCC_STRICT:-0}" = 1 ]; then
    export DISTCC_FALLBACK=0 DISTCC_SKIP_LOCAL_RETRY=1 DISTCC_BACKOFF_PERIOD=0
  else
    unset DISTCC_FALLBACK DISTCC_SKIP_LOCAL_RETRY DISTCC_BACKOFF_PERIOD
  fi
}

# c_project DIR N NAME: N small C files DIR/NAME1.c ... NAME<N>.c (real
# code: a table, a loop, stdio and string.h, so the preprocessor has
# headers to read) and a Makefile that compiles each with `$(CC) -O2 -c`
# (`make clean` removes the objects). Extra make rules can be appended.
c_project() {
  local dir=$1 n=$2 name=$3 i
  mkdir -p "$dir"
  for i in $(seq 1 "$n"); do
    cat >"$dir/$name$i.c" <<C
#include <stdio.h>
#include <string.h>
static int table_$i[64];
int $name$i(const char* s) {
  for (int k = 0; k < 64; ++k) table_$i[k] = k * $i + (int)strlen(s);
  int sum = 0;
  for (int k = 0; k < 64; ++k) sum += table_$i[k] ^ k;
  printf("%d\n", sum);
  return sum;
}
C
  done
  cat >"$dir/Makefile" <<'MK'
OBJS := $(patsubst %.c,%.o,$(sort $(wildcard *.c)))
all: $(OBJS)
%.o: %.c
	$(CC) -O2 -c $< -o $@
clean:
	rm -f *.o
MK
}

# c_project_reference SRC REF: a copy of SRC built with plain gcc, the
# objects every engine's build must equal.
c_project_reference() {
  cp -r "$1" "$2"
  make -s -C "$2" CC=gcc
}

# same_objects A B: every object in A is byte-identical to B's.
same_objects() {
  local o
  for o in "$2"/*.o; do cmp -s "$1/$(basename "$o")" "$o" || { echo "$(basename "$o") differs" >&2; return 1; }; done
}

# memjob_compilers DIR: gcc, cc and x86_64-linux-gnu-gcc in DIR, each
# memjob (distcc's client asks its server for the target-prefixed name,
# which distccd's allow-list knows). Put DIR first in PATH.
memjob_compilers() {
  local name
  mkdir -p "$1"
  for name in gcc cc x86_64-linux-gnu-gcc; do ln -sf "$MEMJOB" "$1/$name"; done
  chmod 755 "$1"
}
