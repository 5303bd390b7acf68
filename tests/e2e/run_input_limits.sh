#!/usr/bin/env bash
# Issue 12, item 7, as the probe ran it:
# - `--memory 1`, `--memory 0.5` gave a 1-byte budget and `0x10G` was read
#   as hex; `--jobs 2^30` overflowed MAX_JOBS. Each is now a usage error
#   (memgate: error: ..., exit 2) before anything starts.
# - a job whose output name carries escape sequences reached the terminal
#   raw in `memgate history --build` and in memgate's own lines; now every
#   control character shows as '?'.
source "$(dirname "$0")/lib.sh"
export PATH="$(fake_compilers):$PATH"
cd "$E2E_TMP"

# usage_error ARGS...: `memgate run ARGS -- true` exits 2 with one clear line.
usage_error() {
  local rc
  set +e
  "$MEMGATE" run --history "$E2E_TMP/h.db" "$@" -- touch ran >out.txt 2>err.txt
  rc=$?
  set -e
  assert_eq 2 "$rc" "exit status of memgate run $*"
  grep -q '^memgate: error: ' err.txt || fail "no 'memgate: error:' for $*: $(cat err.txt)"
  [ ! -e ran ] || fail "the build ran despite $*"
}
for bad in 1 0.5 0 1000 63M 0x10G 1e3G inf -1G; do usage_error --memory "$bad"; done
usage_error --memory 1
grep -q 'less than the 64.0 MiB a build needs at least' err.txt || fail "unclear --memory error: $(cat err.txt)"
usage_error --memory 0x10G
grep -q "unknown unit 'x10G'" err.txt || fail "unclear 0x10G error: $(cat err.txt)"
for bad in 0x10G 1e3 0.5; do usage_error --reserve "$bad"; done
for bad in 0 -1 65537 1073741824 4294967296; do usage_error --jobs "$bad"; done
"$MEMGATE" run --history "$E2E_TMP/h.db" --memory 64M --jobs 65536 -- touch ran 2>err.txt ||
  fail "the limits themselves must be accepted: $(cat err.txt)"
[ -e ran ] || fail "the build did not run"

note "escape sequences in a job's name"
w="$E2E_TMP/work"
memjob_workload "$w" "--peak 5M --duration 0.1"
esc=$(printf 'x\033]0;owned\007\033[2Jy')
"$MEMGATE" run --history "$E2E_TMP/h.db" -- cc -c "$w/j000.job" -o "$w/$esc.o" >out.txt 2>err.txt ||
  fail "the build failed: $(cat err.txt)"
[ -s "$w/$esc.o" ] || fail "the job did not run"
"$MEMGATE" history --history "$E2E_TMP/h.db" --build last >hist.txt 2>&1
grep -q 'x?]0;owned??\[2Jy' hist.txt || fail "the job's name is not in history --build: $(cat -v hist.txt)"
for f in hist.txt err.txt out.txt; do
  if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$f"; then
    fail "control characters reached the terminal in $f: $(cat -v "$f")"
  fi
done
"$MEMGATE" history --history "$E2E_TMP/h.db" >list.txt 2>&1
if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' list.txt; then fail "control characters in history: $(cat -v list.txt)"; fi
echo "PASS"
