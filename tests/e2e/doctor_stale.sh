#!/usr/bin/env bash
# A fake `cicc` holding ~100 MB, orphaned by a double fork, is listed by
# `memgate doctor` with its RSS; `--kill-stale` ends it and nothing else: a
# second cicc whose parent is a live shell keeps running.
#
# Cgroups, beside doctor's own: a dead memgate's (memgate-99998, with a
# frozen process inside, no owner lock) is listed, thawed, emptied and
# removed; a live run's (memgate-99999, busy with a process, its owner
# lock held from outside the namespace, where its pid means nothing) is
# neither listed nor touched, and --kill-stale still succeeds.
#
# Everything runs in a private pid namespace (so doctor sees only the
# processes this test started, never another build on this machine) inside
# a memory cgroup with a hard limit and, on v1, a freezer cgroup of its own
# (the freezer root holds every other run's memgate-<pid> cgroups): doctor
# sees no cgroup but the ones made here.
source "$(dirname "$0")/lib.sh"
require_cgroups
# Debian's python3 starts in a tenth of the time of a pyenv shim.
PY=$(command -v /usr/bin/python3 || command -v python3) || { echo "SKIP: no python3"; exit 77; }
unshare --pid --fork --mount-proc true 2>/dev/null || { echo "SKIP: cannot create a pid namespace"; exit 77; }

# The fake compiler: names itself cicc, touches MB megabytes, reports its pid
# on a fifo once they are resident, then waits to be killed.
cat >"$E2E_TMP/fake_cicc.py" <<'PY'
import ctypes, os, signal, sys
ctypes.CDLL(None).prctl(15, b"cicc", 0, 0, 0)  # PR_SET_NAME
held = b"\x01" * (int(sys.argv[2]) << 20)
with open(sys.argv[1], "w") as ready:
    ready.write(f"{os.getpid()}\n")
while True:
    signal.pause()
PY

# Runs as pid 1 of the namespace: the init that orphans are reparented to.
cat >"$E2E_TMP/init.sh" <<'SH'
bash "$T/scenario.sh"
SH

cat >"$E2E_TMP/scenario.sh" <<'SH'
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
pids=()
# Thawed first: a frozen process cannot die, and pid 1's exit waits for it.
thaw() { for d in ${DEAD_DIRS:-}; do [ ! -e "$d/freezer.state" ] || echo THAWED >"$d/freezer.state"; done; }
trap 'thaw; for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done' EXIT
mkfifo "$T/orphan.ready" "$T/sentinel.ready"

# Double fork: the subshell exits at once, so the fake cicc's parent becomes pid 1.
( "$PY" "$T/fake_cicc.py" "$T/orphan.ready" 100 & )
read -r orphan <"$T/orphan.ready"
pids+=("$orphan")
# The sentinel is a child of this (live, non-init) shell: a compile in progress.
"$PY" "$T/fake_cicc.py" "$T/sentinel.ready" 10 &
read -r sentinel <"$T/sentinel.ready"
pids+=("$sentinel")
[ "$(awk '{print $4}' /proc/$orphan/stat)" = 1 ] || fail "the orphan's parent is not pid 1"

"$MEMGATE" doctor --json >"$T/before.json" || fail "doctor --json failed"
"$PY" - "$T/before.json" "$orphan" <<'PY' || fail "doctor --json did not list the orphan correctly: $(cat "$T/before.json")"
import json, sys
d = json.load(open(sys.argv[1]))
stale = d["stale_processes"]
assert [s["pid"] for s in stale] == [int(sys.argv[2])], stale
assert stale[0]["comm"] == "cicc", stale
rss = stale[0]["rss_bytes"]
assert 90 << 20 <= rss <= 180 << 20, f"rss {rss} is not about 100 MB"
assert "1 stale compiler process" in d["verdict"], d["verdict"]
PY

