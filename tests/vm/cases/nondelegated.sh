#!/usr/bin/env bash
# An ordinary user in a cgroup it does not own (not delegated): memgate
# cannot create cgroups, says why on the degraded: line, and the build
# still succeeds, measured from /proc; doctor says it cannot confine.
source "$(dirname "$0")/vmlib.sh"
cg=$(cg_make nodeleg 600M)
home="$E2E_TMP/nobody"
mkdir "$home" && chown 65534:65534 "$home" && chmod 755 "$E2E_TMP"
ln -s "$MEMJOB" "$home/cc"
echo "memjob: --peak 60M --ramp 0.2 --hold 0.5 --duration 1" >"$home/a.job"
as_nobody() {
  (cd "$home" && cg_run "$cg" setpriv --reuid=65534 --regid=65534 --clear-groups \
    env XDG_CACHE_HOME="$home/cache" PATH="$home:$PATH" "$@")
}
set +e
as_nobody "$MEMGATE" run --reserve 64M --history "$home/h.db" -- cc -c a.job -o a.o >"$E2E_TMP/run.log" 2>&1
rc=$?
set -e
cat "$E2E_TMP/run.log" >&2
assert_eq 0 "$rc" "exit status"
head -n1 "$home/a.o" | grep -q '^memjob-ok ' || fail "no output"
line=$(grep '^memgate: degraded: ' "$E2E_TMP/run.log" || true)
[ -n "$line" ] || fail "no degraded: line"
grep -q 'not delegated to this user' <<<"$line" || fail "the degraded: line does not say why: $line"
as_nobody "$MEMGATE" doctor --json >"$E2E_TMP/d.json" || fail "doctor --json failed"
grep -q '"can_confine": false' "$E2E_TMP/d.json" || fail "doctor says it can confine"
grep -q '"confine_error": ".*not delegated' "$E2E_TMP/d.json" || fail "doctor does not say why: $(grep confine_error "$E2E_TMP/d.json")"
assert_eq "" "$(find "$cg" -mindepth 1 -type d)" "cgroups left behind"
note "$line"
echo PASS
