#!/usr/bin/env bash
# Issue 11, done-means 4: a compiler that escapes the gate is never silent.
# The build runs one compile with LD_PRELOAD removed on purpose
# (`env -u LD_PRELOAD g++ ...`, the documented way out; see
# ARCHITECTURE.md "Interception"); the summary names it as ungated with its
# path and a measured peak, history counts it, and the build's exit status
# is its own.
#
# Needs the runner to call the ungated detector (src/run/ungated.hpp) every
# tick and report it: it fails until that is wired.
source "$(dirname "$0")/lib.sh"
require_cgroups
cg=$(cg_make ungated 4G)
export PATH="$(fake_compilers):$PATH"
w="$E2E_TMP/w"
memjob_workload "$w" "--peak 50M --duration 0.3"
echo "memjob: --peak 300M --ramp 0.3 --hold 1.5 --duration 2.5" >"$w/big.job"
cat >>"$w/Makefile" <<'MK'
all: big.o
big.o: big.job
	env -u LD_PRELOAD g++ -c $< -o $@
MK
set +e
cg_run "$cg" "$MEMGATE" run --history "$E2E_TMP/h.db" -- make -C "$w" -j2 >"$E2E_TMP/out" 2>"$E2E_TMP/err"
rc=$?
set -e
assert_eq 0 "$rc" "the build's exit status"
check_memjob_outputs "$w" || fail "outputs"
grep -q 'memgate: ungated: 1 compiler process' "$E2E_TMP/err" || fail "no ungated line in: $(cat "$E2E_TMP/err")"
line=$(grep -A1 'memgate: ungated:' "$E2E_TMP/err" | tail -n1)
case $line in *"$MEMJOB"*"(g++ -c big.job -o big.o)"*"peak "*"LD_PRELOAD removed"*) ;;
  *) fail "the ungated process line: $line" ;; esac
peak=$(echo "$line" | sed -n 's/.*peak \([0-9.]*\) MiB.*/\1/p')
[ -n "$peak" ] && python3 -c "import sys; sys.exit(0 if float('$peak') >= 250 else 1)" ||
  fail "measured peak of the ungated job: $line"
history_json "$E2E_TMP/h.db" "$E2E_TMP/h.json"
assert_eq 1 "$(json_get "$E2E_TMP/h.json" 'len(j["jobs"])')" "gated jobs (the ungated one is not a job)"
assert_eq 1 "$(json_get "$E2E_TMP/h.json" 'j["build"]["counters"].get("ungated", 0)')" "history's ungated counter"
echo "PASS"
