#!/usr/bin/env bash
# Issue 15, Done means 4 (icecc): `memgate run -- make -j4 CC="icecc gcc"`
# with real icecream daemons. A scheduler, a "server" iceccd (in its own
# cgroup, taking remote jobs, compiling in the environment tarball
# icecc-create-env made of this machine's gcc) and the client's own iceccd
# (--no-remote, as on a workstation that only sends). Every compile is
# gated once (the outer `icecc gcc`; the preprocessor icecc runs below it
# passes through), really runs on the server (its log counts them), the
# objects equal a plain build's, history marks the jobs remote through
# icecc, and nothing is left running.
#
# The whole suite runs in a network namespace of its own holding only
# loopback (tests/lib/icecc.sh says why: icecream's broadcasts).
# ICECC_TEST_SOCKET, ICECC_TEST_REMOTEBUILD and ICECC_PREFERRED_HOST are
# icecream's own switches for running several daemons on one machine (its
# test suite's): each daemon's unix socket, and "send it to the server
# even though it is this machine".
source "$(dirname "$0")/../lib/icecc.sh"
icecc_netns_enter "$0" "$@"
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../lib/distcc.sh"  # free_port, c_project
require_cgroups
have_icecc || { echo "SKIP: icecc not installed (apt-get install -y icecc)"; exit 77; }
command -v gcc >/dev/null || { echo "SKIP: no gcc"; exit 77; }
unset ICECC_TEST_SOCKET ICECC_VERSION ICECC_TEST_REMOTEBUILD ICECC_PREFERRED_HOST ICECC_DEBUG ICECC_LOGFILE || true

n=6
src="$E2E_TMP/src"
c_project "$src" $n g
c_project_reference "$src" "$E2E_TMP/plain" || fail "the plain build failed"

ice="$E2E_TMP/ice"
mkdir -p "$ice"
chmod 755 "$E2E_TMP"
chmod 777 "$ice"  # the daemons drop to the icecc user
tarball=$(icecc_env "$E2E_TMP/env") || fail "cannot make icecream's compiler environment"
note "compiler environment $tarball ($(($(stat -c %s "$tarball") >> 20)) MiB)"

net="memgate-test-$$"
server=$(cg_make server 2G)
clientd=$(cg_make clientd 512M)
read -r spid sport < <(icecc_scheduler_start "$server" "$ice" "$net") || fail "cannot start icecc-scheduler"
stop_all() { icecc_stop "$server" "$clientd"; }
dpid=$(icecc_daemon_start "$server" "$ice" server "$net" "$sport" -p "$(free_port)" -m 4) ||
  { stop_all; fail "the server's iceccd did not connect: $(cat "$ice/server.out")"; }
cpid=$(icecc_daemon_start "$clientd" "$ice" client "$net" "$sport" --no-remote -m 2) ||
  { stop_all; fail "the client's iceccd did not connect: $(cat "$ice/client.out")"; }
note "icecc-scheduler pid $spid on 127.0.0.1:$sport; iceccd server pid $dpid, client pid $cpid"
if grep -q "Cannot use chroot" "$ice/server.log"; then
  stop_all
  echo "SKIP: the server's iceccd cannot chroot here, so it takes no remote jobs"
  exit 77
fi

client=$(cg_make client 2G)
set +e
ICECC_TEST_SOCKET="$ice/client.sock" ICECC_TEST_REMOTEBUILD=1 ICECC_PREFERRED_HOST=server ICECC_VERSION="$tarball" \
  ICECC_DEBUG=debug ICECC_LOGFILE="$E2E_TMP/icecc.log" HOME="$E2E_TMP" \
  cg_run "$client" "$MEMGATE" run --jobs 4 --history "$E2E_TMP/h.db" -- make -s -C "$src" -j4 CC="icecc gcc" \
  >"$E2E_TMP/client.log" 2>&1
rc=$?
set -e
cat "$E2E_TMP/client.log" >&2
stop_all
assert_eq 0 "$rc" "memgate run exit status"
remote=$(grep -c "Remote compilation completed with exit code 0" "$ice/server.log" || true)
note "the server's iceccd compiled $remote of $n"
assert_eq "$n" "$remote" "compiles the server's iceccd finished"
same_objects "$src" "$E2E_TMP/plain" || fail "objects differ from the plain build's"
history_json "$E2E_TMP/h.db" "$E2E_TMP/h.json"
assert_eq "$n" "$(json_get "$E2E_TMP/h.json" 'len(j["jobs"])')" "gated jobs (one per compile)"
assert_eq "$n" "$(json_get "$E2E_TMP/h.json" 'sum(1 for x in j["jobs"] if x["engine"] == "icecc" and x["where"] == "remote")')" \
  "jobs handed to icecc"
assert_eq "$n" "$(json_get "$E2E_TMP/h.json" 'sum(1 for x in j["jobs"] if 0 < x["peak_bytes"] < 128 * 2**20)')" \
  "jobs with a measured local side under 128 MiB"
assert_eq 0 "$(json_get "$E2E_TMP/h.json" 'j["build"]["counters"].get("ungated", 0)')" "ungated compilers"
for cg in "$client" "$clientd" "$server"; do assert_eq "" "$(cg_procs "$cg")" "processes left in $(basename "$cg")"; done
assert_eq 0 "$(cg_oom_kills "$server")" "OOM kills on the server"
echo "PASS"
