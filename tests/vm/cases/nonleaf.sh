#!/usr/bin/env bash
# memgate started in a cgroup that holds other processes and has a child
# cgroup, as from a login shell in its session scope. memgate moves the
# cgroup's processes into a leaf, enables the memory controller, confines
# the build below it (a memgate-<pid> with a limit, job cgroups), and puts
# everything back when it ends: the "shell" lives on, back where it was.
source "$(dirname "$0")/vmlib.sh"
export PATH="$(fake_compilers):$PATH"
w="$E2E_TMP/work"
specs=()
for i in $(seq 0 5); do specs+=("--peak 50M --ramp 0.3 --hold 0.5 --duration 1.0"); done
memjob_workload "$w" "${specs[@]}"
cg=$(cg_make nonleaf 600M)
mkdir "$cg/other"  # a child without controllers, which a cgroup with processes may have
# Not through cg_run: $! must be the sleep's own pid (bash -c execs it).
bash -c 'echo $$ >"$1/cgroup.procs" && exec sleep 1000' _ "$cg" &
shell=$!
in_cg() { grep -qx "$shell" "$cg/cgroup.procs"; }
wait_for 20 in_cg || fail "the stand-in shell is not in $cg"

# Watch the tree while the build runs.
look() {
  local d
  for d in "$cg"/memgate-[0-9]*; do
    [ -d "$d" ] && echo "limit $(cat "$d/memory.max") jobs $(ls -d "$d"/job-* | wc -l)"
  done
  grep -qx "$shell" "$cg/memgate-leaf/cgroup.procs" && echo "shell in leaf"
}
watch_tree "$E2E_TMP/watch.log" look
set +e
cg_run "$cg" "$MEMGATE" run --jobs 4 --memory 400M --reserve 64M --history "$E2E_TMP/h.db" -- make -s -C "$w" -j4 \
  >"$E2E_TMP/run.log" 2>&1
rc=$?
set -e
stop_watch
cat "$E2E_TMP/run.log" >&2
assert_eq 0 "$rc" "exit status"
! grep -q '^memgate: degraded' "$E2E_TMP/run.log" || fail "the run was degraded"
check_memjob_outputs "$w" || fail "outputs missing or wrong"
grep -q '^shell in leaf$' "$E2E_TMP/watch.log" || fail "the shell was never moved into memgate-leaf"
grep -Eq '^limit [0-9]+ jobs [1-9]' "$E2E_TMP/watch.log" || fail "no limited build cgroup with job cgroups: $(sort -u "$E2E_TMP/watch.log")"
kill -0 "$shell" || fail "the shell died"
grep -qx "$shell" "$cg/cgroup.procs" || fail "the shell is not back in $cg"
assert_eq "other" "$(cd "$cg" && find . -mindepth 1 -type d | sed 's|^\./||')" "cgroups in $cg after the run"
assert_eq "" "$(cat "$cg/cgroup.subtree_control")" "controllers left enabled in $cg"
assert_eq 0 "$(cg_oom_kills "$cg")" "OOM kills outside memgate's cgroup"
kill "$shell"
note "$(sort -u "$E2E_TMP/watch.log" | grep limit | tail -n1)"
echo PASS
