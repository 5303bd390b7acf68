#!/usr/bin/env bash
# Issue 12, item 2: the wrapper (often root) must not take orders from
# whoever serves MEMGATE_SOCKET. A MEMGATE_SOCKET outlives its memgate
# (daemons the build started keep it; a killed memgate leaves its
# directory), and then anyone may serve that path. The old wrapper sent
# its request, took the grant, and its child wrote its pid to
# "<granted dir>/cgroup.procs" following symlinks: a fake governor run by
# nobody made root overwrite a root-only file.
#
# Here a fake governor (python, speaking the wire protocol of
# src/wrap/protocol.hpp) grants a dir whose cgroup.procs is a symlink to a
# root-only file, and a dir that climbs out of the cgroup mount with '..'.
#  1. served by uid 65534: the root wrapper refuses it (SO_PEERCRED), says
#     so in one line, sends it nothing, and runs the compile ungated;
#  2. served by root itself (a confused or stale governor of the same
#     uid): the wrapper talks to it but joins no granted dir that is not a
#     cgroup below a cgroup mount.
# Either way the root-only file is unchanged and the compile succeeds.
source "$(dirname "$0")/lib.sh"
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to act as nobody"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "SKIP: no /usr/bin/python3"; exit 77; }
export PATH="$(fake_compilers):$PATH"

chmod 0755 "$E2E_TMP"
w="$E2E_TMP/work"
memjob_workload "$w" "--peak 5M --duration 0.1" "--peak 5M --duration 0.1"
victim="$E2E_TMP/victim"
echo "root's secret" >"$victim"
chmod 0600 "$victim"
before=$(sha256sum <"$victim")

evil="$E2E_TMP/evil"  # the attacker's directory
mkdir -p "$evil/cg"
ln -s "$victim" "$evil/cg/cgroup.procs"
chown -R 65534:65534 "$evil"
cgmount=$(awk '$9 == "cgroup2" || ($9 == "cgroup" && $NF ~ /memory/) {print $5; exit}' /proc/self/mountinfo)
climb="${cgmount:-/sys/fs/cgroup}/../../../..$evil/cg"

cat >"$E2E_TMP/governor.py" <<'PY'
# A fake governor: grants every request the dirs in argv[3:], logs what it
# was told to argv[2], and says "done" to every exit. Ends when killed or
# after 60 s.
import json, os, socket, struct, sys
path, log, grants = sys.argv[1], sys.argv[2], sys.argv[3:]
def send(c, obj):
    data = json.dumps(obj).encode()
    c.sendall(struct.pack("<I", len(data)) + data)
def recv(c):
    head = b""
    while len(head) < 4:
        part = c.recv(4 - len(head))
        if not part:
            return None
        head += part
    (n,) = struct.unpack("<I", head)
    data = b""
    while len(data) < n:
        part = c.recv(n - len(data))
        if not part:
            return None
        data += part
    return json.loads(data)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o777)
s.listen(8)
s.settimeout(60)
with open(log, "a", buffering=1) as out:
    out.write("listening\n")
    while True:
        c, _ = s.accept()
        c.settimeout(30)
        try:
            while True:
                m = recv(c)
                if m is None:
                    out.write("hangup\n")
                    break
                out.write(m["type"] + "\n")
                if m["type"] == "request":
                    send(c, {"type": "grant", "job": 1, "attempt": 1, "cgroups": grants})
                elif m["type"] == "exit":
                    send(c, {"type": "verdict", "rerun": False})
        except (OSError, ValueError) as e:
            out.write("error %s\n" % e)
        c.close()
PY

# governor AS LOG: starts the fake governor (as nobody or root) on
# $evil/sock-AS and waits until it listens; prints its pid.
start_governor() {
  local as=$1 log=$2 sock="$evil/sock-$1"
  local run=()
  [ "$as" = nobody ] && run=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  : >"$log"
  chmod 0666 "$log"
  "${run[@]}" timeout 90 /usr/bin/python3 "$E2E_TMP/governor.py" "$sock" "$log" "$evil/cg" "$climb" \
    >/dev/null 2>>"$log" &
  local pid=$!
  for _ in $(seq 1 200); do
    grep -q listening "$log" && { echo "$pid"; return; }
    sleep 0.05
  done
  fail "the fake governor did not start: $(cat "$log")"
}

# compile SOCK JOB: the wrapper as root, as a build's compile would be.
compile() {
  (cd "$w" && MEMGATE_SOCKET=$1 "$MEMGATE" wrap -- cc -c "$2.job" -o "$2.o") 2>"$E2E_TMP/$2.err"
}

note "1. a governor served by nobody"
gpid=$(start_governor nobody "$E2E_TMP/nobody.log")
compile "$evil/sock-nobody" j000 || fail "the compile failed: $(cat "$E2E_TMP/j000.err")"
kill "$gpid" 2>/dev/null || true
wait "$gpid" 2>/dev/null || true
cat "$E2E_TMP/j000.err" >&2
assert_eq "$before" "$(sha256sum <"$victim")" "the root-only file after a governor run by nobody"
grep -q "not using the governor at $evil/sock-nobody: it runs as uid 65534" "$E2E_TMP/j000.err" ||
  fail "no warning about the foreign governor"
assert_eq 1 "$(grep -c 'memgate: ' "$E2E_TMP/j000.err")" "warning lines"
assert_eq 0 "$(grep -c '^request' "$E2E_TMP/nobody.log")" "requests the foreign governor received"

note "2. a governor of the same uid granting a symlink and a '..' path"
gpid=$(start_governor root "$E2E_TMP/root.log")
compile "$evil/sock-root" j001 || fail "the compile failed: $(cat "$E2E_TMP/j001.err")"
kill "$gpid" 2>/dev/null || true
wait "$gpid" 2>/dev/null || true
cat "$E2E_TMP/j001.err" >&2
assert_eq "$before" "$(sha256sum <"$victim")" "the root-only file after a grant of a symlinked cgroup.procs"
assert_eq 1 "$(grep -c '^request' "$E2E_TMP/root.log")" "requests the same-uid governor received"
assert_eq 1 "$(grep -c '^exit' "$E2E_TMP/root.log")" "exit reports"
grep -q "ignoring the granted cgroup $evil/cg: not below a memory, freezer or cgroup2 mount" "$E2E_TMP/j001.err" ||
  fail "the dir with a symlinked cgroup.procs was not refused"
grep -q "ignoring the granted cgroup .*: has a '.' or '..' component" "$E2E_TMP/j001.err" ||
  fail "the '..' path was not refused"

check_memjob_outputs "$w" || fail "the compiles did not produce their outputs"
echo "PASS"
