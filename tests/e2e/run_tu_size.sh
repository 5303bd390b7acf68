#!/usr/bin/env bash
# A build memgate has not seen measures each C++ compile's preprocessed
# size (src/wrap/tu_size.hpp), and the first build's predictions scale by
# it: four compiles whose peaks follow their sizes (100 bytes of peak per
# preprocessed byte), one at a time; the fourth, four times the others'
# size, is predicted near its own peak, not at its siblings'. A second
# run of the same command here measures nothing, nor does a first one
# under MEMGATE_TU_SIZE=0.
#
# The compiler is a fake g++ (memjob for a compile; for -E, as many bytes
# as the source's "tu:" line says), so the sizes are known exactly.
source "$(dirname "$0")/lib.sh"
require_cgroups
cc_dir="$E2E_TMP/cc"
mkdir -p "$cc_dir"
cat >"$cc_dir/g++" <<SH
#!/bin/sh
for a in "\$@"; do
  case \$a in *.cpp) src=\$a ;; esac
done
for a in "\$@"; do
  if [ "\$a" = -E ]; then
    echo "-E \$src" >>"$E2E_TMP/preprocessed.log"
    exec head -c "\$(sed -n 's/^tu: //p' "\$src")" /dev/zero
  fi
done
exec "$MEMJOB" "\$@"
SH
chmod +x "$cc_dir/g++"
export PATH="$cc_dir:$PATH"

w="$E2E_TMP/tree"
mkdir -p "$w"
for f in a:1000000:100M b:1000000:100M c:1000000:100M d:4000000:400M; do
  IFS=: read -r name tu peak <<<"$f"
  printf 'memjob: --peak %s --ramp 0.1 --hold 0.2 --duration 0.5\ntu: %s\n' "$peak" "$tu" >"$w/$name.cpp"
done
cat >"$w/Makefile" <<'MK'
all: a.o b.o c.o d.o
%.o: %.cpp
	g++ -O2 -MD -c $< -o $@
MK

cg=$(cg_make tu 2G)
h="$E2E_TMP/h.db"
note "1. the first build: every compile measured"
cg_run "$cg" "$MEMGATE" run --quiet --jobs 1 --history "$h" -- make -s -C "$w" -j1
check_memjob_outputs "$w" cpp || fail "first build's outputs"
assert_eq 4 "$(wc -l <"$E2E_TMP/preprocessed.log")" "compiles measured in the first build"
history_json "$h" "$E2E_TMP/first.json"
python3 - "$E2E_TMP/first.json" <<'PY' || fail "the first build's prediction of d.cpp"
import json, sys
jobs = {j["identity"].split(":")[2].split("->")[0].split("/")[-1]: j for j in json.load(open(sys.argv[1]))["jobs"]}
d = jobs["d.cpp"]
ratio = d["predicted_peak_bytes"] / d["peak_bytes"]
print(f"d.cpp: predicted {d['predicted_peak_bytes'] >> 20} MiB from {d['predicted_source']}, "
      f"peaked at {d['peak_bytes'] >> 20} MiB ({ratio:.2f}x)", file=sys.stderr)
assert d["predicted_source"] == "build", d["predicted_source"]
assert 0.75 <= ratio <= 1.6, ratio  # its siblings' peak would be 0.25x
PY

note "2. the same command again: nothing is measured"
rm -f "$E2E_TMP/preprocessed.log"
rm -f "$w"/*.o
cg_run "$cg" "$MEMGATE" run --quiet --jobs 1 --history "$h" -- make -s -C "$w" -j1
check_memjob_outputs "$w" cpp || fail "second build's outputs"
[ ! -e "$E2E_TMP/preprocessed.log" ] || fail "a warm build measured $(wc -l <"$E2E_TMP/preprocessed.log") compiles"

note "3. a first build whose user said MEMGATE_TU_SIZE=0: nothing is measured"
rm -f "$w"/*.o
MEMGATE_TU_SIZE=0 cg_run "$cg" "$MEMGATE" run --quiet --jobs 1 --history "$E2E_TMP/h2.db" -- make -s -C "$w" -j1
check_memjob_outputs "$w" cpp || fail "third build's outputs"
[ ! -e "$E2E_TMP/preprocessed.log" ] || fail "MEMGATE_TU_SIZE=0 measured $(wc -l <"$E2E_TMP/preprocessed.log") compiles"
echo "PASS"
