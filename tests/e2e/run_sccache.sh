#!/usr/bin/env bash
# Issue 15, Done means 4 (sccache, local cache mode): `memgate run -- make
# -j4 CC="sccache gcc"`, twice. Each compile is gated once (the outer
# `sccache gcc`; the compiler sccache's server runs gets the client's
# environment and passes through), the objects equal a plain build's, the
# second build is served from the cache, and sccache's server (on
# 127.0.0.1, a free port, a cache directory of its own, started by the
# build command before make, stopped by it after) leaves nothing running.
#
# The server is started with `sccache --start-server` (no job: a launcher
# counts only in front of a compiler), bounded by a timeout, before any
# client: left to the first of four concurrent clients, a fresh machine's
# first start raced them and one failed ("Failed to read response header").
#
# What memgate measures here is the client: sccache's server, not the
# client, runs the compiler, with the client's environment. So the
# compilers it runs carry the calling job's MEMGATE_JOB but sit outside
# every job: the ungated detector names them ("a compiler cache server?")
# and their memory counts as the build's overhead, but the jobs' own peaks
# are the client's few MiB. This test holds that down: every ungated
# compiler found is of that kind.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../lib/distcc.sh"  # free_port, c_project
require_cgroups
command -v sccache >/dev/null || { echo "SKIP: sccache not installed (apt-get install -y sccache)"; exit 77; }
command -v gcc >/dev/null || { echo "SKIP: no gcc"; exit 77; }

n=6
src="$E2E_TMP/src"
c_project "$src" $n h
c_project_reference "$src" "$E2E_TMP/plain" || fail "the plain build failed"

export SCCACHE_DIR="$E2E_TMP/sccache" SCCACHE_SERVER_PORT=$(free_port) SCCACHE_IDLE_TIMEOUT=120
export SCCACHE_ERROR_LOG="$E2E_TMP/sccache-server.log"
client=$(cg_make client 2G)
for round in 1 2; do
  make -s -C "$src" clean
  set +e
  cg_run "$client" "$MEMGATE" run --jobs 4 --history "$E2E_TMP/h.db" -- sh -c \
    'timeout 60 sccache --start-server >/dev/null && make -s -C "$1" -j4 CC="sccache gcc" &&
     sccache --show-stats >"$2"; rc=$?; sccache --stop-server >/dev/null; exit $rc' \
    sh "$src" "$E2E_TMP/stats$round.txt" >"$E2E_TMP/round$round.log" 2>&1
  rc=$?
  set -e
  cat "$E2E_TMP/round$round.log" >&2
  assert_eq 0 "$rc" "memgate run exit status (round $round)"
  same_objects "$src" "$E2E_TMP/plain" || fail "objects differ from the plain build's (round $round)"
  history_json "$E2E_TMP/h.db" "$E2E_TMP/h$round.json"
  assert_eq "$n" "$(json_get "$E2E_TMP/h$round.json" 'len(j["jobs"])')" "gated jobs, round $round (one per compile)"
  assert_eq "$n" "$(json_get "$E2E_TMP/h$round.json" 'sum(1 for x in j["jobs"] if x["where"] == "local" and x["tool"] == "gcc")')" \
    "local gcc jobs, round $round"
  assert_eq "" "$(cg_procs "$client")" "processes left in the client's cgroup (round $round)"
  if grep -q 'ran outside memgate.s gate' "$E2E_TMP/round$round.log"; then
    others=$(grep -A20 'ran outside memgate.s gate' "$E2E_TMP/round$round.log" | grep '^memgate:   /' |
      grep -vc 'a compiler cache server?' || true)
    assert_eq 0 "$others" "ungated compilers other than sccache's server's (round $round)"
  fi
done
hits=$(awk '/^Cache hits  /{print $3}' "$E2E_TMP/stats2.txt")
misses=$(awk '/^Cache misses  /{print $3}' "$E2E_TMP/stats1.txt")
note "round 1: $misses cache misses; round 2: $hits cache hits"
assert_eq "$n" "$misses" "cache misses of the first build"
assert_eq "$n" "$hits" "cache hits of the second build"
echo "PASS"
