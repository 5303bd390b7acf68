#!/usr/bin/env bash
# memgate's whole process group SIGKILLed while a job is frozen, as CI
# runners cancel a job: once through `timeout -s KILL` (made to fire at
# that moment with SIGALRM, which is how timeout's own timer ends), once
# with `kill -9 -- -PGID`. The wrappers die in the same instant as memgate,
# so none is left to thaw its job; before, the frozen job stayed FROZEN
# (its compiler in D state, reparented to init) until the next memgate run.
# Now memgate's guard, in a session of its own, thaws and ends what is
# left and removes the cgroups: within 10 s nothing is frozen, nothing of
# the build runs, and no memgate-<pid> cgroup is left, with no other
# memgate run in between. (tests/vm/cases/group_killed.sh: cgroup v2.)
source "$(dirname "$0")/lib.sh"
require_cgroups
[ "$(cg_version)" = v1 ] || { echo "SKIP: this is the cgroup v1 case (v2: tests/vm/cases/group_killed.sh)"; exit 77; }
command -v timeout >/dev/null && command -v setsid >/dev/null || { echo "SKIP: no timeout or setsid"; exit 77; }
export PATH="$(fake_compilers):$PATH"
w="$E2E_TMP/work"
hist="$E2E_TMP/h.db"
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

for how in timeout kill-group; do
  marker="memgate-group-$how-$$-$RANDOM"
  marked_pids() { grep -ls "MEMGATE_TEST_MARKER=$marker" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true; }
  rm -rf "$w"
  # A holds 400 MB until released; B grows and is frozen; C runs on, small.
  memjob_workload "$w" \
    "--peak 400M --ramp 0.2 --hold 0.5 --hold-until $w/a.release --after 20M --ready $w/a.ready" \
    "--base 100M --peak 800M --ramp 6 --peak-at 7 --hold 0.2 --after 20M --duration 7.5" \
    "--peak 10M --duration 30"
  sed -i 's/^\t$(CC)/\t@if [ $@ != j000.o ]; then while [ ! -e a.ready ]; do sleep 0.05; done; fi\n\t$(CC)/' "$w/Makefile"
  log="$E2E_TMP/run-$how.log"
  cg=$(cg_make "group-$how" 2G)
  run=(env MEMGATE_TEST_MARKER="$marker" "$MEMGATE" run --jobs 3 --memory 1200M --reserve 256M --history "$hist"
       -- make -s -C "$w" -j3)
  # $! is timeout, or memgate itself (setsid execs it: it leads a process group of its own).
  into_cg=(bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$cg")
  if [ "$how" = timeout ]; then
    "${into_cg[@]}" timeout -s KILL 300 "${run[@]}" >"$log" 2>&1 &
  else
    "${into_cg[@]}" setsid "${run[@]}" >"$log" 2>&1 &
  fi
  outer=$!
  until grep -q '^memgate: freeze job' "$log" || ! kill -0 "$outer" 2>/dev/null; do sleep 0.1; done
  grep -q '^memgate: freeze job' "$log" || { cat "$log" >&2; fail "$how: memgate never froze a job"; }
  if [ "$how" = timeout ]; then mg=$(child_of "$outer"); else mg=$outer; fi
  [ -n "$mg" ] || fail "$how: no memgate below timeout"
  fz="$(cg_self freezer)/memgate-$mg"
  mem="$cg/memgate-$mg"
  frozen() {
    local pid f
    for pid in $(marked_pids); do
      [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = T ] && echo "stopped:$pid"
    done
    for f in $(find "$fz" -name freezer.state 2>/dev/null); do
      grep -qxE 'FROZEN|FREEZING' "$f" && echo "frozen:${f%/*}"
    done
    return 0
  }
  note "$how: frozen before the kill: $(frozen | tr '\n' ' ')"
  [ -n "$(frozen)" ] || fail "$how: nothing was frozen before the kill"

  if [ "$how" = timeout ]; then kill -ALRM "$outer"; else kill -9 -- "-$mg"; fi
  start=$(now_ms)
  wait "$outer" 2>/dev/null || true
  left="" build_left="" cgroups_left=""
  # The guard speaks once it has removed the cgroups: wait for that too.
  said() { grep -q "^memgate: warning: memgate run (pid $mg) was killed; its guard thawed and ended" "$log"; }
  while :; do
    left=$(frozen)
    build_left=$(marked_pids)
    cgroups_left=$(ls -d "$fz" "$mem" 2>/dev/null || true)
    [ -z "$left$build_left$cgroups_left" ] && said && break
    [ $(($(now_ms) - start)) -lt 10000 ] || break
    sleep 0.2
  done
  # Whatever the outcome, end what is left before asserting.
  cglib_thaw_tree "$fz"
  for p in $(marked_pids); do kill -9 "$p" 2>/dev/null || true; done
  cat "$log" >&2
  [ -z "$left" ] || fail "$how: still frozen 10 s after the kill: $(echo $left)"
  [ -z "$build_left" ] || fail "$how: the build still runs 10 s after the kill: $(echo $build_left)"
  [ -z "$cgroups_left" ] || fail "$how: cgroups left 10 s after the kill: $(echo $cgroups_left)"
  said || fail "$how: the guard did not say what it did"
  note "$how: nothing frozen or left $(($(now_ms) - start)) ms after the kill"
  cg_destroy "$fz"
done
echo PASS
