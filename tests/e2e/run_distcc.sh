#!/usr/bin/env bash
# Issue 15, Done means 1: memgate in front of distcc. A loopback distccd
# in its own 2 GiB cgroup; `memgate run -- make -j4 CC="distcc gcc"` in a
# client cgroup. Every compile really runs on the server (DISTCC_HOSTS
# lists no localhost, fallback and local retry are off, and the daemon's
# log counts them), each is gated once (the outer `distcc gcc`, not the
# `gcc -E` distcc runs below it), the objects are byte-identical to a local
# build's, history marks the jobs remote through distcc with the local
# side's peak, and nothing is left running.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../lib/distcc.sh"
require_cgroups
have_distcc || { echo "SKIP: distcc/distccd not installed (apt-get install -y distcc)"; exit 77; }
command -v gcc >/dev/null || { echo "SKIP: no gcc"; exit 77; }

n=8
src="$E2E_TMP/src"
mkdir -p "$src"
for i in $(seq 1 $n); do
  cat >"$src/f$i.c" <<C
#include <stdio.h>
#include <string.h>
static int table_$i[64];
int f$i(const char* s) {
  for (int k = 0; k < 64; ++k) table_$i[k] = k * $i + (int)strlen(s);
  int sum = 0;
  for (int k = 0; k < 64; ++k) sum += table_$i[k] ^ k;
  printf("%d\n", sum);
  return sum;
}
C
done
cat >"$src/Makefile" <<'MK'
OBJS := $(patsubst %.c,%.o,$(sort $(wildcard *.c)))
all: $(OBJS)
%.o: %.c
	$(CC) -O2 -c $< -o $@
MK
cp -r "$src" "$E2E_TMP/local"
make -s -C "$E2E_TMP/local" CC=gcc || fail "the local reference build failed"

# The daemon runs as the distccd user: it must reach the log.
chmod 755 "$E2E_TMP"
srv_dir="$E2E_TMP/server"
mkdir -p "$srv_dir" && chmod 777 "$srv_dir"
server=$(cg_make server 2G)
read -r dpid port < <(distccd_start "$server" "$srv_dir" 4) || fail "cannot start distccd"
note "distccd pid $dpid on 127.0.0.1:$port"

export DISTCC_HOSTS="127.0.0.1:$port/4"
export DISTCC_DIR="$E2E_TMP/distcc-client"
mkdir -p "$DISTCC_DIR"  # distcc's lock and state files
export DISTCC_FALLBACK=0 DISTCC_SKIP_LOCAL_RETRY=1 DISTCC_BACKOFF_PERIOD=0
client=$(cg_make client 2G)
set +e
cg_run "$client" "$MEMGATE" run --jobs 4 --history "$E2E_TMP/h.db" -- make -s -C "$src" -j4 CC="distcc gcc" \
  >"$E2E_TMP/client.log" 2>&1
rc=$?
set -e
cat "$E2E_TMP/client.log" >&2
assert_eq 0 "$rc" "memgate run exit status"

# Remotely, all of them: the daemon's own word.
assert_eq "$n" "$(distccd_remote_ok "$srv_dir/distccd.log")" "compiles the daemon finished"
for i in $(seq 1 $n); do
  cmp -s "$src/f$i.o" "$E2E_TMP/local/f$i.o" || fail "f$i.o differs from the local build's"
done

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
grep -q "$n jobs ran through distcc" "$E2E_TMP/client.log" || fail "the summary does not say where the jobs ran"

distccd_stop "$srv_dir" "$dpid"
assert_eq "" "$(cg_procs "$server")" "processes left in the server's cgroup"
assert_eq "" "$(cg_procs "$client")" "processes left in the client's cgroup"
assert_eq 0 "$(cg_oom_kills "$server")" "OOM kills on the server"
assert_eq 0 "$(cg_oom_kills "$client")" "OOM kills on the client"
echo "PASS"
