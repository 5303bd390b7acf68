#!/usr/bin/env bash
# Issue 16: `memgate run --summary-json FILE` writes the run's record with
# the keys (and values) of `memgate history --build ID --json`, for CI
# dashboards; a build that was not recorded has "id": null. memgate often
# runs as root: the file is written to a fresh temp file beside it and
# renamed, so a symlink planted at FILE is replaced, never written through.
source "$(dirname "$0")/lib.sh"
export PATH="$(fake_compilers):$PATH"
cd "$E2E_TMP"
w="$E2E_TMP/w"
memjob_workload "$w" "--peak 5M --duration 0.1" "--peak 9M --duration 0.2" "--peak 7M --duration 0.1"
db="$E2E_TMP/h.db"

note "the record of a real build equals history's"
"$MEMGATE" run -q --history "$db" --summary-json "$E2E_TMP/s.json" -- make -s -C "$w" -j2 ||
  fail "the build failed"
id=$(json_get "$E2E_TMP/s.json" 'j["build"]["id"]')
[ "$id" -ge 1 ] || fail "no build id in the summary JSON: $id"
"$MEMGATE" history --build "$id" --json --history "$db" >"$E2E_TMP/h.json"
python3 - "$E2E_TMP/s.json" "$E2E_TMP/h.json" <<'PY' || fail "--summary-json differs from history --build --json"
import json, sys
s, h = (json.load(open(p)) for p in sys.argv[1:])
def keys(x, at=""):
    if isinstance(x, dict):
        return {at + "/" + k for k in x} | set().union(*(keys(v, at + "/" + k) for k, v in x.items()))
    if isinstance(x, list):
        return set().union(*(keys(v, at + "[]") for v in x)) if x else set()
    return set()
assert keys(s) == keys(h), keys(s) ^ keys(h)
assert s == h, "same keys, different values"
assert len(s["jobs"]) == 3 and s["build"]["job_count"] == 3
assert [j["peak_bytes"] for j in s["jobs"]] == sorted((j["peak_bytes"] for j in s["jobs"]), reverse=True)
PY
[ "$(stat -c %a "$E2E_TMP/s.json")" = "$(printf '%o' $((0644 & ~$(umask))))" ] ||
  fail "mode $(stat -c %a "$E2E_TMP/s.json") is not what the umask gives"

note "a build that gated nothing: not recorded, id null, its exit status kept"
status=0
"$MEMGATE" run -q --history "$db" --summary-json "$E2E_TMP/e.json" -- sh -c 'exit 3' || status=$?
assert_eq 3 "$status" "the build's own exit status"
assert_eq "None 0 3" "$(json_get "$E2E_TMP/e.json" '"%s %d %d" % (j["build"]["id"], len(j["jobs"]), j["build"]["exit_status"])')" \
  "id, jobs and exit status of an unrecorded build"
"$MEMGATE" run -q --record-empty --history "$db" --summary-json "$E2E_TMP/r.json" -- true
[ "$(json_get "$E2E_TMP/r.json" 'j["build"]["id"]')" -gt "$id" ] || fail "--record-empty gave no id"

note "a symlink planted at FILE is replaced, not written through"
echo keep >"$E2E_TMP/victim"
ln -s "$E2E_TMP/victim" "$E2E_TMP/link.json"
"$MEMGATE" run -q --history "$db" --summary-json "$E2E_TMP/link.json" -- true
assert_eq keep "$(cat "$E2E_TMP/victim")" "the link's target"
[ -f "$E2E_TMP/link.json" ] && [ ! -L "$E2E_TMP/link.json" ] || fail "link.json is still a link"
json_get "$E2E_TMP/link.json" 'j["build"]["command"]' | grep -qx true || fail "link.json holds no record"
ls -A "$E2E_TMP" | grep -q '^\.link\.json\.' && fail "a temp file was left: $(ls -A "$E2E_TMP")"

note "a FILE that cannot be written: exit 2 before the build, nothing run"
status=0
"$MEMGATE" run -q --history "$db" --summary-json "$E2E_TMP/nodir/s.json" -- touch "$E2E_TMP/ran" 2>"$E2E_TMP/err" ||
  status=$?
assert_eq 2 "$status" "exit status with an unwritable --summary-json"
grep -q "^memgate: error: cannot write $E2E_TMP/nodir/s.json" "$E2E_TMP/err" || fail "no error: $(cat "$E2E_TMP/err")"
[ ! -e "$E2E_TMP/ran" ] || fail "the build ran despite an unwritable --summary-json"
echo "PASS"
