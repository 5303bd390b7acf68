#!/usr/bin/env bash
# Issue 12, item 7: a locked history database stalled `memgate run` for
# 10 s (the busy timeout) and the build's record was lost. Now a run waits
# at most 1 s for the lock; a record the database will not take goes to a
# side file beside it (<db>.pending-<pid>-<n>, created O_EXCL|O_NOFOLLOW),
# and the next run merges it. Two locks, as another process may hold them:
# a write transaction (readers still read: WAL), and an exclusive lock
# (nobody reads either: the run has no history at all, and still keeps
# its record).
source "$(dirname "$0")/lib.sh"
[ -x /usr/bin/python3 ] || { echo "SKIP: no /usr/bin/python3"; exit 77; }
export PATH="$(fake_compilers):$PATH"
cd "$E2E_TMP"
w="$E2E_TMP/work"
memjob_workload "$w" "--peak 5M --duration 0.1"
db="$E2E_TMP/h.db"
"$MEMGATE" run --history "$db" -q -- true

# lock KIND: holds the database locked until ./release exists (at most 60 s).
lock() {
  rm -f locked release
  /usr/bin/python3 - "$db" "$1" <<'PY' &
import os, sqlite3, sys, time
db, kind = sys.argv[1], sys.argv[2]
c = sqlite3.connect(db, isolation_level=None, timeout=0)
if kind == "exclusive":
    c.execute("PRAGMA locking_mode=EXCLUSIVE")
    c.execute("BEGIN EXCLUSIVE")
else:
    c.execute("BEGIN IMMEDIATE")
c.execute("CREATE TABLE IF NOT EXISTS lock_probe (x)")
open("locked", "w").close()
deadline = time.time() + 60
while not os.path.exists("release") and time.time() < deadline:
    time.sleep(0.05)
c.execute("ROLLBACK")
c.close()
PY
  locker=$!
  for _ in $(seq 1 200); do [ -e locked ] && return; sleep 0.05; done
  fail "the database was not locked"
}
unlock() {
  touch release
  wait "$locker"
}

builds() { "$MEMGATE" history --history "$db" --json | json_get /dev/stdin 'len(j["builds"])'; }

for kind in write exclusive; do
  note "a $kind lock held while a build ends"
  before=$(builds)
  lock "$kind"
  start=$(date +%s.%N)
  "$MEMGATE" run --history "$db" -- make -s -C "$w" "KIND=$kind" >out.txt 2>err.txt ||
    { cat err.txt >&2; fail "the build failed"; }
  note "the run took $(echo "$(date +%s.%N) - $start" | bc) s with the database locked"
  cat err.txt >&2
  grep -q "this build's record went to $db.pending-" err.txt || fail "no side file named"
  assert_eq 1 "$(ls "$db".pending-* | grep -vc -e '-wal$' -e '-shm$')" "side files"
  unlock
  rm -f "$w"/*.o
  "$MEMGATE" run --history "$db" -- true >out.txt 2>err.txt
  grep -q "merged 1 build record(s)" err.txt || fail "the side file was not merged: $(cat err.txt)"
  ls "$db".pending-* 2>/dev/null && fail "side files left after the merge"
  assert_eq $((before + 1)) "$(builds)" "builds in history (the locked-out one; the merging 'true' gated nothing and is not recorded)"
  "$MEMGATE" history --history "$db" | grep -q "KIND=$kind" || fail "the locked-out build is not in history"
done
echo "PASS"
