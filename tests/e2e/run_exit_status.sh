#!/usr/bin/env bash
# Exit status of memgate run (docs/exit-status.md): 2 for every usage
# error, output paths included, found before anything runs; 125 when
# memgate fails before the build; 126/127 as the shell gives them; else the
# build's own, 128+signal for a signal.
source "$(dirname "$0")/lib.sh"
cd "$E2E_TMP"
db="$E2E_TMP/h.db"

# status ARGS...: memgate's exit status for ARGS, stderr in err.txt.
status() {
  local rc=0
  "$MEMGATE" "$@" >out.txt 2>err.txt || rc=$?
  echo "$rc"
}

note "usage errors: 2, one 'memgate: error:' line, nothing run"
assert_eq 2 "$(status run --history "$db")" "memgate run without a command"
grep -q '^memgate: error: no build command given' err.txt || fail "unclear: $(cat err.txt)"
assert_eq 2 "$(status run --history "$db" --)" "memgate run -- (nothing after it)"
assert_eq 2 "$(status run --bogus -- true)" "an unknown flag"
assert_eq 2 "$(status frobnicate)" "an unknown subcommand"
assert_eq 2 "$(status plan --cores zero)" "a bad value"
mkdir -p adir
for flag in --report --trace --summary-json; do
  for path in "$E2E_TMP/nodir/out" "$E2E_TMP/adir" "$E2E_TMP/adir/"; do
    rm -f ran
    assert_eq 2 "$(status run --history "$db" "$flag" "$path" -- touch ran)" "run $flag $path"
    grep -q "^memgate: error: cannot write $path" err.txt || fail "no error naming $path: $(cat err.txt)"
    grep -q "nothing was run" err.txt || fail "does not say nothing ran: $(cat err.txt)"
    [ ! -e ran ] || fail "the build ran despite $flag $path"
  done
done
[ -z "$(ls -A adir)" ] || fail "the check left files behind: $(ls -A adir)"
rm -f ran
assert_eq 0 "$(status run -q --history "$db" --summary-json "$E2E_TMP/adir/s.json" -- touch ran)" "a writable path"
[ -e ran ] && [ -s adir/s.json ] || fail "the build did not run or the summary was not written"

note "memgate's own failure before the build: 125"
assert_eq 125 "$(status run --history "$E2E_TMP/nodir/h.db" -- touch ran2)" "a history in a missing directory"
[ ! -e ran2 ] || fail "the build ran despite the history error"

note "126 and 127 as the shell gives them"
printf 'not a program\n' >noexec && chmod 644 noexec
shell_noexec=0 shell_missing=0
sh -c ./noexec 2>/dev/null || shell_noexec=$?
sh -c ./no-such-program 2>/dev/null || shell_missing=$?
assert_eq "$shell_noexec" "$(status run --history "$db" -- ./noexec)" "a command that is not executable"
assert_eq "$shell_missing" "$(status run --history "$db" -- ./no-such-program)" "a command that is not there"
assert_eq 127 "$(status run --history "$db" -- no-such-program-anywhere)" "a name not in PATH"

note "the build's own status, and 128+signal"
assert_eq 7 "$(status run -q --history "$db" -- sh -c 'exit 7')" "the build's status"
assert_eq 143 "$(status run -q --history "$db" -- sh -c 'kill -TERM $$')" "a build ended by SIGTERM"
echo "PASS"
