#!/usr/bin/env bash
# The wheel of scripts/package (fixture e2e.package_build), installed with
# pip --no-index into a fresh venv: `memgate` is on the venv's PATH and
# `python -m memgate` runs it; the parts, priors, man page and completions
# are inside the package; memgate from the venv gates make -j4 (4 jobs in
# its history, the shims made beside its wrapper), and gates
# `pip install ./tiny_ext --no-build-isolation` run from the venv: every
# compile of the extension is a gated job and the module imports. Then
# the venv given to another user (root only): root's memgate from it warns
# that its parts are not safe to hand to the build and builds ungated.
source "$(dirname "$0")/lib.sh"
require_cgroups
: "${MEMGATE_BUILD:?}" "${MEMGATE_SRC:?}"
whl=$(ls "$MEMGATE_BUILD".package/dist/memgate-*.whl 2>/dev/null | head -n 1)
[ -n "$whl" ] || fail "no wheel in $MEMGATE_BUILD.package/dist (e2e.package_build makes it)"
export PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
venv="$E2E_TMP/venv"
/usr/bin/python3 -m venv "$venv" || fail "python3 -m venv"
"$venv/bin/pip" install -q --no-index "$whl" >"$E2E_TMP/pip.log" 2>&1 || fail "pip install the wheel: $(cat "$E2E_TMP/pip.log")"
export PATH="$venv/bin:$PATH"
assert_eq "$venv/bin/memgate" "$(command -v memgate)" "memgate on the venv's PATH"
pkg=$("$venv/bin/python" -c 'import memgate, os; print(os.path.dirname(memgate.__file__))')
data="$pkg/data"
for f in bin/memgate libexec/memgate/memgate-wrap libexec/memgate/libmemgate-preload.so \
  libexec/memgate/priors/flash-attn-2.json share/man/man1/memgate.1 \
  share/bash-completion/completions/memgate share/zsh/site-functions/_memgate; do
  [ -e "$data/$f" ] || fail "not in the package: $f"
done
[ -x "$data/bin/memgate" ] && [ -x "$data/libexec/memgate/memgate-wrap" ] || fail "the binaries lost their x bit"
[ -s "$venv/share/man/man1/memgate.1" ] || fail "no man page beside the venv's bin/"
version=$(memgate --version) || fail "memgate --version"
assert_eq "$version" "$("$venv/bin/python" -m memgate --version)" "python -m memgate --version"
note "$version from $whl"

cg=$(cg_make wheel 4G)
h="$E2E_TMP/h.db"
w="$E2E_TMP/w"
mkdir -p "$w"
for i in 1 2 3 4; do printf 'int f%d(void) { return %d; }\n' "$i" "$i" >"$w/f$i.c"; done
printf 'SRCS := $(wildcard *.c)\nall: $(SRCS:.c=.o)\n%%.o: %%.c\n\tcc -c $< -o $@\n' >"$w/Makefile"
cg_run "$cg" memgate run --quiet --history "$h" -- make -s -C "$w" -j4 || fail "memgate run from the venv"
assert_eq 4 "$(ls "$w"/*.o | wc -l)" "objects"
memgate history --json --build last --history "$h" >"$E2E_TMP/h.json"
assert_eq 4 "$(json_get "$E2E_TMP/h.json" 'len(j["jobs"])')" "gated jobs of make"
[ -L "$data/libexec/memgate/shims/cc" ] || note "no shims made beside the wrapper (the preload library gated every job)"

note "memgate run -- pip install ./tiny_ext --no-build-isolation"
cp -r "$MEMGATE_SRC/tests/e2e/projects/tiny_ext" "$E2E_TMP/tiny_ext"
cg_run "$cg" memgate run --quiet --history "$h" -- pip install -q --no-index --no-build-isolation "$E2E_TMP/tiny_ext" \
  >"$E2E_TMP/ext.log" 2>&1 || fail "gated pip install: $(tail -30 "$E2E_TMP/ext.log")"
memgate history --json --build last --history "$h" >"$E2E_TMP/ext.json"
assert_eq 2 "$(json_get "$E2E_TMP/ext.json" 'sum(1 for x in j["jobs"] if ":compile:" in x["identity"] and ("tiny.c" in x["identity"] or "add.c" in x["identity"]))')" \
  "gated compiles of the extension"
assert_eq 5 "$("$venv/bin/python" -c 'import tiny_ext; print(tiny_ext.add(2, 3))')" "tiny_ext.add(2, 3)"

if [ "$(id -u)" = 0 ]; then
  note "a venv another user (65534) owns: root's memgate from it hands none of its parts to the build"
  chown -R 65534:65534 "$venv"
  rm -f "$w"/*.o
  cg_run "$cg" memgate run --history "$h" -- make -s -C "$w" -j4 >"$E2E_TMP/other.log" 2>&1 ||
    fail "memgate run from another user's venv: $(cat "$E2E_TMP/other.log")"
  grep -q "^memgate: warning: compilers run ungated: memgate's parts are not safe to hand to the build ($venv: it is owned by uid 65534" \
    "$E2E_TMP/other.log" || fail "no warning about another user's parts: $(cat "$E2E_TMP/other.log")"
  grep -q "^memgate: finished in .*, no compiler jobs gated" "$E2E_TMP/other.log" || fail "jobs gated with untrusted parts"
  assert_eq 4 "$(ls "$w"/*.o | wc -l)" "objects of the ungated build"
fi
echo PASS
