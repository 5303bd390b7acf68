#!/usr/bin/env bash
# memgate SIGKILLed mid-build (issue 12's semantics, on cgroup v2): kill -9
# memgate while one job is frozen and another runs. Within 10 s no process
# of the build is left stopped or frozen, and the build has ended. Then
# `memgate run -- true` and `memgate doctor --kill-stale`, from where the
# dead memgate left its caller (its leaf), leave no memgate-<pid> cgroup of
# a dead pid.
source "$(dirname "$0")/vmlib.sh"
export PATH="$(fake_compilers):$PATH"
w="$E2E_TMP/work"
hist="$E2E_TMP/h.db"
marker="memgate-killed-$$-$RANDOM"
marked_pids() { grep -ls "MEMGATE_TEST_MARKER=$marker" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true; }
memjob_workload "$w" "--peak 20M --duration 0.3" "--peak 20M --duration 0.3" "--peak 20M --duration 0.3"
cg=$(cg_make killed 600M)
cg_run "$cg" "$MEMGATE" run --jobs 3 --memory 400M --reserve 64M --history "$hist" -- make -s -C "$w" -j3 \
  >"$E2E_TMP/teach.log" 2>&1 || { cat "$E2E_TMP/teach.log" >&2; fail "the teaching run failed"; }
make -s -C "$w" clean
# A holds 250 MB until released; B grows and is frozen; C runs on, small.
printf 'memjob: %s\n' "--peak 250M --ramp 0.2 --hold 0.5 --hold-until $w/a.release --after 20M --ready $w/a.ready" >"$w/j000.job"
printf 'memjob: %s\n' "--base 40M --peak 220M --ramp 4 --peak-at 5 --hold 0.2 --after 20M --duration 5.5" >"$w/j001.job"
printf 'memjob: %s\n' "--peak 10M --duration 6" >"$w/j002.job"
sed -i 's/^\t$(CC)/\t@if [ $@ != j000.o ]; then while [ ! -e a.ready ]; do sleep 0.05; done; fi\n\t$(CC)/' "$w/Makefile"

bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$cg" \
  env MEMGATE_TEST_MARKER="$marker" "$MEMGATE" run --jobs 3 --memory 400M --reserve 64M --history "$hist" -- \
  make -s -C "$w" -j3 >"$E2E_TMP/run.log" 2>&1 &
mg=$!
froze() { grep -q '^memgate: freeze job' "$E2E_TMP/run.log"; }
wait_for 60 froze || true
grep -q '^memgate: freeze job' "$E2E_TMP/run.log" || { cat "$E2E_TMP/run.log" >&2; fail "memgate never froze a job"; }
note "frozen before the kill: $(stopped_or_frozen "$cg" | tr '\n' ' ')"
kill -9 "$mg"
start=$(now_ms)
touch "$w/a.release"
wait "$mg" 2>/dev/null || true

left="" build_left=""
while :; do
  left=$(stopped_or_frozen "$cg")
  build_left=$(marked_pids)
  [ -z "$left" ] && [ -z "$build_left" ] && break
  [ $(($(now_ms) - start)) -lt 10000 ] || break
  sleep 0.2
done
part1=ok
if [ -n "$left" ]; then part1="still stopped or frozen 10 s after memgate's death: $(echo $left)"
elif [ -n "$build_left" ]; then part1="the build has not ended 10 s after memgate's death: $(echo $build_left)"; fi
note "after the kill: $part1"
# What stops the build from hanging, if it hangs: end it, as a user would.
for p in $(marked_pids); do kill -9 "$p" 2>/dev/null || true; done
find "$cg" -name cgroup.freeze -exec sh -c 'echo 0 >"$1"' _ {} \; 2>/dev/null || true

# The next memgate, started where the dead one left its caller.
home=$cg
[ -d "$cg/memgate-leaf" ] && home="$cg/memgate-leaf"
dead="$cg/memgate-$mg"
cg_run "$home" "$MEMGATE" run --reserve 64M --history "$hist" -- true >"$E2E_TMP/next.log" 2>&1 || true
after_run=$([ -d "$dead" ] && echo "left" || echo "removed")
cg_run "$home" "$MEMGATE" doctor --kill-stale >"$E2E_TMP/doctor.log" 2>&1 || true
after_doctor=$([ -d "$dead" ] && echo "left" || echo "removed")
note "memgate-$mg after 'memgate run -- true': $after_run; after 'doctor --kill-stale': $after_doctor"
[ "$part1" = ok ] || fail "$part1"
[ "$after_run" = removed ] || [ "$after_doctor" = removed ] || fail "the dead memgate's cgroup $dead is still there"
echo PASS
