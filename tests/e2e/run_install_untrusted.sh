#!/usr/bin/env bash
# memgate installed where another user (uid 65534) can write its parts
# directory. That user swaps libmemgate-preload.so for a library of their
# own once the build has started; before, root's build tool and compilers
# loaded it (it leaves a marker with the uid it ran as), and the summary
# had no degraded: line. Now memgate hands none of its parts to the build
# (not the library, not the wrapper, not the shipped priors): compilers
# run ungated, and the warning and the degraded: line say why. The same
# install made safe again (the directory back to 0755) is used as before.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the attack is on root's memgate)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
cc=$(command -v cc) || { echo "SKIP: no C compiler for the attacker's library"; exit 77; }
as_nobody() { setpriv --reuid 65534 --regid 65534 --clear-groups "$@"; }

chmod 0711 "$E2E_TMP"
prefix="$E2E_TMP/prefix"
mg=$(install_memgate "$prefix")
parts="$prefix/libexec/memgate"
[ -e "$parts/libmemgate-preload.so" ] || fail "no preload library in $parts"
marker="$E2E_TMP/pwned"
cat >"$E2E_TMP/evil.c" <<EOF
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void evil(void) {
  FILE* f = fopen("$marker", "a");
  if (f) { fprintf(f, "uid %d pid %d\n", (int)geteuid(), (int)getpid()); fclose(f); }
}
EOF
"$cc" -shared -fPIC -o "$E2E_TMP/evil.so" "$E2E_TMP/evil.c" || fail "cannot build the attacker's library"
chmod 0755 "$E2E_TMP/evil.so"
export PATH="$(fake_compilers):$PATH"
w="$E2E_TMP/work"
memjob_workload "$w" "--peak 20M --duration 0.3" "--peak 20M --duration 0.3"

# run LOG: the build waits until the attacker had its turn, then compiles.
run() {
  "$mg" run --jobs 2 --history "$E2E_TMP/h.db" -- \
    sh -c 'touch "$1/started"; n=0; until [ -e "$1/swapped" ] || [ $n -ge 600 ]; do sleep 0.05; n=$((n + 1)); done
           exec make -s -C "$2" -j2' _ "$E2E_TMP/flags" "$w" >"$1" 2>&1 || { cat "$1" >&2; fail "memgate run failed"; }
  cat "$1" >&2
}
mkdir -m 0777 "$E2E_TMP/flags" && chmod 0777 "$E2E_TMP/flags"

chmod 0777 "$parts"  # the mistake: anyone may write the parts directory
as_nobody timeout 60 bash -c '
  until [ -e "$1/started" ]; do sleep 0.05; done
  cp "$3" "$2/.evil" && mv -f "$2/.evil" "$2/libmemgate-preload.so"
  touch "$1/swapped"' _ "$E2E_TMP/flags" "$parts" "$E2E_TMP/evil.so" &
attacker=$!
run "$E2E_TMP/run.log"
wait "$attacker" || fail "the attacker could not swap the library"
[ ! -e "$marker" ] || fail "the attacker's library ran in the build: $(cat "$marker" | sort -u | head -3 | tr '\n' ' ')"
grep -q "^memgate: warning: compilers run ungated: memgate's parts are not safe to hand to the build ($parts: it is writable by group or others)" \
  "$E2E_TMP/run.log" || fail "no warning naming the untrusted parts directory"
grep -q "^memgate: degraded: .*compilers not gated: memgate's parts are not safe to use ($parts: it is writable by group or others)" \
  "$E2E_TMP/run.log" || fail "no 'compilers not gated' on the degraded line"
grep -q "^memgate: degraded: .*shipped priors not used: $parts: it is writable by group or others" "$E2E_TMP/run.log" ||
  fail "no 'shipped priors not used' on the degraded line"
check_memjob_outputs "$w" || fail "outputs missing: an ungated build must still build"

note "the same install, safe again (its own library back, the directory 0755): gated as before"
install_memgate "$prefix" >/dev/null
chmod 0755 "$parts"
rm -f "$E2E_TMP/flags"/* && touch "$E2E_TMP/flags/swapped"
make -s -C "$w" clean
run "$E2E_TMP/run2.log"
! grep -q "degraded:" "$E2E_TMP/run2.log" || fail "a safe install ran degraded"
history_json "$E2E_TMP/h.db" "$E2E_TMP/b.json"
assert_eq 2 "$(json_get "$E2E_TMP/b.json" 'len(j["jobs"])')" "gated jobs from the safe install"
echo PASS
