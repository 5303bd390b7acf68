#!/usr/bin/env bash
# tests/lib/cgroup.sh against fake cgroup trees (plain directories in a temp
# dir, pointed at with MEMGATE_CGROUP_FS and MEMGATE_PROC_CGROUP), so its v2
# path is checked on this v1 machine and its v1 path on v2 machines: which
# version it detects, where test cgroups go, the limit it writes, and how it
# reads OOM kills and peaks. v2 also checks the move into a leaf (a cgroup
# holding processes cannot give its children a memory controller) and its
# undo. Needs neither root nor cgroups. The real trees are exercised by the
# other suites and by tests/vm.
set -euo pipefail
lib="$(cd "$(dirname "$0")/../lib" && pwd)/cgroup.sh"
tmp=$(mktemp -d /tmp/memgate-cglib-fixture.XXXXXX)
sleeper=""
trap '[ -z "$sleeper" ] || kill "$sleeper" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
assert_eq() { [ "$1" == "$2" ] || fail "$3: expected '$1', got '$2'"; }

# Runs the rest of the arguments in a fresh shell with the library loaded
# against fake tree $1 (whose proc file is $1.cgroup).
with_tree() {
  local fs=$1
  shift
  MEMGATE_CGROUP_FS=$fs MEMGATE_PROC_CGROUP=$fs.cgroup LIB=$lib T=$tmp bash -euo pipefail -c '
    source "$LIB"
    cglib_init "$T/state"
    fail() { echo "FAIL: $*" >&2; exit 1; }
    assert_eq() { [ "$1" == "$2" ] || fail "$3: expected '\''$1'\'', got '\''$2'\''"; }
    '"$*"
}
mkdir "$tmp/state"

# --- v1: a memory and a freezer hierarchy, beside an empty cgroup2 mount
# (as on this project's dev machines).
v1="$tmp/v1"
mkdir -p "$v1/memory/ci/job" "$v1/freezer/ci" "$v1/unified"
printf '9:freezer:/ci\n4:memory:/ci/job\n0::/\n' >"$v1.cgroup"
: >"$v1/unified/cgroup.controllers"
echo 9223372036854771712 >"$v1/memory/memory.limit_in_bytes"
echo 9223372036854771712 >"$v1/memory/ci/job/memory.limit_in_bytes"
with_tree "$v1" '
  assert_eq v1 "$(cg_version)" "version"
  assert_eq "$MEMGATE_CGROUP_FS/memory/ci/job" "$(cg_base)" "base"
  assert_eq "$MEMGATE_CGROUP_FS/freezer/ci" "$(cg_self freezer)" "freezer dir"
  assert_eq max "$(cg_limit "$(cg_base)")" "a huge v1 limit is no limit"
  cg_prepare  # nothing to do on v1
  cg=$(cg_new t1 3G)
  assert_eq "$(cg_base)/t1" "$cg" "new cgroup"
  assert_eq 3G "$(cat "$cg/memory.limit_in_bytes")" "limit written"
  printf "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n" >"$cg/memory.oom_control"
  assert_eq 2 "$(cg_oom_kills "$cg")" "oom kills"
  echo 123456 >"$cg/memory.max_usage_in_bytes"
  assert_eq 123456 "$(cg_peak "$cg")" "peak"
  echo 1073741824 >"$cg/memory.limit_in_bytes"
  assert_eq 1073741824 "$(cg_limit "$cg")" "limit read"
  grep -qx "$cg" "$T/state/.cglib-cgroups" || fail "the new cgroup is not listed for cleanup"
'

# --- v2: the test shell sits with another process (a "login shell") in
# /user/session, which also has a child cgroup: a non-leaf cgroup that
# holds processes.
sleep 600 &
sleeper=$!
v2="$tmp/v2"
mkdir -p "$v2/user/session/other"
printf '0::/user/session\n' >"$v2.cgroup"
echo "cpuset cpu io memory pids" >"$v2/cgroup.controllers"
for d in "$v2/user" "$v2/user/session" "$v2/user/session/other"; do
  echo "cpu memory pids" >"$d/cgroup.controllers"
  echo domain >"$d/cgroup.type"
  : >"$d/cgroup.subtree_control"
  echo max >"$d/memory.max"
