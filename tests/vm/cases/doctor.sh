#!/usr/bin/env bash
# `memgate doctor --json` on cgroup v2: version v2, can confine, freezer
# cgroup-v2, both in a test cgroup of its own and from a cgroup that holds
# another process (the session, as from a login shell); the probe leaves
# nothing behind.
source "$(dirname "$0")/vmlib.sh"
cg=$(cg_make doctor 600M)
cg_run "$cg" "$MEMGATE" doctor --json >"$E2E_TMP/d.json" || fail "doctor --json failed: $(cat "$E2E_TMP/d.json")"
assert_eq v2 "$(json_str "$E2E_TMP/d.json" cgroup_version)" "cgroup_version"
grep -q '"can_confine": true' "$E2E_TMP/d.json" || fail "doctor cannot confine: $(grep confine "$E2E_TMP/d.json")"
assert_eq cgroup-v2 "$(json_str "$E2E_TMP/d.json" freezer)" "freezer"
assert_eq 629145600 "$(json_num "$E2E_TMP/d.json" capacity_bytes)" "capacity: the test cgroup's 600 MiB"
assert_eq "" "$(find "$cg" -mindepth 1 -type d)" "doctor's probe left cgroups behind"

# From our own cgroup, which holds this shell and others.
"$MEMGATE" doctor --json >"$E2E_TMP/d2.json" || fail "doctor --json failed from $(cg_self)"
grep -q '"can_confine": true' "$E2E_TMP/d2.json" || fail "doctor cannot confine from $(cg_self): $(grep confine "$E2E_TMP/d2.json")"
[ ! -d "$(cg_self)/memgate-leaf" ] || fail "doctor left its leaf behind in $(cg_self)"
"$MEMGATE" doctor | grep -E '^  (cgroups|can confine|freezer|PSI full)' | sed 's/^/# /' >&2 || true
echo PASS
