#!/usr/bin/env bash
# JSON built to exhaust memory, where memgate reads JSON from a file:
# `history import FILE` and `run --prior FILE`. A 60 MB file of '[' was
# OOM-killed in a 3 GiB cgroup before (each level a DOM array); a file of
# 30 million zeros in the profile list costs gigabytes the same way. Each
# now stops at once with an error that says which limit (16 levels, 2 Mi
# values), and the command's cgroup peaks at a small multiple of the file
# (here under 300 MiB, in a 1 GiB cgroup).
source "$(dirname "$0")/lib.sh"
require_cgroups
cd "$E2E_TMP"
python3 - <<'EOF'
with open("deep.json", "w") as f:
    f.write("[" * 60_000_000)
with open("wide.json", "w") as f:
    f.write('{"format": "memgate-profiles", "version": 1, "profiles": [' + "0," * 30_000_000 + "0]}")
EOF

# try NAME FILE WHY CMD...: CMD (in a fresh 1 GiB cgroup) fails with an
# error naming FILE and WHY, is not killed, and peaks under 300 MiB.
try() {
  local name=$1 file=$2 why=$3 status=0 cg peak
  shift 3
  cg=$(cg_make "$name" 1G)
  cg_run "$cg" "$@" >"$E2E_TMP/$name.out" 2>"$E2E_TMP/$name.err" || status=$?
  peak=$(cg_peak "$cg")
  note "$name: exit $status, peak $((peak >> 20)) MiB: $(head -c 300 "$E2E_TMP/$name.err")"
  [ "$status" != 0 ] || fail "$name: accepted $file"
  [ "$status" -lt 128 ] || fail "$name: killed by signal $((status - 128)) (OOM?)"
  grep -q "^memgate: error: .*$file: $why" "$E2E_TMP/$name.err" || fail "$name: no error naming $file and '$why'"
  [ "$peak" -lt $((300 << 20)) ] || fail "$name: peaked at $((peak >> 20)) MiB"
}

try import-deep "$E2E_TMP/deep.json" "nested deeper than 16 levels" \
  "$MEMGATE" history import "$E2E_TMP/deep.json" --history "$E2E_TMP/h.db"
try prior-deep "$E2E_TMP/deep.json" "nested deeper than 16 levels" \
  "$MEMGATE" run --prior "$E2E_TMP/deep.json" --history "$E2E_TMP/h.db" -- true
try import-wide "$E2E_TMP/wide.json" "more than 2097152 values" \
  "$MEMGATE" history import "$E2E_TMP/wide.json" --history "$E2E_TMP/h.db"
try prior-wide "$E2E_TMP/wide.json" "more than 2097152 values" \
  "$MEMGATE" run --prior "$E2E_TMP/wide.json" --history "$E2E_TMP/h.db" -- true
echo PASS
