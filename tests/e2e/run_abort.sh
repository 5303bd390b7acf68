#!/usr/bin/env bash
# Issue 3, "abort": SIGINT to memgate during a build. Within 5 s no
# process of the build is left (found by a marker in their environment)
# and memgate exits 130.
source "$(dirname "$0")/lib.sh"
require_cgroups
export PATH="$(fake_compilers):$PATH"
marker="memgate-abort-$$-$RANDOM"
export MEMGATE_TEST_MARKER=$marker

w="$E2E_TMP/work"
specs=()
for i in $(seq 0 5); do specs+=("--peak 20M --duration 120 --ready $E2E_TMP/ready.$i"); done
memjob_workload "$w" "${specs[@]}"

marked_pids() {
  grep -lsa "MEMGATE_TEST_MARKER=$marker" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | grep -vx "$$" || true
}

cg=$(cg_make abort 2G)
cg_run "$cg" "$MEMGATE" run --history "$E2E_TMP/h.db" -- make -s -C "$w" -j4 >"$E2E_TMP/run.log" 2>&1 &
mg=$!
# Wait for the event: two jobs have reached their peak (memjob --ready).
for _ in $(seq 600); do
  n=$(ls "$E2E_TMP"/ready.* 2>/dev/null | wc -l)
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
