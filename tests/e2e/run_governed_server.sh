#!/usr/bin/env bash
# Issue 15, Done means 3: a governed build server. `memgate run
# --decline-after 4 -- distccd` in a 1 GiB cgroup (memgate runs as the
# distccd user, as a real server would: distccd refuses to compile as
# root, and the wrappers of its compilers must reach memgate's socket).
# Three clients send 4 compiles of 300 MB each at once (3.6 GB against 1
# GiB). The server's compilers are gated (never more than fits), none is
# OOM-killed, a compile that waits too long is declined and its client
# compiles it itself (distcc's local retry), and every client build
# succeeds with correct outputs.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../lib/distcc.sh"
require_cgroups
have_distcc || { echo "SKIP: distcc/distccd not installed (apt-get install -y distcc)"; exit 77; }
id distccd >/dev/null 2>&1 || { echo "SKIP: no distccd user"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }

# The server's and the clients' "gcc" is memjob. distcc's client asks for
# the target-prefixed name, which the daemon's allow-list knows.
chmod 755 "$E2E_TMP"
bin="$E2E_TMP/bin"
memjob_compilers "$bin"

srv_dir="$E2E_TMP/server"
mkdir -p "$srv_dir/cache" && chown -R distccd "$srv_dir" && chmod 755 "$srv_dir"
server=$(cg_make server 1G)
# Delegated to the user memgate runs as, so it can make its cgroups there.
chown distccd "$server" "$server"/cgroup.procs "$server"/tasks 2>/dev/null || chown distccd "$server" "$server"/cgroup.procs
read -r dpid port < <(PATH="$bin:$PATH" XDG_CACHE_HOME="$srv_dir/cache" distccd_start "$server" "$srv_dir" 12 \
  setpriv --reuid=distccd --regid=nogroup --clear-groups -- \
  "$MEMGATE" run --jobs 8 --reserve 96M --decline-after 4 --history "$srv_dir/h.db" --) ||
  fail "cannot start the governed distccd"
note "memgate + distccd (pid $dpid) on 127.0.0.1:$port"

export DISTCC_HOSTS="127.0.0.1:$port/4"
export DISTCC_BACKOFF_PERIOD=0
export PATH="$bin:$PATH"
pids=()
for c in 1 2 3; do
  w="$E2E_TMP/client$c"
  specs=()
  for i in 1 2 3 4; do specs+=("--peak 300M --ramp 0.2 --hold 1.5 --duration 2.5"); done
  # distcc sends only C sources out: the jobs are .c files.
  MEMJOB_EXT=c memjob_workload "$w" "${specs[@]}"
  cg=$(cg_make "client$c" 2G)
  mkdir -p "$w/.distcc"
  DISTCC_DIR="$w/.distcc" cg_run "$cg" timeout 300 make -s -C "$w" -j4 CC="distcc gcc" >"$E2E_TMP/client$c.log" 2>&1 &
  pids+=($!)
done
for c in 1 2 3; do
  rc=0
  wait "${pids[$((c - 1))]}" || rc=$?
  [ "$rc" -eq 0 ] || { cat "$E2E_TMP/client$c.log" >&2; fail "client $c build failed (exit $rc)"; }
  check_memjob_outputs "$E2E_TMP/client$c" c || fail "client $c outputs missing or wrong"
done

distccd_stop "$srv_dir" "$dpid"
cat "$srv_dir/distccd.out" >&2
remote=$(distccd_remote_ok "$srv_dir/distccd.log")
note "the server compiled $remote of 12; server cgroup peak $(($(cg_peak "$server") / 1048576)) MiB"
assert_eq 0 "$(cg_oom_kills "$server")" "OOM kills in the server's cgroup"
assert_eq "" "$(cg_procs "$server")" "processes left in the server's cgroup"
[ "$remote" -ge 1 ] || fail "no compile ran on the server"

# The history belongs to the server's user, who reads it: root refuses a
# history in a directory another user can write (SECURITY.md).
XDG_CACHE_HOME="$srv_dir/cache" setpriv --reuid=distccd --regid=nogroup --clear-groups -- \
  "$MEMGATE" history --json --build last --history "$srv_dir/h.db" >"$E2E_TMP/srv.json"
gated=$(json_get "$E2E_TMP/srv.json" 'len(j["jobs"])')
declined=$(json_get "$E2E_TMP/srv.json" 'j["build"]["counters"].get("declined", 0)')
note "server: $gated compiles gated, $declined declined"
assert_eq "$remote" "$gated" "compiles gated on the server (all those it ran)"
assert_eq 12 "$((gated + declined))" "compiles gated or declined on the server"
[ "$declined" -ge 1 ] || fail "the server declined nothing: the scenario did not overload it"
assert_eq 0 "$(json_get "$E2E_TMP/srv.json" 'j["build"]["counters"].get("ungated", 0)')" "ungated compilers on the server"
echo "PASS"
