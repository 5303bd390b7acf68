# `memgate history` on its own (no build run): an empty history, a corrupt
# database file, and an unknown build id.
source "$(dirname "$0")/lib.sh"

db="$E2E_TMP/cache/history.db"
mkdir -p "$(dirname "$db")"  # a --history or MEMGATE_HISTORY in a missing directory is an error (history_forget.sh)

# No history yet: a friendly line, an empty list, exit 0, no file created.
out=$(MEMGATE_HISTORY="$db" "$MEMGATE" history) || fail "history without a database failed"
[[ "$out" == *"No builds recorded yet"* ]] || fail "no friendly line: $out"
out=$(MEMGATE_HISTORY="$db" "$MEMGATE" history --json) || fail "history --json without a database failed"
assert_eq '{"builds":[]}' "$(echo "$out" | tr -d ' \n')" "empty history as JSON"
[ ! -e "$db" ] || fail "listing an empty history created $db"

# XDG_CACHE_HOME is the default place.
out=$(env -u MEMGATE_HISTORY XDG_CACHE_HOME="$E2E_TMP/xdg" "$MEMGATE" history) || fail "history via XDG failed"
[[ "$out" == *"$E2E_TMP/xdg/memgate/history.db"* ]] || fail "XDG_CACHE_HOME not used: $out"

# A corrupt file: warned about, moved aside, replaced; the command still succeeds.
mkdir -p "$(dirname "$db")"
head -c 8192 /dev/urandom >"$db"
cp "$db" "$E2E_TMP/garbage"
out=$("$MEMGATE" history --json --history "$db" 2>"$E2E_TMP/err") || fail "history on a corrupt file failed: $(cat "$E2E_TMP/err")"
assert_eq '{"builds":[]}' "$(echo "$out" | tr -d ' \n')" "corrupt history lists nothing"
grep -q "memgate: warning: history database $db is corrupt; moved it to $db.corrupt-" "$E2E_TMP/err" ||
  fail "no corruption warning: $(cat "$E2E_TMP/err")"
moved=$(ls "$db".corrupt-* | head -1)
cmp -s "$moved" "$E2E_TMP/garbage" || fail "the corrupt file was not kept as $moved"
[ -s "$db" ] || fail "no new database at $db"

# The new database works: no warning the second time; unknown ids are errors.
"$MEMGATE" history --history "$db" 2>"$E2E_TMP/err2" >/dev/null || fail "history on the new database failed"
[ ! -s "$E2E_TMP/err2" ] || fail "unexpected messages: $(cat "$E2E_TMP/err2")"
status=0
"$MEMGATE" history --build 7 --history "$db" 2>"$E2E_TMP/err3" || status=$?
assert_eq 1 "$status" "exit status for an unknown build"
grep -q "memgate: error: no build #7 in $db" "$E2E_TMP/err3" || fail "bad message: $(cat "$E2E_TMP/err3")"
echo "ok"
