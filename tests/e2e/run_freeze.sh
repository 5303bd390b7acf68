#!/usr/bin/env bash
# Issue 4: a frozen job resumes and completes. Two jobs share a 2 GiB
# budget: A holds 1.2 GB, B grows slowly towards 1.1 GB. When the build
# nears the budget memgate freezes B (the newest), thaws it once A is done,
# and B finishes in its first attempt: nothing is killed or rerun.
source "$(dirname "$0")/lib.sh"
require_cgroups
export PATH="$(fake_compilers):$PATH"
w="$E2E_TMP/work"
memjob_workload "$w" \
  "--peak 1200M --ramp 0.2 --hold 6 --after 50M --duration 6.5" \
  "--base 200M --peak 1100M --ramp 7 --peak-at 8 --hold 0.2 --after 50M --duration 8.5"
# j001 must be the newer job: let make start it a moment after j000.
sed -i 's/^\t$(CC)/\t@[ $@ = j001.o ] \&\& sleep 0.5 || true\n\t$(CC)/' "$w/Makefile"

cg=$(cg_make freeze 3G)
set +e
cg_run "$cg" "$MEMGATE" run --jobs 2 --memory 2G --history "$E2E_TMP/h.db" -- make -s -C "$w" -j2 >"$E2E_TMP/run.log" 2>&1
rc=$?
set -e
grep -v '^memgate: \[' "$E2E_TMP/run.log" >&2
assert_eq 0 "$rc" "exit status"
check_memjob_outputs "$w" || fail "outputs"
"$MEMGATE" history --json --build last --history "$E2E_TMP/h.db" >"$E2E_TMP/h.json"
c() { json_get "$E2E_TMP/h.json" "j['build']['counters'].get('$1', 0)"; }
[ "$(c frozen)" -ge 1 ] || fail "nothing was frozen"
[ "$(c thawed)" -ge 1 ] || fail "nothing was thawed"
assert_eq 0 "$(c requeued)" "requeues"
assert_eq 0 "$(c oom_killed)" "OOM kills"
assert_eq "1 1" "$(json_get "$E2E_TMP/h.json" '" ".join(str(x["attempts"]) for x in j["jobs"])')" "attempts"
frozen=$(json_get "$E2E_TMP/h.json" '[x for x in j["jobs"] if x["identity"].endswith("j001.o")][0]["frozen_s"]')
python3 -c "import sys; sys.exit(0 if $frozen > 0.2 else 1)" || fail "j001 was not frozen for any time ($frozen s)"
echo "PASS"
