#!/usr/bin/env bash
# Issue 11, done-means 6: `cmake --install` into a temporary prefix gives a
# memgate that works from that prefix alone (P/bin/memgate finds
# P/libexec/memgate/{memgate-wrap, libmemgate-preload.so, shims}), and two
# copies in two prefixes run at the same time without touching each other.
source "$(dirname "$0")/lib.sh"
command -v cc >/dev/null || { echo "SKIP: no cc"; exit 77; }
cg=$(cg_make install 4G)
p1="$E2E_TMP/p1" p2="$E2E_TMP/p2"
mg1=$(install_memgate "$p1")
mg2=$(install_memgate "$p2")

for p in "$p1" "$p2"; do
  for f in bin/memgate libexec/memgate/memgate-wrap libexec/memgate/libmemgate-preload.so \
    libexec/memgate/shims/.memgate-shims; do
    [ -e "$p/$f" ] || fail "not installed: $p/$f"
  done
  for name in cc c++ gcc g++ clang clang++ nvcc hipcc; do
    assert_eq ../memgate-wrap "$(readlink "$p/libexec/memgate/shims/$name")" "$p shim $name"
  done
  assert_eq "" "$(ls -A "$p/libexec/memgate/shims" | grep -vxE '\.memgate-shims|cc|c\+\+|gcc|g\+\+|clang|clang\+\+|nvcc|hipcc' || true)" \
    "nothing else in $p's shim directory"
done

# project DIR N: N compiles whose "compiler" reports which library and
# wrapper gated it (a cc script first in PATH that then runs the real cc).
project() {
  mkdir -p "$1/bin"
  cat >"$1/bin/cc" <<SH
#!/bin/sh
echo "\$LD_PRELOAD \$MEMGATE_JOB" >>"$1/seen"
sleep 0.3
exec /usr/bin/cc "\$@"
SH
  chmod +x "$1/bin/cc"
  for i in $(seq 1 "$2"); do printf 'int k%d(void) { return %d; }\n' "$i" "$i" >"$1/k$i.c"; done
  printf 'SRCS := $(wildcard *.c)\nall: $(SRCS:.c=.o)\n%%.o: %%.c\n\tcc -c $< -o $@\n' >"$1/Makefile"
}
fingerprint() { (cd "$1" && find . -printf '%p %y %s %m %l\n' | sort && find . -type f -exec sha256sum {} + | sort); }

note "memgate run -- make -j from the prefix alone"
project "$E2E_TMP/a" 6
(PATH="$E2E_TMP/a/bin:/usr/bin:/bin" cg_run "$cg" "$mg1" run --quiet --history "$E2E_TMP/h1.db" -- make -s -C "$E2E_TMP/a" -j) ||
  fail "installed memgate run"
assert_eq 6 "$(ls "$E2E_TMP"/a/*.o | wc -l)" "objects"
assert_eq "$p1/libexec/memgate/libmemgate-preload.so" "$(cut -d' ' -f1 "$E2E_TMP/a/seen" | sort -u)" "LD_PRELOAD of every job"
# A first build measures each translation unit by preprocessing it before
# asking for memory (MEMGATE_JOB=probe, see docs/run.md); every compile
# itself runs inside a job.
grep -qvE ' ([0-9]+|probe)$' "$E2E_TMP/a/seen" && fail "a compile ran outside a job: $(cat "$E2E_TMP/a/seen")"
assert_eq 6 "$(grep -cE ' [0-9]+$' "$E2E_TMP/a/seen")" "compiles inside a job"
MEMGATE="$mg1" history_json "$E2E_TMP/h1.db" "$E2E_TMP/h1.json"
assert_eq 6 "$(json_get "$E2E_TMP/h1.json" 'len(j["jobs"])')" "gated jobs"

note "two installed copies at once"
before=$(fingerprint "$p1")
project "$E2E_TMP/b1" 8
project "$E2E_TMP/b2" 8
(PATH="$E2E_TMP/b1/bin:/usr/bin:/bin" cg_run "$cg" "$mg1" run --quiet --history "$E2E_TMP/h1.db" -- make -s -C "$E2E_TMP/b1" -j4) &
first=$!
(PATH="$E2E_TMP/b2/bin:/usr/bin:/bin" MEMGATE_NO_PRELOAD=0 cg_run "$cg" "$mg2" run --quiet --history "$E2E_TMP/h2.db" -- make -s -C "$E2E_TMP/b2" -j4) ||
  fail "second copy"
wait "$first" || fail "first copy"
assert_eq "$p1/libexec/memgate/libmemgate-preload.so" "$(cut -d' ' -f1 "$E2E_TMP/b1/seen" | sort -u)" "first copy's library"
assert_eq "$p2/libexec/memgate/libmemgate-preload.so" "$(cut -d' ' -f1 "$E2E_TMP/b2/seen" | sort -u)" "second copy's library"
assert_eq "$before" "$(fingerprint "$p1")" "the first prefix, after the second copy ran"
MEMGATE="$mg2" history_json "$E2E_TMP/h2.db" "$E2E_TMP/h2.json"
assert_eq 8 "$(json_get "$E2E_TMP/h2.json" 'len(j["jobs"])')" "second copy's gated jobs"
echo "PASS"
