#!/usr/bin/env bash
# `memgate doctor --json` reports the memory cgroup it runs in: inside a
# cgroup limited to 3 GiB (and in a child of it with a looser 8 GiB limit)
# the capacity is exactly 3 GiB; outside, it is what this script computes on
# its own from MemTotal and the limits on its own cgroup chain.
source "$(dirname "$0")/lib.sh"
require_cgroups

# Debian's python3 starts in a tenth of the time of a pyenv shim.
PY=$(command -v /usr/bin/python3 || command -v python3)

# doctor_json VAR [CGROUP]: runs `memgate doctor --json` (inside CGROUP if
# given) and sets VAR_<key> for each top-level key, with one Python start.
doctor_json() {
  local var=$1 out
  if [ $# -gt 1 ]; then out=$(cg_run "$2" "$MEMGATE" doctor --json) || fail "doctor --json failed in $2"
  else out=$("$MEMGATE" doctor --json) || fail "doctor --json failed"; fi
  eval "$("$PY" -c '
import json, shlex, sys
for k, v in json.loads(sys.argv[2]).items():
    if not isinstance(v, (dict, list)):
        text = "null" if v is None else str(v)
        print(sys.argv[1] + "_" + k + "=" + shlex.quote(text))
' "$var" "$out")"
}

expected_outside() {
  local best dir limit root
  best=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024))
  root=$(cg_mount_root)
  dir=$(cg_self)
  while :; do
    limit=$(cg_limit "$dir")
    if [ "$limit" != max ] && [ "$limit" -lt "$best" ]; then best=$limit; fi
    [ "$dir" = "$root" ] && break
    dir=$(dirname "$dir")
  done
  echo "$best"
}

doctor_json outside
assert_eq "$(expected_outside)" "$outside_capacity_bytes" "capacity outside the test cgroup"

cg=$(cg_make cap 3G)
doctor_json inside "$cg"
assert_eq 3221225472 "$inside_capacity_bytes" "capacity inside the 3G cgroup"
assert_eq cgroup "$inside_capacity_source" "capacity source"
assert_eq "$cg" "$inside_cgroup_limit_source" "where the limit comes from"
# Default reserve in a 3 GiB cgroup: the cgroup rule (2%, at least 128 MiB).
assert_eq $((3221225472 - 134217728)) "$inside_budget_bytes" "budget inside the 3G cgroup"
assert_eq cgroup "$inside_reserve_rule" "reserve rule inside the 3G cgroup"
assert_eq "$(cg_version)" "$inside_cgroup_version" "cgroup version"
assert_eq True "$inside_can_confine" "can confine below the test cgroup"

# The text form says the same. (Before the child below exists: on v2 a
# cgroup that gives its children a memory controller cannot hold doctor.)
text=$(cg_run "$cg" "$MEMGATE" doctor) || fail "doctor (text) failed"
grep -q "capacity         3.00 GiB (cgroup)" <<<"$text" || fail "text lacks the capacity line: $text"
grep -q "^capacity 3.00 GiB; a build may use 2.88 GiB" <<<"$text" || fail "text lacks the verdict: $text"
# The probe cgroup doctor creates is gone again.
[ -z "$(find "$cg" -mindepth 1 -name 'memgate-doctor-probe-*')" ] || fail "doctor left its probe cgroup behind"

# A child with a looser limit does not raise the capacity: the walk up finds 3G.
cg_child "$cg" inner 8G >/dev/null
doctor_json nested "$cg/inner"
assert_eq 3221225472 "$nested_capacity_bytes" "capacity in a looser child of the 3G cgroup"
assert_eq "$cg" "$nested_cgroup_limit_source" "the limit still comes from the 3G cgroup"
echo "ok"
