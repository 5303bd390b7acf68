#!/usr/bin/env bash
# Issue 3, "the protocol", against the real governor of `memgate run`:
# garbage, oversized, zero-length and truncated frames get those
# connections dropped (and logged), a peer running as nobody is refused,
# and the governor carries on: the build behind them still succeeds.
#
# The build command itself is the attacker: it reads MEMGATE_SOCKET from
# its environment, sends the bad frames, then runs a normal make.
source "$(dirname "$0")/lib.sh"
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to act as nobody"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "SKIP: no /usr/bin/python3"; exit 77; }
export PATH="$(fake_compilers):$PATH"

specs=()
for i in $(seq 0 7); do specs+=("--peak 10M --duration 0.2"); done
w="$E2E_TMP/work"
memjob_workload "$w" "${specs[@]}"

cat >"$E2E_TMP/attack.sh" <<'SH'
set -euo pipefail
# client MODE: one connection misbehaving in one way; prints "closed" once
# the governor hangs up on it (or "open" if it is still talking after 20 s).
client() {
  /usr/bin/python3 -c '
import json, socket, struct, sys
mode, path = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(20)
s.connect(path)
request = json.dumps({"type": "request", "v": 1, "argv": ["cc", "-c", "x.c"], "cwd": "/", "tool": "cc",
                      "identity": "x", "klass": "cc", "stem": "x", "cpu_weight": 1, "pid": 1}).encode()
frames = {"garbage": struct.pack("<I", 11) + b"{not json!!",
          "oversized": struct.pack("<I", 64 * 1024 * 1024),
          "zero": struct.pack("<I", 0),
          "truncated": (struct.pack("<I", len(request)) + request)[:15],
          "request": struct.pack("<I", len(request)) + request}
try:
    s.sendall(frames[mode])
    if mode == "truncated":
        s.shutdown(socket.SHUT_WR)
    print("closed" if s.recv(1) == b"" else "open")
except (BrokenPipeError, ConnectionResetError):  # refused before we finished talking
    print("closed")
except socket.timeout:
    print("open")
' "$1" "$MEMGATE_SOCKET"
}
for mode in garbage oversized zero truncated; do echo "$mode: $(client "$mode")"; done
# Let nobody reach the socket (test only: the directory is 0700), so that
# the uid check itself is what turns it away.
chmod 0755 "$(dirname "$MEMGATE_SOCKET")"
chmod 0777 "$MEMGATE_SOCKET"
echo "nobody: $(setpriv --reuid=65534 --regid=65534 --clear-groups bash -c "$(declare -f client); client request")"
make -s -C "$WORK" -j4
SH

set +e
WORK="$w" "$MEMGATE" run --history "$E2E_TMP/h.db" -- bash "$E2E_TMP/attack.sh" >"$E2E_TMP/out.log" 2>"$E2E_TMP/err.log"
rc=$?
set -e
cat "$E2E_TMP/out.log" "$E2E_TMP/err.log" >&2
assert_eq 0 "$rc" "memgate run exit status"
for mode in garbage oversized zero truncated nobody; do
  assert_eq "$mode: closed" "$(grep "^$mode:" "$E2E_TMP/out.log")" "$mode connection"
done
assert_eq 4 "$(grep -c 'memgate: warning: dropped a malformed message from pid' "$E2E_TMP/err.log")" \
  "malformed messages logged"
assert_eq 1 "$(grep -c 'refused a connection from uid 65534' "$E2E_TMP/err.log")" "refusals logged"
check_memjob_outputs "$w" || fail "the build behind the bad clients did not finish correctly"
echo "PASS"
