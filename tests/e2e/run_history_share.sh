#!/usr/bin/env bash
# Issue 13, shared history (Done means 4):
#  1. export from one history, import into an empty one: the first build
#     there (of a copy of the tree, elsewhere) predicts every job from the
#     import, within 20% of its actual peak; the file names no absolute
#     path, no user and no home directory;
#  2. a corrupt and a foreign-version file: `memgate: error:`, exit 2, and
#     the history is unchanged (a history that did not exist is not made);
#  3. --prior FILE (and MEMGATE_PRIOR) predict a cold run from the file
#     without writing it to history; a bad prior stops the run (125).
source "$(dirname "$0")/lib.sh"
require_cgroups
export PATH="$(fake_compilers):$PATH"
cg=$(cg_make share 3G)
peaks=(150M 600M 300M 450M 200M 350M)
specs=()
for i in $(seq 0 11); do specs+=("--peak ${peaks[$((i % 6))]} --ramp 0.2 --hold 0.3 --after 50M --duration 0.8"); done
run() { cg_run "$cg" "$MEMGATE" run --quiet --jobs 4 "$@"; }
build() {  # build DIR HISTORY [memgate run options...]
  local dir=$1 h=$2
  shift 2
  memjob_workload "$dir" "${specs[@]}"
  run --history "$h" "$@" -- make -s -C "$dir" -j8
  check_memjob_outputs "$dir" || fail "outputs of $dir"
}
# within DB SOURCE: every job of the last build predicted by SOURCE, within 20%.
within() {
  history_json "$1" "$E2E_TMP/within.json"
  python3 - "$E2E_TMP/within.json" "$2" <<'PY' || fail "predictions of the first build from $2"
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
assert len(jobs) == 12, len(jobs)
for j in jobs:
    err = (j["predicted_peak_bytes"] - j["peak_bytes"]) / j["peak_bytes"]
    print(f'{j["identity"]}: {j["predicted_source"]} {err:+.1%}', file=sys.stderr)
    assert j["predicted_source"] == sys.argv[2], j
    assert abs(err) <= 0.20, j
PY
}

note "1. export, import into an empty history, build elsewhere"
a="$E2E_TMP/a.db" b="$E2E_TMP/b.db" f="$E2E_TMP/profiles.json"
build "$E2E_TMP/tree-a" "$a"
"$MEMGATE" history export "$f" --history "$a" || fail "export"
python3 - "$f" "$E2E_TMP" "${USER:-$(id -un)}" "$HOME" <<'PY' || fail "exported file"
import json, sys
text = open(sys.argv[1]).read()
j = json.loads(text)
assert j["format"] == "memgate-profiles" and j["version"] == 2, (j["format"], j["version"])
assert len(j["profiles"]) == 12, len(j["profiles"])
for p in j["profiles"]:
    assert not p["identity"].startswith("/") and ":/" not in p["identity"] and "->/" not in p["identity"], p
assert sys.argv[2] not in text, "the exporting tree's path is in the file"
for word in [sys.argv[3]] + [c for c in sys.argv[4].split("/") if c and c not in ("home", "root")]:
    assert f'/{word}/' not in text and f'"{word}' not in text, f"'{word}' is in the file"
PY
[ ! -e "$b" ] || fail "$b exists before the import"
"$MEMGATE" history import "$f" --history "$b" 2>"$E2E_TMP/import.err" || fail "import: $(cat "$E2E_TMP/import.err")"
grep -q "imported 12 job profiles" "$E2E_TMP/import.err" || fail "import message: $(cat "$E2E_TMP/import.err")"
build "$E2E_TMP/tree-b" "$b"
within "$b" imported
# Importing again merges: nothing new, nothing lost.
"$MEMGATE" history import "$f" --history "$b" 2>"$E2E_TMP/import2.err" || fail "second import"
grep -q "(0 new)" "$E2E_TMP/import2.err" || fail "second import message: $(cat "$E2E_TMP/import2.err")"

note "2. a corrupt and a foreign-version file change nothing"
"$MEMGATE" history export "$E2E_TMP/before.json" --history "$b" 2>/dev/null
builds_before=$("$MEMGATE" history --json --history "$b" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["builds"]))')
head -c 3000 "$f" >"$E2E_TMP/corrupt.json"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); j["version"]=99; j["profiles"][0]["peak_bytes"]=1; json.dump(j, open(sys.argv[2], "w"))' \
  "$f" "$E2E_TMP/foreign.json"
for bad in corrupt foreign; do
  for h in "$b" "$E2E_TMP/never.db"; do
    set +e
    "$MEMGATE" history import "$E2E_TMP/$bad.json" --history "$h" 2>"$E2E_TMP/$bad.err"
    rc=$?
    set -e
    assert_eq 2 "$rc" "exit status of importing the $bad file"
    grep -q "^memgate: error: .*$bad.json" "$E2E_TMP/$bad.err" || fail "$bad: $(cat "$E2E_TMP/$bad.err")"
  done
done
grep -q "version 99" "$E2E_TMP/foreign.err" || fail "the foreign-version error does not say so: $(cat "$E2E_TMP/foreign.err")"
[ ! -e "$E2E_TMP/never.db" ] || fail "a refused import created a history"
"$MEMGATE" history export "$E2E_TMP/after.json" --history "$b" 2>/dev/null
cmp -s "$E2E_TMP/before.json" "$E2E_TMP/after.json" || fail "a refused import changed the profiles"
assert_eq "$builds_before" "$("$MEMGATE" history --json --history "$b" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["builds"]))')" "builds after refused imports"

note "3. --prior and MEMGATE_PRIOR seed a cold run and write no profiles"
c="$E2E_TMP/c.db" d="$E2E_TMP/d.db"
build "$E2E_TMP/tree-c" "$c" --prior "$f"
within "$c" prior
MEMGATE_PRIOR="$f" build "$E2E_TMP/tree-d" "$d"
within "$d" prior
for h in "$c" "$d"; do
  assert_eq 0 "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from imported").fetchone()[0])' "$h")" \
    "imported profiles in $h after a --prior run"
done
set +e
cg_run "$cg" "$MEMGATE" run --quiet --history "$c" --prior "$E2E_TMP/corrupt.json" -- touch "$E2E_TMP/ran" 2>"$E2E_TMP/prior.err"
rc=$?
set -e
assert_eq 125 "$rc" "exit status of a run with a corrupt prior"
grep -q "^memgate: error: --prior: .*corrupt.json" "$E2E_TMP/prior.err" || fail "bad prior: $(cat "$E2E_TMP/prior.err")"
[ ! -e "$E2E_TMP/ran" ] || fail "the build ran with a bad prior"
echo "PASS"
