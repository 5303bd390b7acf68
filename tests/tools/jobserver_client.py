#!/usr/bin/env python3
"""A small GNU make jobserver client for the e2e tests, and their counters.

  jobserver_client.py work N SECS LOG   run N work items of SECS each, one on
      the implicit token and each further one on a token read from the
      jobserver named in MAKEFLAGS (fifo:PATH or R,W), stamping LOG
  jobserver_client.py leak K            take K tokens, then die by SIGKILL
  jobserver_client.py overlap LOG [PREFIX]  most stamped items at once
  jobserver_client.py check-fifo        the fifo is a private fifo (0600, ours)
"""
import os
import re
import signal
import stat
import sys
import threading
import time


def auth():
    flags = os.environ.get("MAKEFLAGS", "")
    m = re.findall(r"--jobserver-auth=(\S+)", flags)
    if not m:
        sys.exit("no --jobserver-auth in MAKEFLAGS: %r" % flags)
    a = m[-1]
    if a.startswith("fifo:"):
        path = a[5:]
        return os.open(path, os.O_RDONLY), os.open(path, os.O_WRONLY), path
    r, w = a.split(",")
    return int(r), int(w), None


def stamp(log, what, name):
    with open(log, "a") as f:
        f.write("%s %s %.6f\n" % (what, name, time.time()))


def work(n, secs, log):
    rfd, wfd, _ = auth()
    lock = threading.Lock()

    def item(i, token):
        stamp(log, "start", "w%d" % i)
        time.sleep(secs)
        stamp(log, "end", "w%d" % i)
        if token is not None:
            with lock:
                os.write(wfd, token)

    threads = []
    for i in range(n):
        token = None if i == 0 else os.read(rfd, 1)  # the first runs on the implicit token
        t = threading.Thread(target=item, args=(i, token))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()


def leak(k):
    rfd, _, _ = auth()
    got = b""
    while len(got) < k:
        got += os.read(rfd, k - len(got))
    sys.stdout.write("took %d\n" % len(got))
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def overlap(log, prefix=""):
    ev = []
    for line in open(log):
        what, name, t = line.split()
        if name.startswith(prefix):
            ev.append((float(t), 0 if what == "end" else 1))
    cur = most = 0
    for _, d in sorted(ev):
        cur += 1 if d else -1
        most = max(most, cur)
    print(most)


def check_fifo():
    _, _, path = auth()
    st = os.lstat(path)
    ok = stat.S_ISFIFO(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid()
    d = os.lstat(os.path.dirname(path))
    ok = ok and stat.S_IMODE(d.st_mode) == 0o700
    print("private" if ok else "not private: %o %o" % (st.st_mode, d.st_mode))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "work":
        work(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
    elif cmd == "leak":
        leak(int(sys.argv[2]))
    elif cmd == "overlap":
        overlap(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
    elif cmd == "check-fifo":
        check_fifo()
