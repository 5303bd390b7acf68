#!/usr/bin/env bash
# Issue 11, done-means 1: a CMake+Ninja directory configured WITHOUT
# memgate (its build.ninja calls /usr/bin/c++ directly) is gated by
# `memgate run -- cmake --build DIR`: one job per object, each with the
# right tool and identity, and objects byte-identical to a direct build.
source "$(dirname "$0")/lib.sh"
command -v c++ >/dev/null && command -v ninja >/dev/null || { echo "SKIP: no c++ or ninja"; exit 77; }
src="$MEMGATE_SRC/tests/e2e/projects/tenfiles"
cg=$(cg_make existing 4G)

for kind in direct gated; do
  cmake -S "$src" -B "$E2E_TMP/$kind" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
done
compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$E2E_TMP/gated/CMakeCache.txt")
note "configured without memgate: CMAKE_CXX_COMPILER=$compiler"
grep -q "^  command = $compiler .* -c \$in" "$E2E_TMP/gated/CMakeFiles/rules.ninja" ||
  fail "the compile rule does not call $compiler: $(grep 'command = ' "$E2E_TMP/gated/CMakeFiles/rules.ninja")"

cg_run "$cg" cmake --build "$E2E_TMP/direct" >/dev/null
cg_run "$cg" "$MEMGATE" run --history "$E2E_TMP/h.db" -- cmake --build "$E2E_TMP/gated" \
  >"$E2E_TMP/gated.out" 2>"$E2E_TMP/gated.err" || fail "memgate run failed: $(cat "$E2E_TMP/gated.err")"
grep -q 'no compiler jobs were gated' "$E2E_TMP/gated.err" && fail "memgate gated nothing"

objects=$(cd "$E2E_TMP/gated" && find CMakeFiles/tenfiles.dir -name '*.o' | sort)
assert_eq 10 "$(echo "$objects" | wc -l)" "objects built"
for o in $objects; do
  cmp "$E2E_TMP/direct/$o" "$E2E_TMP/gated/$o" || fail "$o differs from the direct build"
done

history_json "$E2E_TMP/h.db" "$E2E_TMP/h.json"
assert_eq 10 "$(json_get "$E2E_TMP/h.json" 'len(j["jobs"])')" "gated jobs (one per object)"
assert_eq "c++" "$(json_get "$E2E_TMP/h.json" '",".join(sorted({x["tool"] for x in j["jobs"]}))')" "tool"
outputs=$(json_get "$E2E_TMP/h.json" '"\n".join(sorted(x["identity"].split("->")[1] for x in j["jobs"]))')
assert_eq "$objects" "$outputs" "job identities name the objects"
json_get "$E2E_TMP/h.json" 'all(x["identity"].startswith("c++:compile:tenfiles/f") for x in j["jobs"])' |
  grep -qx True || fail "identities: $(json_get "$E2E_TMP/h.json" '[x["identity"] for x in j["jobs"]]')"
grep -q 'degraded' "$E2E_TMP/gated.err" && note "$(grep degraded "$E2E_TMP/gated.err")"
echo "PASS"
