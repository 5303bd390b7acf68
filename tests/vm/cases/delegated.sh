#!/usr/bin/env bash
# An ordinary user with a delegated cgroup (it owns the directory, its
# cgroup.procs, cgroup.subtree_control and cgroup.threads, as systemd's
# Delegate=yes gives): memgate confines the build without root. doctor,
# run as that user, says it can confine.
source "$(dirname "$0")/vmlib.sh"
cg=$(cg_make deleg 600M)
chown 65534:65534 "$cg" "$cg/cgroup.procs" "$cg/cgroup.subtree_control" "$cg/cgroup.threads"
home="$E2E_TMP/nobody"
mkdir "$home" && chown 65534:65534 "$home" && chmod 755 "$E2E_TMP"
ln -s "$MEMJOB" "$home/cc"
for i in 1 2 3; do echo "memjob: --peak 60M --ramp 0.2 --hold 0.5 --duration 1" >"$home/a$i.job"; done
printf 'all: a1.o a2.o a3.o\n%%.o: %%.job\n\tcc -c $< -o $@\n' >"$home/Makefile"
as_nobody() {
  (cd "$home" && cg_run "$cg" setpriv --reuid=65534 --regid=65534 --clear-groups \
    env XDG_CACHE_HOME="$home/cache" PATH="$home:$PATH" "$@")
}
as_nobody "$MEMGATE" doctor --json >"$E2E_TMP/d.json" || fail "doctor --json failed"
grep -q '"can_confine": true' "$E2E_TMP/d.json" || fail "doctor cannot confine: $(grep confine "$E2E_TMP/d.json")"
assert_eq cgroup-v2 "$(json_str "$E2E_TMP/d.json" freezer)" "freezer"
jobs_now() { ls -d "$cg"/memgate-[0-9]*/job-*; }
watch_tree "$E2E_TMP/watch.log" jobs_now
set +e
as_nobody "$MEMGATE" run --reserve 64M --history "$home/h.db" -- make -s -j3 >"$E2E_TMP/run.log" 2>&1
rc=$?
set -e
stop_watch
cat "$E2E_TMP/run.log" >&2
assert_eq 0 "$rc" "exit status"
for i in 1 2 3; do head -n1 "$home/a$i.o" | grep -q '^memjob-ok ' || fail "no output a$i.o"; done
! grep -q '^memgate: degraded' "$E2E_TMP/run.log" || fail "the run was degraded in a delegated cgroup"
[ -s "$E2E_TMP/watch.log" ] || fail "no job cgroups were seen"
assert_eq "" "$(find "$cg" -mindepth 1 -type d)" "cgroups left behind"
assert_eq 0 "$(cg_oom_kills "$cg")" "OOM kills outside memgate's cgroup"
note "job cgroups made by uid 65534: $(sort -u "$E2E_TMP/watch.log" | wc -l)"
echo PASS
