#!/usr/bin/env bash
# Issue 16, Done means 1: the status line on a real terminal. memgate runs
# in tmux on a warm build (history knows its 12 jobs): the pinned bottom row
# shows `[k/12]`, a bar and an ETA; the build's own lines (make's command
# lines) arrive whole; after the build the row is gone and the terminal
# scrolls to its last row again. Then ^C in the middle of a build: memgate's
# message starts its own line, and nothing is left of the status line.
# The captured panes are kept under $MEMGATE_BUILD/test-artefacts.
source "$(dirname "$0")/lib.sh"
: "${MEMGATE_BUILD:?}"
require_cgroups
command -v tmux >/dev/null || { echo "SKIP: tmux is not installed"; exit 77; }
export PATH="$(fake_compilers):$PATH"
unset NO_COLOR
artefacts="$MEMGATE_BUILD/test-artefacts"
mkdir -p "$artefacts"

sock="$E2E_TMP/tmux.sock"
T() { tmux -S "$sock" "$@"; }
trap 'T kill-server 2>/dev/null || true; e2e_cleanup' EXIT

cg=$(cg_make tty 1G)
h="$E2E_TMP/h.db"
specs=()
for i in $(seq 0 11); do specs+=("--peak 16M --duration 1"); done
memjob_workload "$E2E_TMP/warm" "${specs[@]}"
specs=()
for i in $(seq 0 3); do specs+=("--peak 16M --duration 1 --hold-until $E2E_TMP/never --ready $E2E_TMP/ready.$i"); done
memjob_workload "$E2E_TMP/stuck" "${specs[@]}"
# The command typed in the terminal: memgate in the test's cgroup.
cat >"$E2E_TMP/build.sh" <<SH
echo \$\$ >>"$cg/cgroup.procs"
exec "$MEMGATE" run --history "$h" -- make -C "\$1" -j2
SH

note "the first build records 12 jobs"
cg_run "$cg" "$MEMGATE" run -q --history "$h" -- make -C "$E2E_TMP/warm" -j2 >/dev/null
make -s -C "$E2E_TMP/warm" clean

rows=30 cols=160
T -f /dev/null new-session -d -s mg -x $cols -y $rows "bash --norc --noprofile"
pane() { T capture-pane -p -J -t mg "$@"; }
# wait_pane REGEX [SECONDS]: until a line of the visible pane matches.
wait_pane() {
  local deadline=$((SECONDS + ${2:-60}))
  until pane | grep -Eq -- "$1"; do
    [ $SECONDS -lt $deadline ] || { pane >&2; fail "the pane never showed /$1/"; }
    sleep 0.1
  done
}
T send-keys -t mg "PS1='\$ '; clear" Enter
wait_pane '^\$ $' 10

note "warm build: the pinned line shows [k/12], a bar and an ETA"
T send-keys -t mg "bash $E2E_TMP/build.sh $E2E_TMP/warm; echo EXIT=\$?" Enter
status_re='^memgate: \[[0-9]+/12\] \[[=]*>? *\] [0-9.ms]+, ETA [0-9.ms]+, [0-9.]+ obj/min, [0-9]+ running, '
wait_pane "$status_re"
pane >"$artefacts/run_tty.status.txt"
pane -e >"$artefacts/run_tty.status.ansi"
note "captured: $artefacts/run_tty.status.txt"
bottom=$(tail -n 1 "$artefacts/run_tty.status.txt")
[[ $bottom =~ $status_re ]] || { cat "$artefacts/run_tty.status.txt" >&2; fail "the status is not on the bottom row: '$bottom'"; }
bar=$(grep -Eo '\] \[[=> ]+\]' <<<"$bottom")
assert_eq 24 "${#bar}" "a 20-column bar in '$bottom'"
grep -Eq $'\e\\[([0-9;]*;)?32[;m]' "$artefacts/run_tty.status.ansi" || fail "no colour on a terminal without NO_COLOR"

wait_pane '^EXIT=' 120
pane -S - >"$artefacts/run_tty.after.txt"
note "captured: $artefacts/run_tty.after.txt"
grep -qx 'EXIT=0' "$artefacts/run_tty.after.txt" || fail "the build failed"
for i in $(seq -f '%03g' 0 11); do
  grep -qx "cc -c j$i.job -o j$i.o" "$artefacts/run_tty.after.txt" || fail "make's line for j$i is not whole"
done
grep -Eq '^memgate: 12 jobs in ' "$artefacts/run_tty.after.txt" || fail "no summary"
! grep -q '.memgate:' "$artefacts/run_tty.after.txt" || fail "a memgate line glued to another line"
! grep -Eq '^memgate: \[[0-9]' "$artefacts/run_tty.after.txt" || fail "the status line was left behind"

# With the scroll region given back, output scrolls down to the last row.
scrolls_to_bottom() {
  T send-keys -t mg "clear; seq 1 $((rows + 5))" Enter
  wait_pane "^$((rows + 5))\$" 10
  wait_pane '^\$ $' 10
  assert_eq $((rows - 1)) "$(T display -p -t mg '#{cursor_y}')" "prompt row after $1 (scroll region restored)"
}
scrolls_to_bottom "the build"

note "^C in the middle of a build"
T send-keys -t mg "clear; bash $E2E_TMP/build.sh $E2E_TMP/stuck; echo EXIT=\$?" Enter
for _ in $(seq 600); do [ -e "$E2E_TMP/ready.1" ] && break; sleep 0.1; done
[ -e "$E2E_TMP/ready.1" ] || { pane >&2; fail "the stuck jobs never started"; }
wait_pane '^memgate: \[0\] '
T send-keys -t mg C-c
wait_pane '^EXIT=' 30
pane -S - >"$artefacts/run_tty.interrupt.txt"
note "captured: $artefacts/run_tty.interrupt.txt"
grep -qx 'EXIT=130' "$artefacts/run_tty.interrupt.txt" || fail "memgate did not exit 130 after ^C"
grep -qx 'memgate: Interrupt: stopping the build' "$artefacts/run_tty.interrupt.txt" ||
  fail "memgate's ^C message is not a line of its own"
! grep -q '.memgate:' "$artefacts/run_tty.interrupt.txt" || fail "a memgate line glued to another line after ^C"
! grep -Eq '^memgate: \[[0-9]' "$artefacts/run_tty.interrupt.txt" || fail "the status line was left behind after ^C"
scrolls_to_bottom "^C"
echo "ok: panes in $artefacts/run_tty.{status,after,interrupt}.txt"
