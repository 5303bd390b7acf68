#!/usr/bin/env bash
# Issue 12: memgate SIGKILLed mid-build while one job is frozen and others
# run. Within 10 s no process of the build is left stopped or frozen, and
# the build has ended (the build gets SIGTERM as memgate's death signal; a
# wrapper that loses its socket thaws its own job; memgate's guard,
# src/run/guard.hpp, thaws and ends what is left and removes the cgroups,
# as it does when the whole process group dies: run_group_killed). Then
# the next `memgate run -- true` (and `memgate doctor --kill-stale`) leaves
# no memgate-<pid> cgroup of the dead pid in the memory or freezer
# hierarchy. (tests/vm/cases/killed.sh is the same on cgroup v2.)
source "$(dirname "$0")/lib.sh"
require_cgroups
export PATH="$(fake_compilers):$PATH"
w="$E2E_TMP/work"
hist="$E2E_TMP/h.db"
marker="memgate-killed-$$-$RANDOM"
marked_pids() { grep -ls "MEMGATE_TEST_MARKER=$marker" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true; }
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# A holds 400 MB until released; B grows and is frozen; C runs on, small.
memjob_workload "$w" \
  "--peak 400M --ramp 0.2 --hold 0.5 --hold-until $w/a.release --after 20M --ready $w/a.ready" \
  "--base 100M --peak 800M --ramp 6 --peak-at 7 --hold 0.2 --after 20M --duration 7.5" \
  "--peak 10M --duration 8"
sed -i 's/^\t$(CC)/\t@if [ $@ != j000.o ]; then while [ ! -e a.ready ]; do sleep 0.05; done; fi\n\t$(CC)/' "$w/Makefile"

cg=$(cg_make killed 2G)
bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$cg" \
  env MEMGATE_TEST_MARKER="$marker" "$MEMGATE" run --jobs 3 --memory 1200M --reserve 256M --history "$hist" -- \
  make -s -C "$w" -j3 >"$E2E_TMP/run.log" 2>&1 &
mg=$!
until grep -q '^memgate: freeze job' "$E2E_TMP/run.log" || ! kill -0 "$mg" 2>/dev/null; do sleep 0.1; done
grep -q '^memgate: freeze job' "$E2E_TMP/run.log" || { cat "$E2E_TMP/run.log" >&2; fail "memgate never froze a job"; }

# Where memgate's freezer cgroup is (v1: its own hierarchy; v2: below $cg).
if [ "$(cg_version)" = v1 ]; then fz="$(cg_self freezer)/memgate-$mg"; else fz="$cg/memgate-$mg"; fi
frozen_or_stopped() {
  local pid f
  for pid in $(marked_pids); do
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = T ] && echo "stopped:$pid"
  done
  for f in $(find "$fz" \( -name freezer.state -o -name cgroup.events \) 2>/dev/null); do
    grep -qxE 'FROZEN|FREEZING|frozen 1' "$f" && echo "frozen:${f%/*}"
  done
  return 0
}
note "frozen before the kill: $(frozen_or_stopped | tr '\n' ' ')"
[ -n "$(frozen_or_stopped)" ] || fail "nothing was frozen before the kill"

kill -9 "$mg"
start=$(now_ms)
touch "$w/a.release"
wait "$mg" 2>/dev/null || true
left="" build_left=""
while :; do
  left=$(frozen_or_stopped)
  build_left=$(marked_pids)
  [ -z "$left" ] && [ -z "$build_left" ] && break
  [ $(($(now_ms) - start)) -lt 10000 ] || break
  sleep 0.2
done
# Whatever the outcome, end what is left before asserting, so nothing leaks.
for p in $(marked_pids); do kill -9 "$p" 2>/dev/null || true; done
cglib_thaw_tree "$fz"
[ -z "$left" ] || fail "still stopped or frozen 10 s after memgate's death: $(echo $left)"
[ -z "$build_left" ] || fail "the build has not ended 10 s after memgate's death: $(echo $build_left)"
note "the build ended $(($(now_ms) - start)) ms after memgate's death, nothing frozen"

dead_mem="$cg/memgate-$mg"
[ -d "$dead_mem" ] || [ -d "$fz" ] || note "(the dead memgate's cgroups were already gone)"
cg_run "$cg" "$MEMGATE" run --history "$hist" -- true >"$E2E_TMP/next.log" 2>&1 || fail "memgate run -- true failed"
cat "$E2E_TMP/next.log" >&2
[ ! -d "$dead_mem" ] || fail "memgate run -- true left $dead_mem"
[ ! -d "$fz" ] || fail "memgate run -- true left $fz"
cg_run "$cg" "$MEMGATE" doctor --json >"$E2E_TMP/doctor.json"
assert_eq 0 "$(json_get "$E2E_TMP/doctor.json" 'len(j["stale_cgroups"])')" "stale cgroups after the next run"
echo PASS
