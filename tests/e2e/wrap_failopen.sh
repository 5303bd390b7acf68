#!/usr/bin/env bash
# Issue 3, "fail-open": wrappers whose MEMGATE_SOCKET points at a dead
# socket run their programs and warn once per build, not once per wrapper.
# A parallel make of small memjob compiles goes through the shims (and the
# launcher form) with no governor behind the socket.
source "$(dirname "$0")/lib.sh"

# A shim directory as `memgate run` makes it: compiler names -> memgate,
# plus the marker that tells every wrapper to skip it.
shims="$E2E_TMP/shims"
mkdir -m 700 "$shims"
touch "$shims/.memgate-shims"
for name in cc c++ gcc g++; do ln -s "$MEMGATE" "$shims/$name"; done
export PATH="$shims:$(fake_compilers):$shims:$PATH"

specs=()
for i in $(seq 0 11); do specs+=("--peak $((8 + i))M --duration 0.2"); done
w="$E2E_TMP/work"
memjob_workload "$w" "${specs[@]}"

run_make() {  # run_make LOG: make -j8 with CC=cc (the shim), stderr to LOG
  set +e
  make -s -C "$w" -j8 CC=cc 2>"$1"
  local rc=$?
  set -e
  assert_eq 0 "$rc" "make exit status ($(cat "$1"))"
  check_memjob_outputs "$w" || fail "outputs missing or wrong"
  make -s -C "$w" clean
}

count_warnings() { grep -c "memgate: warning: governor at $1 is not answering; running jobs ungated" "$2" || true; }

note "a socket file nobody listens on (a crashed governor)"
dead_dir="$E2E_TMP/dead"
mkdir -m 700 "$dead_dir"
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()' "$dead_dir/sock"
export MEMGATE_SOCKET="$dead_dir/sock"
run_make "$E2E_TMP/dead.log"
assert_eq 1 "$(count_warnings "$dead_dir/sock" "$E2E_TMP/dead.log")" "warnings with a dead socket"
assert_eq 1 "$(grep -c . "$E2E_TMP/dead.log")" "lines on stderr"

note "the socket's whole directory is gone (the marker falls back to /tmp)"
export MEMGATE_SOCKET="$E2E_TMP/gone-$$/sock"
run_make "$E2E_TMP/gone.log"
assert_eq 1 "$(count_warnings "$MEMGATE_SOCKET" "$E2E_TMP/gone.log")" "warnings with no socket dir"
hash=$(python3 -c 'import sys
h = 0xcbf29ce484222325
for b in sys.argv[1].encode():
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
print("%016x" % h)' "$MEMGATE_SOCKET")
rm -f "/tmp/memgate-warned-$(id -u)-$hash"

note "launcher form: memgate wrap -- memjob"
export MEMGATE_SOCKET="$dead_dir/sock2"
set +e
make -s -C "$w" -j8 CC="$MEMGATE wrap -- $MEMJOB" 2>"$E2E_TMP/launcher.log"
rc=$?
set -e
assert_eq 0 "$rc" "make exit status with the launcher form"
check_memjob_outputs "$w" || fail "launcher-form outputs missing or wrong"
assert_eq 1 "$(count_warnings "$dead_dir/sock2" "$E2E_TMP/launcher.log")" "warnings in the launcher form"

note "a failing compile keeps its status and its message"
printf 'memjob: --fail 3\n' >"$w/j999.job"
set +e
make -s -C "$w" j999.o CC=cc 2>"$E2E_TMP/fail.log"
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "a failing compile succeeded"
grep -q "memjob: error: failing with status 3 as asked" "$E2E_TMP/fail.log" || fail "the compiler's error text was lost"
echo "PASS"