done
echo "memory pids" >"$v2/user/cgroup.subtree_control"
echo 2147483648 >"$v2/user/memory.max"
echo 1610612736 >"$v2/user/memory.high"
printf '%s\n' "$sleeper" "$sleeper" >"$v2/user/session/cgroup.procs"
with_tree "$v2" '
  s=$MEMGATE_CGROUP_FS/user/session
  assert_eq v2 "$(cg_version)" "version"
  assert_eq "$s" "$(cg_base)" "base before the move"
  assert_eq 1610612736 "$(cg_limit "$MEMGATE_CGROUP_FS/user")" "v2 limit: the smaller of memory.max and memory.high"
  assert_eq max "$(cg_limit "$s")" "no limit"
  cg_prepare
  assert_eq "'"$sleeper"'" "$(sort -u "$s/memgate-test-leaf/cgroup.procs")" "processes moved into the leaf"
  assert_eq "+memory +cpu" "$(tr "\n" " " <"$s/cgroup.subtree_control" | sed "s/ $//")" "controllers enabled"
  grep -qx "$s" "$T/state/.cglib-prepared" || fail "the leaf move is not noted for undo"
  cg=$(cg_new t2 256M)
  assert_eq "$s/t2" "$cg" "new cgroup"
  assert_eq 256M "$(cat "$cg/memory.max")" "limit written to memory.max"
  printf "low 0\nhigh 0\nmax 9\noom 4\noom_kill 4\n" >"$cg/memory.events"
  assert_eq 4 "$(cg_oom_kills "$cg")" "oom kills from memory.events"
  printf "low 0\nhigh 0\nmax 1\noom 1\noom_kill 1\n" >"$cg/memory.events.local"
  assert_eq 1 "$(cg_oom_kills "$cg")" "oom kills of the cgroup itself (memory.events.local)"
  echo 5000 >"$cg/memory.current"
  assert_eq 5000 "$(cg_peak "$cg")" "no memory.peak and no sampler: memory.current"
  echo 7777 >"$cg/memory.peak"
  assert_eq 7777 "$(cg_peak "$cg")" "memory.peak"
  echo "cpu memory" >"$cg/cgroup.controllers"
  kid=$(cg_child "$cg" inner 1G)
  assert_eq "+memory +cpu" "$(tr "\n" " " <"$cg/cgroup.subtree_control" | sed "s/ $//")" "cg_child enables the controllers in its parent"
  assert_eq 1G "$(cat "$kid/memory.max")" "child limit"
  # Cleanup: a fake tree is made of plain files, so rmdir fails; what must
  # hold is that the undo ran: controllers off, processes moved back.
  rm -rf "$cg"
  cglib_cleanup 2>/dev/null
  assert_eq "+memory +cpu -cpu -memory" "$(tr "\n" " " <"$s/cgroup.subtree_control" | sed "s/ $//")" "controllers disabled again"
  # (A fake cgroup.procs only grows: the two original lines, then the writes back.)
  [ "$(wc -l <"$s/cgroup.procs")" -gt 2 ] || fail "no process was moved back"
  assert_eq "'"$sleeper"'" "$(sort -u "$s/cgroup.procs")" "processes moved back"
'

# --- v2 with a sampled peak: no memory.peak (kernels before 5.19).
v2b="$tmp/v2b"
mkdir -p "$v2b/a"
printf '0::/\n' >"$v2b.cgroup"
echo "memory" >"$v2b/cgroup.controllers"
: >"$v2b/cgroup.subtree_control"  # the real root: no cgroup.type, needs no leaf
with_tree "$v2b" '
  cg_prepare
  [ ! -d "$MEMGATE_CGROUP_FS/memgate-test-leaf" ] || fail "the root needs no leaf"
  assert_eq "+memory" "$(cat "$MEMGATE_CGROUP_FS/cgroup.subtree_control")" "memory enabled in the root"
  cg=$(cg_new t3 1G)
  echo 100 >"$cg/memory.current"
  sampler=$(cg_sample_peak "$cg")
  [ -n "$sampler" ] || fail "no sampler without memory.peak"
  sleep 0.3; echo 900 >"$cg/memory.current"; sleep 0.3; echo 200 >"$cg/memory.current"; sleep 0.3
  kill "$sampler"
  assert_eq 900 "$(cg_peak "$cg")" "sampled peak"
  rm -rf "$cg"
'
echo "PASS"
