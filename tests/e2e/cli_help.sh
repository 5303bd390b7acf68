#!/usr/bin/env bash
# What the command line says: "did you mean" for mistyped subcommands and
# options (exit 2, `memgate: error:`), a `memgate <cmd>` usage line and an
# example in every --help, docs/usage.md's usage block equal to `memgate --help`'s,
# and the man page (when help2man built one) readable by `man -l`.
source "$(dirname "$0")/lib.sh"
: "${MEMGATE_SRC:?}" "${MEMGATE_BUILD:?}"

# expect_usage_error "EXPECTED STDERR LINE" ARGS...
expect_usage_error() {
  local want=$1 status=0
  shift
  "$MEMGATE" "$@" >"$E2E_TMP/out" 2>"$E2E_TMP/err" || status=$?
  assert_eq 2 "$status" "exit status of memgate $*"
  assert_eq "$want" "$(cat "$E2E_TMP/err")" "stderr of memgate $*"
  [ ! -s "$E2E_TMP/out" ] || fail "memgate $* wrote to stdout"
}

note "did you mean"
expect_usage_error "memgate: error: unknown command 'histroy'; did you mean 'history'?" histroy
expect_usage_error "memgate: error: unknown command 'rpeort'; did you mean 'report'?" rpeort --build last
expect_usage_error "memgate: error: unknown command 'frobnicate'" frobnicate
expect_usage_error "memgate: error: unknown option '--recomend' for 'memgate plan'; did you mean '--recommend'?" \
  plan --recomend
expect_usage_error "memgate: error: unknown option '--memroy' for 'memgate run'; did you mean '--memory'?" \
  run --memroy 2G -- true
expect_usage_error "memgate: error: unknown option '--hepl'; did you mean '--help'?" --hepl
# The build command's own options are not memgate's.
"$MEMGATE" run -q -- true --memroy || fail "an option after -- is the build's"

note "every --help: usage line and an example"
for cmd in run wrap doctor history plan report; do
  "$MEMGATE" "$cmd" --help >"$E2E_TMP/help" || fail "memgate $cmd --help failed"
  grep -q "^Usage: memgate $cmd" "$E2E_TMP/help" || fail "$cmd --help has no 'Usage: memgate $cmd' line"
  grep -A1 '^Examples:' "$E2E_TMP/help" | grep -q "^  .*memgate" || fail "$cmd --help has no example"
  ! grep -q ' TEXT' "$E2E_TMP/help" || fail "$cmd --help has a TEXT metavar"
  # No parser leftovers after a metavar (SIZE:SIZE, N:INT in [1 - 65536],
  # ENGINE:{distcc,icecc}), and readable at 80 columns.
  ! grep -Eq '^  -.* [A-Z.]+:[A-Za-z{]' "$E2E_TMP/help" || fail "$cmd --help: $(grep -E '^  -.* [A-Z.]+:' "$E2E_TMP/help")"
  ! grep -Eq 'INT in \[|Excludes:|REQUIRED' "$E2E_TMP/help" || fail "$cmd --help has CLI11's validator text"
  long=$(awk 'length > 80' "$E2E_TMP/help")
  [ -z "$long" ] || fail "$cmd --help has lines over 80 columns: $long"
done
"$MEMGATE" run --help | grep -Eq '^  --memory SIZE +memory the build may use' || fail "run --help: --memory SIZE"
"$MEMGATE" run --help | grep -Eq '^  -j,--jobs N +CPU slots' || fail "run --help: -j,--jobs N"
long=$("$MEMGATE" --help | awk 'length > 80')
[ -z "$long" ] || fail "memgate --help has lines over 80 columns: $long"
grep -q '^Usage: memgate run \[OPTIONS\] -- CMD \[ARG...\]' <("$MEMGATE" run --help) || fail "run's usage line"

note "docs/usage.md's usage block is memgate --help's"
"$MEMGATE" --help >"$E2E_TMP/top"
sed -n '/^Usage:$/,/^$/p' "$E2E_TMP/top" | sed -e '1d' -e '/^$/d' -e 's/^  //' >"$E2E_TMP/help-usage"
[ -s "$E2E_TMP/help-usage" ] || fail "memgate --help has no Usage: block"
awk '/^# Every command and option$/ {u = 1; next} u && /^```$/ {if (in_block) exit; in_block = 1; next} in_block' \
  "$MEMGATE_SRC/docs/usage.md" >"$E2E_TMP/readme-usage"
diff -u "$E2E_TMP/readme-usage" "$E2E_TMP/help-usage" >&2 ||
  fail "docs/usage.md's usage block differs from memgate --help (paste the + lines above into docs/usage.md)"

note "man page"
if ! command -v help2man >/dev/null; then
  echo "SKIP: no help2man, so the build made no man page to check (apt-get install -y help2man)"
  exit 77
else
  page="$MEMGATE_BUILD/memgate.1"
  [ -f "$page" ] || fail "help2man is installed but the build made no $page"
  MANWIDTH=100 man -l -P cat "$page" >"$E2E_TMP/man.txt" 2>"$E2E_TMP/man.err" || fail "man -l $page: $(cat "$E2E_TMP/man.err")"
  for want in NAME SYNOPSIS COMMANDS "memgate plan" "EXIT STATUS" "--capacity" FILES "memgate/config" "--summary-json"; do
    grep -q -- "$want" "$E2E_TMP/man.txt" || fail "the man page has no '$want'"
  done
  ! grep -Eq 'SIZE:SIZE|INT in \[' "$E2E_TMP/man.txt" || fail "the man page has CLI11's validator text"
  # EXIT STATUS is docs/exit-status.md's list, every status of it.
  for code in 0 1 2 125 126 127 128+N; do
    sed -n '/^EXIT STATUS/,/^[A-Z]/p' "$E2E_TMP/man.txt" | grep -Eq "^ +${code//+/\\+}( |$)" ||
      fail "the man page's EXIT STATUS has no $code"
  done
  # Columns are characters, not bytes (a bullet is one). The manuals'
  # examples (fenced or indented) and tables show memgate's output as it
  # prints it, which man cannot wrap: only their lines may be longer.
  MANWIDTH=80 man -l -P cat "$page" 2>/dev/null | python3 -c '
import glob, sys
verbatim = set()
for doc in glob.glob(sys.argv[1] + "/docs/*.md"):
    inside = False
    for line in open(doc, encoding="utf-8"):
        if line.lstrip().startswith("```"):
            inside = not inside
        elif inside or line.startswith("    "):
            verbatim.add(line.strip())
for line in sys.stdin:
    line = line.rstrip("\n")
    if len(line) > 80 and line.strip() not in verbatim and not line.lstrip().startswith("|"):
        print(line)' "$MEMGATE_SRC" >"$E2E_TMP/man-long"
  [ ! -s "$E2E_TMP/man-long" ] || fail "the man page has lines over 80 columns at MANWIDTH=80: $(head -3 "$E2E_TMP/man-long")"
fi
echo "ok"
