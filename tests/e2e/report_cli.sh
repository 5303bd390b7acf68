#!/usr/bin/env bash
# `memgate report` against a history: the default (last build, HTML in the
# current directory, its path on stdout), --build ID, --trace only, and
# clear errors for a missing history, an empty one, an unknown or
# malformed id. The history is filled by bench_report_scale, which saves a
# synthetic build through the real History code.
source "$(dirname "$0")/lib.sh"
bench="${MEMGATE_BUILD:?}/bench_report_scale"
[ -x "$bench" ] || fail "$bench is not built"
cd "$E2E_TMP"

# expect_error STATUS TEXT CMD...: CMD fails with STATUS and says TEXT on stderr.
expect_error() {
  local want=$1 text=$2 rc
  shift 2
  set +e
  "$@" >out.txt 2>err.txt
  rc=$?
  set -e
  assert_eq "$want" "$rc" "exit status of: $*"
  grep -qF -- "$text" err.txt || fail "expected '$text' from: $* (got: $(cat err.txt))"
}

note "no history yet"
expect_error 1 "no build history at $E2E_TMP/none.db" "$MEMGATE" report --history "$E2E_TMP/none.db"
[ ! -e none.db ] || fail "memgate report created a history file"
MEMGATE_HISTORY="$E2E_TMP/none.db" expect_error 1 "no build history at $E2E_TMP/none.db" "$MEMGATE" report
[ ! -e memgate-report.html ] || fail "a report was written without a build"

note "a history with no builds"
: >empty.db
expect_error 1 "no build with gated jobs is recorded in empty.db yet" "$MEMGATE" report --history empty.db

note "two synthetic builds"
"$bench" --jobs 30 --seed 1 --history h.db >/dev/null
"$bench" --jobs 40 --seed 2 --history h.db >/dev/null

"$MEMGATE" report --history h.db >out.txt
assert_eq "memgate-report.html" "$(cat out.txt)" "path printed"
assert_eq 40 "$(grep -o '<rect class="job[ "]' memgate-report.html | wc -l)" "bars of the last build"

"$MEMGATE" report --history h.db --build 1 --html one.html --trace one.json >out.txt
assert_eq "one.html one.json" "$(echo $(cat out.txt))" "paths printed"
assert_eq 30 "$(grep -o '<rect class="job[ "]' one.html | wc -l)" "bars of build 1"
assert_eq 30 "$(json_get one.json 'len({e["args"]["identity"] for e in j["traceEvents"] if e["ph"]=="X"})')" \
  "jobs in the trace of build 1"

rm -f memgate-report.html
MEMGATE_HISTORY="$E2E_TMP/h.db" "$MEMGATE" report --trace last.json >/dev/null
[ -s last.json ] && [ ! -e memgate-report.html ] || fail "--trace alone must write only the trace"

note "bad ids and unwritable files"
expect_error 1 "no build #99 in h.db" "$MEMGATE" report --history h.db --build 99
expect_error 2 "--build wants a build id or 'last', not 'x1'" "$MEMGATE" report --history h.db --build x1
expect_error 1 "cannot write $E2E_TMP/no/such/dir.html" "$MEMGATE" report --history h.db --html "$E2E_TMP/no/such/dir.html"
echo "PASS"
