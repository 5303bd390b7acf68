#!/usr/bin/env bash
# scripts/package, as the fixture of e2e.package_wheel and e2e.package_deb:
# builds the wheel and the .deb into $MEMGATE_BUILD.package/dist (its
# install build in $MEMGATE_BUILD.package, kept, so a rerun is
# incremental; beside the suite's build, at the same depth, its compiles
# are ccache hits of the suite's), and checks what it says: one wheel tagged for the glibc
# the binaries need, one .deb, binaries that need nothing but glibc.
# lib.sh moves XDG_CACHE_HOME into the test's temp directory, and ccache's
# default cache with it: keep the machine's.
if command -v ccache >/dev/null; then export CCACHE_DIR=${CCACHE_DIR:-$(ccache -k cache_dir)}; fi
source "$(dirname "$0")/lib.sh"
: "${MEMGATE_BUILD:?}" "${MEMGATE_SRC:?}"
for tool in /usr/bin/python3 dpkg-deb dpkg-shlibdeps help2man objdump; do
  command -v "$tool" >/dev/null || fail "scripts/package needs $tool (scripts/deps.sh installs it)"
done
/usr/bin/python3 -c 'import build, wheel, setuptools' 2>/dev/null || fail "no python3-build/python3-wheel/python3-setuptools"
dir="$MEMGATE_BUILD.package"
rm -rf "$dir/dist"
cache_of() { sed -n "s/^$1:[A-Z]*=//p" "$MEMGATE_BUILD/CMakeCache.txt"; }
MEMGATE_BUILD_TYPE=$(cache_of CMAKE_BUILD_TYPE) MEMGATE_WERROR=$(cache_of MEMGATE_WERROR) \
  MEMGATE_PACKAGE_BUILD="$dir" "$MEMGATE_SRC/scripts/package" --out "$dir/dist" >"$E2E_TMP/out.txt" 2>&1 ||
  fail "scripts/package: $(tail -30 "$E2E_TMP/out.txt")"
cat "$E2E_TMP/out.txt" >&2
assert_eq 1 "$(ls "$dir"/dist/memgate-*.whl | wc -l)" "wheels"
assert_eq 1 "$(ls "$dir"/dist/memgate_*.deb | wc -l)" "debs"
glibc=$(sed -n 's/.*needs glibc >= \([0-9.]*\) .*/\1/p' "$E2E_TMP/out.txt")
[ -n "$glibc" ] || fail "scripts/package did not say which glibc the binaries need"
whl=$(basename "$dir"/dist/memgate-*.whl)
case $whl in *-py3-none-manylinux_${glibc//./_}_$(uname -m).whl) ;; *) fail "wheel tag of $whl is not glibc $glibc" ;; esac
for f in memgate memgate-wrap libmemgate-preload.so; do
  libs=$(objdump -p "$dir/$f" | sed -n 's/^ *NEEDED *//p' | grep -vE '^(libc\.so\.6|libm\.so\.6|ld-linux-[a-z0-9_-]+\.so\.[0-9])$' || true)
  assert_eq "" "$libs" "libraries $f needs beyond glibc"
done
echo PASS
