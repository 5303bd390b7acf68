#!/usr/bin/env bash
# Issue 3, "abort": SIGINT to memgate during a build. Within 5 s no
# process of the build is left (found by a marker in their environment)
# and memgate exits 130.
source "$(dirname "$0")/lib.sh"
require_cgroups
export PATH="$(fake_compilers):$PATH"
# Only the build's processes carry the marker: it is set for memgate
# alone, never exported to this script's own commands.
marker="memgate-abort-$$-$RANDOM"

w="$E2E_TMP/work"
specs=()
for i in $(seq 0 5); do specs+=("--peak 20M --duration 120 --ready $E2E_TMP/ready.$i"); done
memjob_workload "$w" "${specs[@]}"

marked_pids() {
  grep -lsa "MEMGATE_TEST_MARKER=$marker" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true
}

cg=$(cg_make abort 2G)
# Not through cg_run: $! must be memgate's own pid (bash -c execs it).
bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$cg" \
  env MEMGATE_TEST_MARKER="$marker" "$MEMGATE" run --history "$E2E_TMP/h.db" -- make -s -C "$w" -j4 >"$E2E_TMP/run.log" 2>&1 &
mg=$!
# Wait for the event: two jobs have reached their peak (memjob --ready).
for _ in $(seq 600); do
  n=$(find "$E2E_TMP" -maxdepth 1 -name 'ready.*' | wc -l)
  [ "$n" -ge 2 ] && break
  sleep 0.05
done
[ "$n" -ge 2 ] || fail "jobs never started: $(cat "$E2E_TMP/run.log")"
[ -n "$(marked_pids)" ] || fail "no marked processes while the build runs"

start=$(date +%s.%N)
kill -INT "$mg"
set +e
wait "$mg"
rc=$?
set -e
gone=""
while :; do
  left=$(marked_pids)
  [ -z "$left" ] && gone=$(date +%s.%N) && break
  python3 -c "import sys; sys.exit(0 if float('$(date +%s.%N)') - float('$start') < 5 else 1)" || break
  sleep 0.05
done
cat "$E2E_TMP/run.log" >&2
[ -n "$gone" ] || fail "build processes left 5 s after SIGINT: $(marked_pids | tr '\n' ' ')"
assert_eq 130 "$rc" "memgate's exit status after SIGINT"
echo "PASS"
