#!/usr/bin/env bash
# Issue 4, "an ungated hog": a build step memgate does not gate allocates
# beyond the budget. It is contained inside memgate's cgroup, while a
# process beside the build, in the same test cgroup, keeps running.
source "$(dirname "$0")/lib.sh"
require_cgroups
cg=$(cg_make hog 3G)

# The neighbour: holds 200 MB in the test cgroup, outside the build.
cg_run "$cg" "$MEMJOB" --peak 200M --forever --ready "$E2E_TMP/neighbour.ready" &
neighbour=$!
for _ in $(seq 200); do [ -e "$E2E_TMP/neighbour.ready" ] && break; sleep 0.05; done
[ -e "$E2E_TMP/neighbour.ready" ] || fail "the neighbour did not start"

# The hog is not a compiler name, so no wrapper gates it.
set +e
cg_run "$cg" "$MEMGATE" run --memory 2G --history "$E2E_TMP/h.db" -- \
  sh -c "exec '$MEMJOB' --peak 4G --ramp 2 --duration 3" >"$E2E_TMP/run.log" 2>&1
rc=$?
set -e
cat "$E2E_TMP/run.log" >&2
kill -0 "$neighbour" 2>/dev/null || fail "the neighbour died"
assert_eq 137 "$rc" "the hog's fate (killed inside memgate's cgroup)"
assert_eq 0 "$(cg_oom_kills "$cg")" "OOM kills in the test cgroup itself"
kill "$neighbour"
wait "$neighbour" 2>/dev/null || true
echo "PASS"
