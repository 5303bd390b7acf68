#!/usr/bin/env bash
# Issue 15, Done means 4 (icecc): `memgate run -- make -j4 CC="icecc gcc"`.
# Each compile is gated once (the outer `icecc gcc`; the gcc icecc runs
# below it passes through), history marks the jobs as icecc's, and the
# objects equal a plain build's.
#
# No icecream daemon or scheduler runs here: icecc-scheduler 1.4 announces
# itself by UDP broadcast on every interface but lo (its log says
# "broadcast eth0 ..." even with -i lo), and these tests use 127.0.0.1
# only. icecc then finds no local daemon and compiles locally, as it does
# on a machine whose daemon is down; what this test shows is the launcher
# chain, not remote compilation (README "Beyond one machine").
source "$(dirname "$0")/lib.sh"
require_cgroups
command -v icecc >/dev/null || { echo "SKIP: icecc not installed (apt-get install -y icecc)"; exit 77; }
command -v gcc >/dev/null || { echo "SKIP: no gcc"; exit 77; }
# A daemon of the machine's own would make this a different test.
[ ! -S /var/run/icecc/iceccd.socket ] && [ ! -S /var/run/iceccd.socket ] ||
  { echo "SKIP: an iceccd runs on this machine"; exit 77; }
unset ICECC_TEST_SOCKET ICECC_VERSION || true

n=6
src="$E2E_TMP/src"
mkdir -p "$src"
for i in $(seq 1 $n); do printf 'int g%d(int x) { return x * %d + 1; }\n' "$i" "$i" >"$src/g$i.c"; done
cat >"$src/Makefile" <<'MK'
OBJS := $(patsubst %.c,%.o,$(sort $(wildcard *.c)))
all: $(OBJS)
%.o: %.c
	$(CC) -O2 -c $< -o $@
MK
cp -r "$src" "$E2E_TMP/plain"
make -s -C "$E2E_TMP/plain" CC=gcc || fail "the plain build failed"

client=$(cg_make client 2G)
set +e
HOME="$E2E_TMP" cg_run "$client" "$MEMGATE" run --jobs 4 --history "$E2E_TMP/h.db" -- make -s -C "$src" -j4 CC="icecc gcc" \
  >"$E2E_TMP/client.log" 2>&1
rc=$?
set -e
cat "$E2E_TMP/client.log" >&2
assert_eq 0 "$rc" "memgate run exit status"
for i in $(seq 1 $n); do cmp -s "$src/g$i.o" "$E2E_TMP/plain/g$i.o" || fail "g$i.o differs from the plain build's"; done
history_json "$E2E_TMP/h.db" "$E2E_TMP/h.json"
assert_eq "$n" "$(json_get "$E2E_TMP/h.json" 'len(j["jobs"])')" "gated jobs (one per compile)"
assert_eq "$n" "$(json_get "$E2E_TMP/h.json" 'sum(1 for x in j["jobs"] if x["engine"] == "icecc" and x["where"] == "remote")')" \
  "jobs handed to icecc"
assert_eq 0 "$(json_get "$E2E_TMP/h.json" 'j["build"]["counters"].get("ungated", 0)')" "ungated compilers"
assert_eq "" "$(cg_procs "$client")" "processes left in the client's cgroup"
echo "PASS"