# The dead run's leftover: a process inside its cgroup (frozen on v1).
sleep 600 &
left=$!
disown "$left"
pids+=("$left")
for d in $DEAD_DIRS; do echo "$left" >"$d/cgroup.procs"; done
for d in $DEAD_DIRS; do [ -e "$d/freezer.state" ] && echo FROZEN >"$d/freezer.state"; done
"$MEMGATE" doctor --json >"$T/cgroups.json" || fail "doctor --json failed"
"$PY" - "$T/cgroups.json" <<'PY' || fail "doctor --json did not list the dead run's cgroup alone: $(cat "$T/cgroups.json")"
import json, sys
cgs = json.load(open(sys.argv[1]))["stale_cgroups"]
assert [(c["pid"], c["processes"]) for c in cgs] == [(99998, 1)], cgs
PY

"$MEMGATE" doctor --kill-stale >"$T/kill.out" 2>&1 || fail "doctor --kill-stale failed: $(cat "$T/kill.out")"
grep -Eq "^ +memgate pid +99998 +thawed, emptied and removed" "$T/kill.out" ||
  fail "kill-stale did not clean the dead run's cgroup: $(cat "$T/kill.out")"
! grep -q 99999 "$T/kill.out" || fail "kill-stale touched the live run's cgroup: $(cat "$T/kill.out")"
for d in $DEAD_DIRS; do [ ! -e "$d" ] || fail "$d is still there"; done
for d in $LIVE_DIRS; do [ -d "$d" ] || fail "the live run's $d was removed"; done
grep -Eq "^ +$orphan +cicc +terminated" "$T/kill.out" || fail "kill-stale did not report ending $orphan: $(cat "$T/kill.out")"
# kill_stale waits for the exit itself; a zombie awaiting pid 1's reaping counts as gone.
state=$(awk '{print $3}' "/proc/$orphan/stat" 2>/dev/null || echo gone)
[ "$state" = gone ] || [ "$state" = Z ] || fail "the orphan is still running (state $state)"
state=$(awk '{print $3}' "/proc/$sentinel/stat" 2>/dev/null || echo gone)
[ "$state" = S ] || [ "$state" = R ] || fail "the sentinel was touched (state $state)"

"$MEMGATE" doctor --json >"$T/after.json" || fail "doctor --json failed after the kill"
"$PY" -c 'import json, sys; assert json.load(open(sys.argv[1]))["stale_processes"] == []' "$T/after.json" ||
  fail "stale processes remain: $(cat "$T/after.json")"
echo "ok"
SH

cg=$(cg_make stale 1G)
fz=""
if [ "$(cg_version)" = v1 ]; then fz=$(cglib_locked "$(cg_self freezer)" cg_child "$(cg_self freezer)" "memgate-test-$E2E_NAME-$$-fz"); fi
dirs_of() { echo "$cg/$1" ${fz:+"$fz/$1"}; }
dead=$(dirs_of memgate-99998) live=$(dirs_of memgate-99999)
for d in $dead $live; do mkdir "$d"; done

# The live run: a process in its cgroup holding its owner lock (as memgate
# run does, an flock on each directory), outside the namespace.
mkfifo "$E2E_TMP/holder.ready"
(
  for d in $live; do
    echo "$BASHPID" >"$d/cgroup.procs"
    exec {fd}<"$d"
    flock -n "$fd" || exit 1
  done
  echo locked >"$E2E_TMP/holder.ready"
  exec sleep 600  # keeps the locked fds
) &
holder=$!
disown "$holder"
exec {ready}<>"$E2E_TMP/holder.ready"  # read-write: opening cannot block if the holder failed
read -t 30 -r -u "$ready" _ || fail "the live run's holder did not take its locks"

T=$E2E_TMP MEMGATE=$MEMGATE PY=$PY DEAD_DIRS=$dead LIVE_DIRS=$live FZ=$fz cg_run "$cg" bash -c \
  '[ -z "$FZ" ] || echo $$ >"$FZ/cgroup.procs"; exec unshare --pid --fork --mount-proc bash "$T/init.sh"' ||
  fail "the stale-process scenario failed"
kill -0 "$holder" || fail "the live run's process was killed"
echo "ok"
