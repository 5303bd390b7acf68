#!/usr/bin/env bash
# Issue 3, "nested calls" (the shim half): a PATH shim never finds itself,
# even with the shim directory listed twice in PATH and reached through a
# symlink, and it is transparent: the real g++ makes byte-identical objects,
# answers --version the same, and a failing compile keeps its status and
# its error text. Outside `memgate run` (no MEMGATE_SOCKET) a recorded shim
# path just runs the real compiler.
#
# All of it holds for both programs a shim can point at: memgate itself and
# the small memgate-wrap that `memgate run` prefers.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || { echo "SKIP: no g++"; exit 77; }
real_gxx=$(command -v g++)
real_path=$PATH
MEMGATE_WRAP=$(dirname "$MEMGATE")/memgate-wrap

# check_wrapper BIN NAME: the whole suite with shims linked to BIN.
check_wrapper() {
  local bin=$1 t="$E2E_TMP/$2"
  mkdir "$t"
  export PATH=$real_path
  cd "$E2E_TMP"
  shims="$t/shims"
  mkdir -m 700 "$shims"
  touch "$shims/.memgate-shims"
  for name in cc c++ gcc g++ clang clang++ nvcc hipcc; do ln -s "$bin" "$shims/$name"; done
  ln -s "$shims" "$t/alias"
  export PATH="$shims:$t/alias:$shims:$real_path"

  src="$t/src"
  mkdir "$src"
  cat >"$src/hello.cpp" <<'CPP'
  #include <cstdio>
  int greet(int n) { std::printf("hello %d\n", n); return n * 2; }
CPP
  printf 'int broken( {\n' >"$src/broken.cpp"

  cd "$src"
  assert_eq "$("$real_gxx" --version)" "$(g++ --version)" "g++ --version through the shim"
  assert_eq "$("$real_gxx" -dumpmachine)" "$(g++ -dumpmachine)" "g++ -dumpmachine through the shim"

  "$real_gxx" -O2 -c hello.cpp -o direct.o
  g++ -O2 -c hello.cpp -o shim.o
  cmp direct.o shim.o || fail "the shim's object differs from a direct compile"

  # The same through a dead governor (fails open) and the launcher form.
  mkdir -m 700 "$t/dead"
  export MEMGATE_SOCKET="$t/dead/sock"
  g++ -O2 -c hello.cpp -o failopen.o 2>"$t/failopen.err"
  cmp direct.o failopen.o || fail "the fail-open object differs"
  "$bin" wrap -- g++ -O2 -c hello.cpp -o launcher.o 2>>"$t/failopen.err"
  cmp direct.o launcher.o || fail "the launcher-form object differs"
  "$bin" wrap -- "$shims/c++" -O2 -c hello.cpp -o recorded.o 2>>"$t/failopen.err"
  cmp direct.o recorded.o || fail "a recorded shim path under the launcher differs"
  assert_eq 1 "$(grep -c 'is not answering' "$t/failopen.err")" "fail-open warnings"
  unset MEMGATE_SOCKET

  set +e
  "$real_gxx" -c broken.cpp -o broken-direct.o 2>"$t/direct.err"
  direct_rc=$?
  g++ -c broken.cpp -o broken-shim.o 2>"$t/shim.err"
  shim_rc=$?
  set -e
  assert_eq "$direct_rc" "$shim_rc" "a failing compile's status"
  diff "$t/direct.err" "$t/shim.err" || fail "a failing compile's error text differs"

  # Nested: the job marker passes a shim straight through (no socket needed).
  MEMGATE_JOB=1 MEMGATE_SOCKET="$t/none" g++ -O2 -c hello.cpp -o nested.o 2>"$t/nested.err"
  cmp direct.o nested.o || fail "nested call object differs"
  assert_eq "" "$(cat "$t/nested.err")" "nested call stderr"

  # Only shims and an alias of them in PATH: no real compiler to find.
  set +e
  out=$(PATH="$shims:$t/alias" g++ -c hello.cpp 2>&1)
  rc=$?
  set -e
  assert_eq 127 "$rc" "status with no real g++"
  assert_eq "memgate: error: cannot find the real 'g++' in PATH" "$out" "message with no real g++"
}

check_wrapper "$MEMGATE" memgate
check_wrapper "$MEMGATE_WRAP" memgate-wrap

# memgate-wrap alone is only the wrapper: anything but a shim name or
# `wrap` is a usage error.
set +e
out=$("$MEMGATE_WRAP" run -- true 2>&1)
rc=$?
set -e
assert_eq 2 "$rc" "memgate-wrap run: status"
case $out in "memgate: error: memgate-wrap is memgate's wrapper"*) ;; *) fail "memgate-wrap run: message '$out'" ;; esac
echo "PASS"
