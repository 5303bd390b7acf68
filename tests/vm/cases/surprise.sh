#!/usr/bin/env bash
# The surprise test (tests/e2e/run_surprise.sh) scaled to the VM: a third
# of the jobs use 3x their prediction. A guest of 1 GiB cannot hold a
# budget five times the cold default (512 MiB for cc), so a first run of
# the same tree with every job at 60 MB teaches memgate the jobs; then a
# third of them grow to 180 MB. memgate must freeze or requeue, the build
# succeeds with every output right, and nothing is OOM-killed outside
# memgate's cgroup.
source "$(dirname "$0")/vmlib.sh"
export PATH="$(fake_compilers):$PATH"
w="$E2E_TMP/work"
specs=()
for i in $(seq 0 11); do specs+=("--peak 60M --ramp 0.3 --hold 0.6 --after 20M --duration 1.2"); done
memjob_workload "$w" "${specs[@]}"
hist="$E2E_TMP/h.db"
cg=$(cg_make surprise 600M)
run() {
  cg_run "$cg" "$MEMGATE" run --jobs 8 --memory 512M --reserve 64M --history "$hist" -- make -s -C "$w" -j12 \
    >"$E2E_TMP/run.log" 2>&1
}
run || { cat "$E2E_TMP/run.log" >&2; fail "the teaching run failed"; }

make -s -C "$w" clean
for i in $(seq 0 3 11); do
  printf 'memjob: %s\n' "--base 50M --peak 180M --ramp 0.6 --peak-at 0.9 --hold 0.5 --after 20M --duration 1.8" \
    >"$w/$(printf 'j%03d' "$i").job"
done
set +e
run
rc=$?
set -e
cat "$E2E_TMP/run.log" >&2
assert_eq 0 "$rc" "exit status"
check_clean_run "$cg" "$w"
last_build "$hist" "$E2E_TMP/h.json"
frozen=$(json_num "$E2E_TMP/h.json" frozen)
requeued=$(json_num "$E2E_TMP/h.json" requeued)
oom=$(json_num "$E2E_TMP/h.json" oom_killed)
[ $((frozen + requeued + oom)) -gt 0 ] || fail "memgate never had to act"
grep -Eq 'froze|frozen|freez|requeue' "$E2E_TMP/run.log" || fail "the summary does not show the freezes or requeues"
! grep -q '^memgate: degraded' "$E2E_TMP/run.log" || fail "the run was degraded on cgroup v2"
note "$frozen frozen, $requeued requeued, $oom OOM-killed in memgate's cgroup and rerun"
echo PASS
