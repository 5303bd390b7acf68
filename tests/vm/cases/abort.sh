#!/usr/bin/env bash
# Abort (tests/e2e/run_abort.sh): SIGINT to memgate during a build. Within
# 5 s no process of the build is left (found by a marker in their
# environment) and memgate exits 130; on v2 memgate's cgroups and its leaf
# are gone too.
source "$(dirname "$0")/vmlib.sh"
export PATH="$(fake_compilers):$PATH"
marker="memgate-abort-$$-$RANDOM"
w="$E2E_TMP/work"
memjob_workload "$w" "--peak 10M --duration 0.2" "--peak 10M --duration 0.2" "--peak 10M --duration 0.2" "--peak 10M --duration 0.2"
marked_pids() { grep -ls "MEMGATE_TEST_MARKER=$marker" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true; }

cg=$(cg_make abort 600M)
# A teaching run: cold, each cc job is predicted at 512 MiB and runs alone.
cg_run "$cg" "$MEMGATE" run --reserve 64M --history "$E2E_TMP/h.db" -- make -s -C "$w" -j4 >"$E2E_TMP/teach.log" 2>&1 ||
  { cat "$E2E_TMP/teach.log" >&2; fail "the teaching run failed"; }
make -s -C "$w" clean
for i in 0 1 2 3; do echo "memjob: --peak 10M --duration 120 --ready $E2E_TMP/ready.$i" >"$w/j00$i.job"; done
bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$cg" \
  env MEMGATE_TEST_MARKER="$marker" "$MEMGATE" run --reserve 64M --history "$E2E_TMP/h.db" -- make -s -C "$w" -j4 \
  >"$E2E_TMP/run.log" 2>&1 &
mg=$!
two_ready() { [ "$(find "$E2E_TMP" -maxdepth 1 -name 'ready.*' | wc -l)" -ge 2 ]; }
wait_for 60 two_ready || fail "jobs never started: $(cat "$E2E_TMP/run.log")"
[ -n "$(marked_pids)" ] || fail "no marked processes while the build runs"
start=$(now_ms)
kill -INT "$mg"
set +e
wait "$mg"
rc=$?
set -e
gone=""
while [ $(($(now_ms) - start)) -lt 5000 ]; do
  [ -z "$(marked_pids)" ] && gone=$(($(now_ms) - start)) && break
  sleep 0.05
done
cat "$E2E_TMP/run.log" >&2
[ -n "$gone" ] || fail "build processes left 5 s after SIGINT: $(marked_pids | tr '\n' ' ')"
assert_eq 130 "$rc" "memgate's exit status after SIGINT"
assert_eq "" "$(find "$cg" -mindepth 1 -type d)" "cgroups left behind"
note "the build was gone ${gone} ms after SIGINT"
echo PASS
