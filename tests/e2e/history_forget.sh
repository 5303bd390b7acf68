#!/usr/bin/env bash
# Issue 16: history that can be pruned, without noise, where it was asked
# to be.
#  1. a build that gated no job (`memgate run -- true`, an up-to-date
#     rebuild) is not recorded, unless --record-empty;
#  2. `history --forget ID`, `--prune-older-than AGE`, `--clear` remove
#     builds and their jobs, one at a time, with clear errors for a bad
#     AGE, an unknown id or two at once; what was learned goes with them
#     (the next build is predicted from scratch);
#  3. --history in a directory that does not exist is an error and creates
#     nothing; only the default location is made.
source "$(dirname "$0")/lib.sh"
export PATH="$(fake_compilers):$PATH"
cd "$E2E_TMP"
w="$E2E_TMP/w"
memjob_workload "$w" "--peak 5M --duration 0.1" "--peak 6M --duration 0.1"
db="$E2E_TMP/h.db"

build() { make -s -C "$w" clean && "$MEMGATE" run -q --history "$db" "$@" -- make -s -C "$w" -j2; }
history_list() { "$MEMGATE" history --json --limit 1000 --history "$db" >"$E2E_TMP/list.json"; }
count() { history_list && json_get "$E2E_TMP/list.json" 'len(j["builds"])'; }
ids() { history_list && json_get "$E2E_TMP/list.json" '" ".join(str(b["id"]) for b in j["builds"])'; }
# expect_status STATUS WANT_IN_STDERR ARGS...: memgate ARGS exits STATUS and says WANT.
expect_status() {
  local want_status=$1 want=$2 status=0
  shift 2
  "$MEMGATE" "$@" >"$E2E_TMP/out" 2>"$E2E_TMP/err" || status=$?
  assert_eq "$want_status" "$status" "exit status of memgate $*"
  grep -qF -- "$want" "$E2E_TMP/err" || fail "memgate $* does not say '$want': $(cat "$E2E_TMP/err")"
}

note "1. builds that gate nothing are left out"
"$MEMGATE" run -q --history "$db" -- true
assert_eq 0 "$(count)" "builds after 'memgate run -- true'"
build
assert_eq 1 "$(count)" "builds after a real build"
"$MEMGATE" run -q --history "$db" -- make -s -C "$w" -j2  # up to date: nothing to gate
assert_eq 1 "$(count)" "builds after an up-to-date rebuild"
"$MEMGATE" run -q --record-empty --history "$db" -- true
assert_eq 2 "$(count)" "builds after 'memgate run --record-empty -- true'"
assert_eq 0 "$(json_get "$E2E_TMP/list.json" 'j["builds"][0]["job_count"]')" "jobs of the recorded empty build"

note "2. --forget, --prune-older-than, --clear"
build
build
assert_eq "4 3 2 1" "$(ids)" "builds before forgetting"
"$MEMGATE" history --forget 2 --history "$db" 2>"$E2E_TMP/err" || fail "--forget 2: $(cat "$E2E_TMP/err")"
grep -qx "memgate: forgot build #2: 1 build(s) and 0 job(s) removed from $db, 3 build(s) left" "$E2E_TMP/err" ||
  fail "--forget's message: $(cat "$E2E_TMP/err")"
assert_eq "4 3 1" "$(ids)" "builds after --forget 2"
expect_status 1 "memgate: error: no build #2 in $db" history --forget 2 --history "$db"

# Build 1 started 40 days ago.
python3 - "$db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("UPDATE builds SET start_unix = start_unix - 40 * 86400, end_unix = end_unix - 40 * 86400 WHERE id = 1")
c.commit()
PY
"$MEMGATE" history --prune-older-than 30d --history "$db" 2>"$E2E_TMP/err" || fail "--prune-older-than 30d: $(cat "$E2E_TMP/err")"
grep -qx "memgate: forgot builds started more than 30d ago: 1 build(s) and 2 job(s) removed from $db, 2 build(s) left" \
  "$E2E_TMP/err" || fail "--prune-older-than's message: $(cat "$E2E_TMP/err")"
assert_eq "4 3" "$(ids)" "builds after --prune-older-than 30d"
python3 - "$db" <<'PY' || fail "jobs of removed builds are left in the database"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
orphans = c.execute("SELECT count(*) FROM jobs WHERE build_id NOT IN (SELECT id FROM builds)").fetchone()[0]
assert orphans == 0, orphans
PY

for bad in 30 30days 1y -3d 1.5d; do
  expect_status 2 "e.g. 30d, 12h or 2w" history --prune-older-than "$bad" --history "$db"
done
expect_status 2 "excludes" history --forget 3 --clear --history "$db"
expect_status 2 "excludes" history --prune-older-than 1d --forget 3 --history "$db"
expect_status 2 "excludes" history --clear --build last --history "$db"
expect_status 2 "excludes" history --clear export "$E2E_TMP/p.json" --history "$db"
assert_eq "4 3" "$(ids)" "builds after refused removals"
expect_status 1 "memgate: error: no build history at $E2E_TMP/none.db" history --clear --history "$E2E_TMP/none.db"
[ ! -e "$E2E_TMP/none.db" ] || fail "--clear created a database"

"$MEMGATE" history --clear --history "$db" 2>"$E2E_TMP/err" || fail "--clear: $(cat "$E2E_TMP/err")"
grep -qx "memgate: forgot every build: 2 build(s) and 4 job(s) removed from $db, 0 build(s) left" "$E2E_TMP/err" ||
  fail "--clear's message: $(cat "$E2E_TMP/err")"
assert_eq 0 "$(count)" "builds after --clear"
expect_status 1 "no build with gated jobs is recorded" history --build last --history "$db"
# Nothing learned is left: the next build is predicted from defaults, and
# its id is new (ids are never reused).
build
assert_eq 5 "$(ids)" "the id after --clear"
"$MEMGATE" history --json --build last --history "$db" >"$E2E_TMP/after.json"
json_get "$E2E_TMP/after.json" '"\n".join(x["predicted_source"] for x in j["jobs"])' | grep -qx history &&
  fail "a job was predicted from a forgotten build's history"

note "3. --history in a directory that does not exist"
missing="$E2E_TMP/no/such/x.db"
msg="memgate: error: cannot use history database $missing: its directory $E2E_TMP/no/such does not exist"
expect_status 125 "$msg" run --history "$missing" -- true
expect_status 125 "$msg" run -q --history "$missing" -- true
export MEMGATE_HISTORY="$missing"
expect_status 125 "$msg" run -- true
unset MEMGATE_HISTORY
expect_status 1 "$msg" history --history "$missing"
expect_status 1 "$msg" history --build last --history "$missing"
"$MEMGATE" history export "$E2E_TMP/p.json" --history "$db" 2>/dev/null || fail "history export"
expect_status 1 "$msg" history import "$E2E_TMP/p.json" --history "$missing"
expect_status 1 "memgate: error:" report --history "$missing"
expect_status 1 "$msg" plan --history "$missing"
[ ! -e "$E2E_TMP/no" ] || fail "a command created $E2E_TMP/no"
note "the default location is created"
XDG_CACHE_HOME="$E2E_TMP/fresh" "$MEMGATE" run -q -- true || fail "run with a fresh default location"
[ -d "$E2E_TMP/fresh/memgate" ] || fail "the default location $E2E_TMP/fresh/memgate was not created"
assert_eq 700 "$(stat -c %a "$E2E_TMP/fresh/memgate")" "mode of the default history directory"
echo "PASS"
