#!/usr/bin/env bash
# Where no cgroup can be made (here: an unprivileged user below root's
# cgroups), memgate says so, measures each job's process tree from /proc,
# and the build still succeeds.
source "$(dirname "$0")/lib.sh"
require_cgroups
command -v runuser >/dev/null || { echo "SKIP: no runuser"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to switch to nobody"; exit 77; }
# nobody must reach the binaries and a directory of its own.
runuser -u nobody -- test -x "$MEMGATE" || { echo "SKIP: nobody cannot run $MEMGATE"; exit 77; }
chmod 755 "$E2E_TMP"
home="$E2E_TMP/nobody"
mkdir "$home" && chown nobody "$home"
ln -s "$MEMJOB" "$home/cc"
echo "memjob: --peak 300M --ramp 0.2 --hold 1.5 --duration 2" >"$home/a.job"

cg=$(cg_make nocg 1G)
set +e
(cd "$home" && cg_run "$cg" runuser -u nobody -- env XDG_CACHE_HOME="$home/cache" PATH="$home:$PATH" \
  "$MEMGATE" run --history "$home/h.db" -- cc -c a.job -o a.o) >"$E2E_TMP/run.log" 2>&1
rc=$?
set -e
cat "$E2E_TMP/run.log" >&2
assert_eq 0 "$rc" "exit status"
grep -q "warning: cannot create cgroup .*: jobs are measured from /proc" "$E2E_TMP/run.log" || fail "memgate did not say it cannot use cgroups"
grep -q "^memgate: degraded: no cgroups (cannot create cgroup .*): jobs measured from /proc; build not confined; jobs paused with SIGSTOP$" "$E2E_TMP/run.log" || fail "the summary does not say the run was degraded"
head -n1 "$home/a.o" | grep -q '^memjob-ok ' || fail "no output"
runuser -u nobody -- "$MEMGATE" history --json --build last --history "$home/h.db" >"$E2E_TMP/h.json"
peak=$(json_get "$E2E_TMP/h.json" 'j["jobs"][0]["peak_bytes"]')
# The peak comes from sampling the tree's RSS: close to 300 MiB.
python3 -c "import sys; sys.exit(0 if 280*2**20 <= $peak <= 400*2**20 else 1)" || fail "peak from /proc: $peak"
echo "PASS"
