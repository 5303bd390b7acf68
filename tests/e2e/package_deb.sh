#!/usr/bin/env bash
# The .deb of scripts/package (fixture e2e.package_build): its control
# names Depends on libc6 at the version the binaries need (from
# dpkg-shlibdeps) and nothing memgate links statically; it holds
# /usr/bin/memgate, /usr/libexec/memgate/ (wrapper, preload library,
# priors, shims), the gzipped man page and both completions, all owned by
# root; unpacked with dpkg -x into a temp root, its memgate gates make -j4.
source "$(dirname "$0")/lib.sh"
require_cgroups
: "${MEMGATE_BUILD:?}"
deb=$(ls "$MEMGATE_BUILD".package/dist/memgate_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || fail "no .deb in $MEMGATE_BUILD.package/dist (e2e.package_build makes it)"
depends=$(dpkg-deb -f "$deb" Depends)
note "Depends: $depends"
[[ $depends == *"libc6 (>= "* ]] || fail "Depends without libc6: $depends"
[[ $depends != *libstdc++* && $depends != *libsqlite3* && $depends != *libfmt* ]] || fail "Depends on a static library: $depends"
assert_eq memgate "$(dpkg-deb -f "$deb" Package)" "package name"
dpkg-deb -c "$deb" >"$E2E_TMP/contents.txt"
for f in ./usr/bin/memgate ./usr/libexec/memgate/memgate-wrap ./usr/libexec/memgate/libmemgate-preload.so \
  ./usr/libexec/memgate/priors/flash-attn-2.json ./usr/libexec/memgate/shims/cc ./usr/share/man/man1/memgate.1.gz \
  ./usr/share/bash-completion/completions/memgate ./usr/share/zsh/vendor-completions/_memgate; do
  grep -q " $f\( -> .*\)\?$" "$E2E_TMP/contents.txt" || fail "not in the .deb: $f"
done
assert_eq "" "$(awk '$2 != "root/root"' "$E2E_TMP/contents.txt")" "files not owned by root"

r="$E2E_TMP/root"
dpkg -x "$deb" "$r" || fail "dpkg -x"
gzip -t "$r/usr/share/man/man1/memgate.1.gz" || fail "the man page is not gzip"
"$r/usr/bin/memgate" --version >/dev/null || fail "memgate --version from the .deb"
cg=$(cg_make deb 4G)
w="$E2E_TMP/w"
mkdir -p "$w"
for i in 1 2 3 4; do printf 'int f%d(void) { return %d; }\n' "$i" "$i" >"$w/f$i.c"; done
printf 'SRCS := $(wildcard *.c)\nall: $(SRCS:.c=.o)\n%%.o: %%.c\n\tcc -c $< -o $@\n' >"$w/Makefile"
cg_run "$cg" "$r/usr/bin/memgate" run --quiet --history "$E2E_TMP/h.db" -- make -s -C "$w" -j4 ||
  fail "memgate run from the .deb"
assert_eq 4 "$(ls "$w"/*.o | wc -l)" "objects"
"$r/usr/bin/memgate" history --json --build last --history "$E2E_TMP/h.db" >"$E2E_TMP/h.json"
assert_eq 4 "$(json_get "$E2E_TMP/h.json" 'len(j["jobs"])')" "gated jobs"
echo PASS
