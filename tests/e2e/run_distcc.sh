#!/usr/bin/env bash
# Issue 15, Done means 1: memgate in front of distcc. A loopback distccd
# in its own 2 GiB cgroup; `memgate run --jobs 1 -- make -j4 CC="distcc
# gcc"` in a client cgroup. Every compile really runs on the server
# (DISTCC_HOSTS lists no localhost, fallback and local retry are off, and
# the daemon's log counts them), each is gated once (the outer `distcc
# gcc`, not the `gcc -E` distcc runs below it), the objects are
# byte-identical to a local build's, history marks the jobs remote through
# distcc with the local side's peak, and nothing is left running.
#
# One local CPU slot (--jobs 1) against the server's 4 (DISTCC_HOSTS
# .../4): remote jobs take the engine's slots, not local ones, so the
# trace shows more than one compile at a time.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../lib/distcc.sh"
require_cgroups
have_distcc || { echo "SKIP: distcc/distccd not installed (apt-get install -y distcc)"; exit 77; }
command -v gcc >/dev/null || { echo "SKIP: no gcc"; exit 77; }

n=8
src="$E2E_TMP/src"
c_project "$src" $n f
c_project_reference "$src" "$E2E_TMP/local" || fail "the local reference build failed"

srv_dir="$E2E_TMP/server"
distccd_dir "$srv_dir"
server=$(cg_make server 2G)
read -r dpid port < <(distccd_start "$server" "$srv_dir" 4) || fail "cannot start distccd"
note "distccd pid $dpid on 127.0.0.1:$port"

DISTCC_STRICT=1 distcc_client_env "127.0.0.1:$port/4" "$E2E_TMP/distcc-client"
client=$(cg_make client 2G)
set +e
cg_run "$client" "$MEMGATE" run --jobs 1 --history "$E2E_TMP/h.db" --trace "$E2E_TMP/trace.json" -- \
  make -s -C "$src" -j4 CC="distcc gcc" >"$E2E_TMP/client.log" 2>&1
rc=$?
set -e
cat "$E2E_TMP/client.log" >&2
assert_eq 0 "$rc" "memgate run exit status"

# Remotely, all of them: the daemon's own word.
assert_eq "$n" "$(distccd_remote_ok "$srv_dir/distccd.log")" "compiles the daemon finished"
same_objects "$src" "$E2E_TMP/local" || fail "objects differ from the local build's"

history_json "$E2E_TMP/h.db" "$E2E_TMP/h.json"
assert_eq "$n" "$(json_get "$E2E_TMP/h.json" 'len(j["jobs"])')" "gated jobs (one per compile)"
assert_eq "$n" "$(json_get "$E2E_TMP/h.json" 'sum(1 for x in j["jobs"] if x["where"] == "remote" and x["engine"] == "distcc")')" \
  "jobs marked remote through distcc"
assert_eq "$n" "$(json_get "$E2E_TMP/h.json" 'sum(1 for x in j["jobs"] if x["identity"].startswith("distcc>") and x["tool"] == "gcc")')" \
  "jobs learned as distcc's"
# The local side was measured, and it is distcc's client and preprocessor,
# not a compile.
assert_eq "$n" "$(json_get "$E2E_TMP/h.json" 'sum(1 for x in j["jobs"] if 0 < x["peak_bytes"] < 128 * 2**20)')" \
  "jobs with a measured local peak under 128 MiB"
assert_eq "0" "$(json_get "$E2E_TMP/h.json" 'j["build"].get("counters", {}).get("ungated", 0)')" "ungated compilers"
assert_eq "0" "$(json_get "$E2E_TMP/h.json" 'j["build"].get("counters", {}).get("fell_back", 0)')" \
  "jobs distcc compiled here"
grep -q "$n jobs ran through distcc" "$E2E_TMP/client.log" || fail "the summary does not say where the jobs ran"
# Beyond the one local slot: the most compiles running at once.
most=$(json_get "$E2E_TMP/trace.json" '(lambda xs: max(sum(1 for a in xs if a["ts"] <= b["ts"] < a["ts"] + a["dur"]) for b in xs))([e for e in (j["traceEvents"] if isinstance(j, dict) else j) if e["ph"] == "X"])')
note "at most $most remote compiles at once on 1 local slot"
[ "$most" -ge 2 ] || fail "remote jobs were held to the one local CPU slot"

distccd_stop "$srv_dir" "$dpid"
assert_eq "" "$(cg_procs "$server")" "processes left in the server's cgroup"
assert_eq "" "$(cg_procs "$client")" "processes left in the client's cgroup"
assert_eq 0 "$(cg_oom_kills "$server")" "OOM kills on the server"
assert_eq 0 "$(cg_oom_kills "$client")" "OOM kills on the client"
echo "PASS"
