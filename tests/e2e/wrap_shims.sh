#!/usr/bin/env bash
# Issue 3, "nested calls" (the shim half): a PATH shim never finds itself,
# even with the shim directory listed twice in PATH and reached through a
# symlink, and it is transparent: the real g++ makes byte-identical objects,
# answers --version the same, and a failing compile keeps its status and
# its error text. Outside `memgate run` (no MEMGATE_SOCKET) a recorded shim
# path just runs the real compiler.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || { echo "SKIP: no g++"; exit 77; }
real_gxx=$(command -v g++)
real_path=$PATH

shims="$E2E_TMP/shims"
mkdir -m 700 "$shims"
touch "$shims/.memgate-shims"
for name in cc c++ gcc g++ clang clang++ nvcc hipcc; do ln -s "$MEMGATE" "$shims/$name"; done
ln -s "$shims" "$E2E_TMP/alias"
export PATH="$shims:$E2E_TMP/alias:$shims:$real_path"

src="$E2E_TMP/src"
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
mkdir -m 700 "$E2E_TMP/dead"
export MEMGATE_SOCKET="$E2E_TMP/dead/sock"
g++ -O2 -c hello.cpp -o failopen.o 2>"$E2E_TMP/failopen.err"
cmp direct.o failopen.o || fail "the fail-open object differs"
"$MEMGATE" wrap -- g++ -O2 -c hello.cpp -o launcher.o 2>>"$E2E_TMP/failopen.err"
cmp direct.o launcher.o || fail "the launcher-form object differs"
"$MEMGATE" wrap -- "$shims/c++" -O2 -c hello.cpp -o recorded.o 2>>"$E2E_TMP/failopen.err"
cmp direct.o recorded.o || fail "a recorded shim path under the launcher differs"
assert_eq 1 "$(grep -c 'is not answering' "$E2E_TMP/failopen.err")" "fail-open warnings"
unset MEMGATE_SOCKET

set +e
"$real_gxx" -c broken.cpp -o broken-direct.o 2>"$E2E_TMP/direct.err"
direct_rc=$?
g++ -c broken.cpp -o broken-shim.o 2>"$E2E_TMP/shim.err"
shim_rc=$?
set -e
assert_eq "$direct_rc" "$shim_rc" "a failing compile's status"
diff "$E2E_TMP/direct.err" "$E2E_TMP/shim.err" || fail "a failing compile's error text differs"

# Nested: the job marker passes a shim straight through (no socket needed).
MEMGATE_JOB=1 MEMGATE_SOCKET="$E2E_TMP/none" g++ -O2 -c hello.cpp -o nested.o 2>"$E2E_TMP/nested.err"
cmp direct.o nested.o || fail "nested call object differs"
assert_eq "" "$(cat "$E2E_TMP/nested.err")" "nested call stderr"

# Only shims and an alias of them in PATH: no real compiler to find.
set +e
out=$(PATH="$shims:$E2E_TMP/alias" g++ -c hello.cpp 2>&1)
rc=$?
set -e
assert_eq 127 "$rc" "status with no real g++"
assert_eq "memgate: error: cannot find the real 'g++' in PATH" "$out" "message with no real g++"
echo "PASS"
