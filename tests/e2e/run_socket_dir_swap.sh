#!/usr/bin/env bash
# The socket directory's base, attacked by another user (uid 65534). With
# TMPDIR (then XDG_RUNTIME_DIR) in a directory everyone may write and
# that is not sticky, the attacker waits until the build has started,
# renames root's memgate-XXXXXX there away and puts a symlink to a victim
# directory in its place. Before, every wrapper then ran ungated and root's
# clean-up deleted the victim's files. Now memgate passes over such a base
# with a warning that names it, makes its directory in /tmp, the swap finds
# nothing, the victim keeps its files and every job is gated.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the attack is on root's memgate)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
export PATH="$(fake_compilers):$PATH"
as_nobody() { setpriv --reuid 65534 --regid 65534 --clear-groups "$@"; }

chmod 0711 "$E2E_TMP"  # the attacker may pass through, not look around
victim="$E2E_TMP/victim"
mkdir "$victim" && echo keep >"$victim/precious"
w="$E2E_TMP/work"
memjob_workload "$w" "--peak 20M --duration 0.3" "--peak 20M --duration 0.3"

for var in TMPDIR XDG_RUNTIME_DIR; do
  shared="$E2E_TMP/shared-$var"
  mkdir -m 0777 "$shared" && chmod 0777 "$shared"  # writable by all, not sticky
  make -s -C "$w" clean
  # The attacker: once the build runs, swap whatever memgate made here.
  as_nobody timeout 60 bash -c '
    shared=$1 victim=$2
    until [ -e "$shared/started" ]; do sleep 0.05; done
    for d in "$shared"/memgate-*; do
      [ -d "$d" ] || continue
      mv "$d" "$shared/moved" && ln -s "$victim" "$d" && echo "swapped $d" >>"$shared/attack.log"
    done
    touch "$shared/attack.done"' _ "$shared" "$victim" &
  attacker=$!
  # The build waits for the attacker's turn, then compiles.
  env -u TMPDIR -u XDG_RUNTIME_DIR "$var=$shared" "$MEMGATE" run --jobs 2 --history "$E2E_TMP/h-$var.db" -- \
    sh -c 'echo "$MEMGATE_SOCKET" >"$1/socket"; touch "$1/started"
           n=0; until [ -e "$1/attack.done" ] || [ $n -ge 600 ]; do sleep 0.05; n=$((n + 1)); done
           exec make -s -C "$2" -j2' _ "$shared" "$w" >"$E2E_TMP/run-$var.log" 2>&1 ||
    { cat "$E2E_TMP/run-$var.log" >&2; fail "$var: memgate run failed"; }
  wait "$attacker" || true
  cat "$E2E_TMP/run-$var.log" >&2
  note "$var: attacker: $(cat "$shared/attack.log" 2>/dev/null || echo 'found nothing to swap')"

  [ -e "$victim/precious" ] || fail "$var: root deleted the victim's files through the swapped directory"
  grep -q "^memgate: warning: not putting the socket under $var=$shared: $shared: it is writable by group or others and not sticky; using /tmp" \
    "$E2E_TMP/run-$var.log" || fail "$var: no warning naming the untrusted base"
  socket=$(cat "$shared/socket")
  case $socket in /tmp/memgate-*/sock) ;; *) fail "$var: the socket was $socket, not in a private directory under /tmp" ;; esac
  [ ! -e "$(dirname "$socket")" ] || fail "$var: $(dirname "$socket") was left behind"
  ! grep -q "not answering" "$E2E_TMP/run-$var.log" || fail "$var: wrappers ran ungated"
  check_memjob_outputs "$w" || fail "$var: outputs missing"
  history_json "$E2E_TMP/h-$var.db" "$E2E_TMP/b-$var.json"
  assert_eq 2 "$(json_get "$E2E_TMP/b-$var.json" 'len(j["jobs"])')" "$var: gated jobs"
done
echo PASS
