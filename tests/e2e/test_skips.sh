#!/usr/bin/env bash
# scripts/run-ctest (what scripts/test ends with) fails a run in which a
# test skipped, lists it with its reason, and lets it pass only when
# MEMGATE_ACCEPT_SKIPS names it (by name or pattern); a failed test fails
# the run whatever is accepted. On a small CTest project of its own, with
# one test of each kind: passing, skipping by exit status 77, skipping as
# GoogleTest does ("[  SKIPPED ]"), and failing.
source "$(dirname "$0")/lib.sh"
run_ctest="$MEMGATE_SRC/scripts/run-ctest"
p="$E2E_TMP/project"
mkdir -p "$p"
cat >"$p/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(skips NONE)
enable_testing()
add_test(NAME ok.passes COMMAND true)
add_test(NAME probe.exit77 COMMAND sh -c "echo 'SKIP: no frobnicator here'; exit 77")
set_tests_properties(probe.exit77 PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME probe.gtest COMMAND sh -c "echo '[  SKIPPED ] Suite.Case'")
set_tests_properties(probe.gtest PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
add_test(NAME bad.fails COMMAND false)
CM
cmake -S "$p" -B "$p/build" -G Ninja >"$E2E_TMP/configure.log" 2>&1 || fail "configure: $(cat "$E2E_TMP/configure.log")"

# run NAME [ctest args...]: scripts/run-ctest on the project; its status
# in $E2E_TMP/NAME.rc, its output in $E2E_TMP/NAME.out.
run() {
  local name=$1
  shift
  set +e
  "$run_ctest" "$p/build" "$@" >"$E2E_TMP/$name.out" 2>&1
  echo $? >"$E2E_TMP/$name.rc"
  set -e
}
out() { cat "$E2E_TMP/$1.out"; }
rc() { cat "$E2E_TMP/$1.rc"; }

unset MEMGATE_ACCEPT_SKIPS
run clean -R '^ok\.'
assert_eq 0 "$(rc clean)" "a run without skips: status ($(out clean))"
grep -qx 'skipped tests: 0 (0 not accepted)' "$E2E_TMP/clean.out" || fail "no skip count: $(out clean)"

# A relative build directory, as `scripts/run-ctest build` is typed.
(cd "$p" && "$run_ctest" build -R '^probe\.exit77$' >"$E2E_TMP/relative.out" 2>&1) && fail "a skip passed: $(out relative)"
grep -qx 'skipped: probe.exit77: SKIP: no frobnicator here' "$E2E_TMP/relative.out" || fail "relative dir: $(out relative)"

run skip -R '^(ok|probe)\.'
assert_eq 1 "$(rc skip)" "a run with two skips: status ($(out skip))"
grep -qx 'skipped: probe.exit77: SKIP: no frobnicator here' "$E2E_TMP/skip.out" || fail "exit-77 skip not listed: $(out skip)"
grep -qx 'skipped: probe.gtest: \[  SKIPPED \] Suite.Case' "$E2E_TMP/skip.out" || fail "gtest skip not listed: $(out skip)"
grep -q '^memgate: error: 2 test(s) skipped' "$E2E_TMP/skip.out" || fail "no error line: $(out skip)"

MEMGATE_ACCEPT_SKIPS="probe.exit77" run one -R '^(ok|probe)\.'
assert_eq 1 "$(rc one)" "one of two skips accepted: status ($(out one))"
grep -qx 'skipped (accepted by MEMGATE_ACCEPT_SKIPS): probe.exit77: SKIP: no frobnicator here' "$E2E_TMP/one.out" ||
  fail "the accepted skip is not said to be: $(out one)"
grep -qx 'skipped tests: 2 (1 not accepted)' "$E2E_TMP/one.out" || fail "wrong count: $(out one)"

MEMGATE_ACCEPT_SKIPS="probe.exit77 probe.g*" run both -R '^(ok|probe)\.'
assert_eq 0 "$(rc both)" "both skips accepted, by name and pattern: status ($(out both))"

MEMGATE_ACCEPT_SKIPS="probe.*" run failing
[ "$(rc failing)" -ne 0 ] || fail "a failed test with every skip accepted passed: $(out failing)"
grep -q 'bad.fails' "$E2E_TMP/failing.out" || fail "the failed test is not named: $(out failing)"
echo PASS
