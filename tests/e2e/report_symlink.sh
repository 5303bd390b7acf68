#!/usr/bin/env bash
# Issue 12, item 1: report and trace files are written by root (memgate
# usually runs as root) into directories other users can write (/tmp). The
# old code wrote `<path>.tmp-<pid>` with O_CREAT|O_TRUNC, so a symlink
# planted there by another user made root overwrite its target.
#
# Here uid 65534 plants symlinks to a root-only file at the predictable
# temp names (the pid is known: the shell that plants them execs memgate)
# and at a report path itself, in a sticky world-writable directory.
# `memgate run --report/--trace` and `memgate report --html/--trace` must
# leave the root-only file untouched and write real files at the names
# given. A symlink at the final name is replaced, never followed
# (rename(2) does not follow one): a name in a shared directory may have
# been planted by anyone.
source "$(dirname "$0")/lib.sh"
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to act as nobody"; exit 77; }
export PATH="$(fake_compilers):$PATH"

w="$E2E_TMP/work"
memjob_workload "$w" "--peak 5M --duration 0.1"
chmod 0755 "$E2E_TMP"
pub="$E2E_TMP/pub"  # like /tmp
mkdir -m 1777 "$pub"
victim="$E2E_TMP/victim"
echo "root's secret" >"$victim"
chmod 0600 "$victim"
before=$(sha256sum <"$victim")

as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
export -f as_nobody
export victim pub

# planted "NAME..." CMD...: nobody plants $pub/NAME.tmp-<pid> -> victim for
# the pid CMD is about to have, then CMD runs (exec keeps the pid).
planted() {
  local names=$1
  shift
  bash -c 'for n in $0; do as_nobody ln -s "$victim" "$pub/$n.tmp-$$"; done; exec "$@"' "$names" "$@"
}
check_victim() { assert_eq "$before" "$(sha256sum <"$victim")" "the root-only file after $1"; }
# regular FILE: written as a real file (not through a link), non-empty.
regular() { [ -f "$1" ] && [ ! -L "$1" ] && [ -s "$1" ] || fail "$1 is not a regular non-empty file"; }

note "memgate run --report --trace, with planted temp names and a planted final name"
as_nobody ln -s "$victim" "$pub/final.html"
planted "run.html run.json final.html" \
  "$MEMGATE" run --history "$E2E_TMP/h.db" --report "$pub/run.html" --trace "$pub/run.json" \
  -- make -s -C "$w" >"$E2E_TMP/run.log" 2>&1 || { cat "$E2E_TMP/run.log" >&2; fail "memgate run failed"; }
check_victim "memgate run --report/--trace"
regular "$pub/run.html"
regular "$pub/run.json"
grep -q '<html' "$pub/run.html" || fail "run.html is not the report"

planted "final.html" "$MEMGATE" run --history "$E2E_TMP/h.db" --report "$pub/final.html" \
  -- make -s -C "$w" >"$E2E_TMP/run2.log" 2>&1 || { cat "$E2E_TMP/run2.log" >&2; fail "memgate run failed"; }
check_victim "memgate run --report onto a planted symlink"
regular "$pub/final.html"

note "memgate report --html --trace"
planted "rep.html rep.json" "$MEMGATE" report --history "$E2E_TMP/h.db" --html "$pub/rep.html" \
  --trace "$pub/rep.json" >/dev/null
check_victim "memgate report --html/--trace"
regular "$pub/rep.html"
regular "$pub/rep.json"

# Nothing but the planted links and the reports is left behind.
leftover=$(find "$pub" -name '.*' -type f | wc -l)
assert_eq 0 "$leftover" "temporary files left in the directory"
echo "PASS"
