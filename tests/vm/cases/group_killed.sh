#!/usr/bin/env bash
# memgate's whole process group SIGKILLed while a job is frozen (the cgroup
# v2 twin of tests/e2e/run_group_killed.sh): through `timeout -s KILL`
# (fired at that moment with SIGALRM, as timeout's own timer does) and
# with `kill -9 -- -PGID`. No wrapper survives to thaw its job. On v2 a
# frozen task still dies of SIGKILL, but its frozen cgroup, with its limit,
# stayed behind until some later memgate run. Now memgate's guard (a
# session of its own) thaws, ends and removes it: within 10 s nothing is
# frozen, nothing of the build runs, no memgate-<pid> cgroup is left, with
# no other memgate run in between.
source "$(dirname "$0")/vmlib.sh"
export PATH="$(fake_compilers):$PATH"
w="$E2E_TMP/work"
hist="$E2E_TMP/h.db"
memjob_workload "$w" "--peak 20M --duration 0.3" "--peak 20M --duration 0.3" "--peak 20M --duration 0.3"
cg=$(cg_make group 600M)
cg_run "$cg" "$MEMGATE" run --jobs 3 --memory 400M --reserve 64M --history "$hist" -- make -s -C "$w" -j3 \
  >"$E2E_TMP/teach.log" 2>&1 || { cat "$E2E_TMP/teach.log" >&2; fail "the teaching run failed"; }

for how in timeout kill-group; do
  marker="memgate-group-$how-$$-$RANDOM"
  marked_pids() { grep -ls "MEMGATE_TEST_MARKER=$marker" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true; }
  make -s -C "$w" clean
  rm -f "$w/a.release" "$w/a.ready"
  # A holds 250 MB until released; B grows and is frozen; C runs on, small.
  printf 'memjob: %s\n' "--peak 250M --ramp 0.2 --hold 0.5 --hold-until $w/a.release --after 20M --ready $w/a.ready" >"$w/j000.job"
  printf 'memjob: %s\n' "--base 40M --peak 220M --ramp 4 --peak-at 5 --hold 0.2 --after 20M --duration 5.5" >"$w/j001.job"
  printf 'memjob: %s\n' "--peak 10M --duration 30" >"$w/j002.job"
  grep -q a.ready "$w/Makefile" ||
    sed -i 's/^\t$(CC)/\t@if [ $@ != j000.o ]; then while [ ! -e a.ready ]; do sleep 0.05; done; fi\n\t$(CC)/' "$w/Makefile"
  log="$E2E_TMP/run-$how.log"
  run=(env MEMGATE_TEST_MARKER="$marker" "$MEMGATE" run --jobs 3 --memory 400M --reserve 64M --history "$hist"
       -- make -s -C "$w" -j3)
  # $! is timeout, or memgate itself (setsid execs it: it leads a process group of its own).
  into_cg=(bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$cg")
  if [ "$how" = timeout ]; then
    "${into_cg[@]}" timeout -s KILL 300 "${run[@]}" >"$log" 2>&1 &
  else
    "${into_cg[@]}" setsid "${run[@]}" >"$log" 2>&1 &
  fi
  outer=$!
  froze() { grep -q '^memgate: freeze job' "$log"; }
  wait_for 60 froze || true
  froze || { cat "$log" >&2; fail "$how: memgate never froze a job"; }
  if [ "$how" = timeout ]; then mg=$(child_of "$outer"); else mg=$outer; fi
  [ -n "$mg" ] || fail "$how: no memgate below timeout"
  note "$how: frozen before the kill: $(stopped_or_frozen "$cg" | tr '\n' ' ')"
  [ -n "$(stopped_or_frozen "$cg")" ] || fail "$how: nothing was frozen before the kill"

  if [ "$how" = timeout ]; then kill -ALRM "$outer"; else kill -9 -- "-$mg"; fi
  start=$(now_ms)
  wait "$outer" 2>/dev/null || true
  dead="$cg/memgate-$mg"
  left="" build_left="" cgroup_left=""
  # The guard speaks once it has removed the cgroups: wait for that too.
  said() { grep -q "^memgate: warning: memgate run (pid $mg) was killed; its guard thawed and ended" "$log"; }
  while :; do
    left=$(stopped_or_frozen "$cg")
    build_left=$(marked_pids)
    cgroup_left=$([ -d "$dead" ] && echo "$dead" || true)
    [ -z "$left$build_left$cgroup_left" ] && said && break
    [ $(($(now_ms) - start)) -lt 10000 ] || break
    sleep 0.2
  done
  for p in $(marked_pids); do kill -9 "$p" 2>/dev/null || true; done
  find "$cg" -name cgroup.freeze -exec sh -c 'echo 0 >"$1"' _ {} \; 2>/dev/null || true
  cat "$log" >&2
  [ -z "$left" ] || fail "$how: still stopped or frozen 10 s after the kill: $(echo $left)"
  [ -z "$build_left" ] || fail "$how: the build still runs 10 s after the kill: $(echo $build_left)"
  [ -z "$cgroup_left" ] || fail "$how: $dead is left 10 s after the kill"
  said || fail "$how: the guard did not say what it did"
  note "$how: nothing frozen or left $(($(now_ms) - start)) ms after the kill"
done
echo PASS
