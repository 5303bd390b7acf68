#!/usr/bin/env bash
# Issue 15, Done means 2: memory-aware offload. A "laptop" cgroup of 1 GiB
# whose budget (--memory 700M) fits one 400 MB compile; a loopback distccd
# "server" in a 1.6 GiB cgroup that fits three (--jobs 3, DISTCC_HOSTS
# .../3). `memgate run --offload distcc -- make -j8` with a plain CC=gcc
# (memjob): jobs that would wait for local memory are sent to distcc
# instead. The build succeeds, no OOM kill in either cgroup, the server's
# log counts exactly the jobs history marks offloaded, and history shows
# which ran where.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../lib/distcc.sh"
require_cgroups
have_distcc || { echo "SKIP: distcc/distccd not installed (apt-get install -y distcc)"; exit 77; }

memjob_compilers "$E2E_TMP/bin"
export PATH="$E2E_TMP/bin:$PATH"

srv_dir="$E2E_TMP/server"
distccd_dir "$srv_dir"
server=$(cg_make server 1600M)
read -r dpid port < <(distccd_start "$server" "$srv_dir" 3) || fail "cannot start distccd"
note "distccd pid $dpid on 127.0.0.1:$port"

w="$E2E_TMP/work"
specs=()
for i in $(seq 1 8); do specs+=("--peak 400M --ramp 0.2 --hold 1.0 --duration 1.5"); done
MEMJOB_EXT=c memjob_workload "$w" "${specs[@]}"  # distcc sends only C sources out

# An offloaded job that cannot run remotely must not come back here
# unannounced: no fallback, no local retry.
DISTCC_STRICT=1 distcc_client_env "127.0.0.1:$port/3" "$E2E_TMP/distcc-client"
laptop=$(cg_make laptop 1G)
set +e
cg_run "$laptop" "$MEMGATE" run --offload distcc --jobs 8 --memory 700M --reserve 128M \
  --history "$E2E_TMP/h.db" -- make -s -C "$w" -j8 CC=gcc >"$E2E_TMP/laptop.log" 2>&1
rc=$?
set -e
cat "$E2E_TMP/laptop.log" >&2
distccd_stop "$srv_dir" "$dpid"
assert_eq 0 "$rc" "memgate run exit status"
check_memjob_outputs "$w" c || fail "outputs missing or wrong"
assert_eq 0 "$(cg_oom_kills "$laptop")" "OOM kills on the laptop"
assert_eq 0 "$(cg_oom_kills "$server")" "OOM kills on the server"

history_json "$E2E_TMP/h.db" "$E2E_TMP/h.json"
json_get "$E2E_TMP/h.json" '"\n".join("%s %s %s %d MiB" % (x["where"], x["engine"] or "-", x["identity"], x["peak_bytes"] >> 20) for x in j["jobs"])' >&2
offloaded=$(json_get "$E2E_TMP/h.json" 'sum(1 for x in j["jobs"] if x["where"] == "offloaded" and x["engine"] == "distcc")')
local_jobs=$(json_get "$E2E_TMP/h.json" 'sum(1 for x in j["jobs"] if x["where"] == "local")')
remote=$(distccd_remote_ok "$srv_dir/distccd.log")
note "$local_jobs local, $offloaded offloaded; the server compiled $remote"
assert_eq 8 "$((local_jobs + offloaded))" "jobs in history"
[ "$offloaded" -ge 1 ] || fail "nothing was offloaded"
[ "$local_jobs" -ge 1 ] || fail "nothing ran locally"
assert_eq "$offloaded" "$remote" "offloaded jobs the server compiled"
assert_eq "$offloaded" "$(json_get "$E2E_TMP/h.json" 'j["build"]["counters"]["offloaded"]')" "the offloaded counter"
# Every offloaded job went out because it would have waited, and says so.
[ "$(grep -c 'offload job' "$E2E_TMP/laptop.log")" -ge "$offloaded" ] || fail "offload events missing from the log"
grep -q "offloaded to distcc" "$E2E_TMP/laptop.log" || fail "the summary does not say where the jobs ran"
# The laptop never held two heavy compiles at once.
peak=$(cg_peak "$laptop")
note "laptop cgroup peak $((peak / 1048576)) MiB"
[ "$peak" -lt $((1024 * 1048576)) ] || fail "the laptop reached its limit"
assert_eq "" "$(cg_procs "$server")" "processes left in the server's cgroup"
assert_eq "" "$(cg_procs "$laptop")" "processes left in the laptop's cgroup"
echo "PASS"
