"""memgate: run a parallel build at the highest parallelism its memory allows.

The wheel carries memgate's native install tree in memgate/data/ (bin/,
libexec/memgate/, share/): the binary finds its wrapper, preload library
and priors relative to itself, as an installed memgate does. The `memgate`
command and `python -m memgate` replace this process with that binary.
"""
import os
import sys

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
BIN_DIR = os.path.join(DATA, "bin")
MAN_DIR = os.path.join(DATA, "share", "man")


def program():
    """The path of the memgate binary in this package."""
    return os.path.join(BIN_DIR, "memgate")


def main():
    exe = program()
    try:
        os.execv(exe, [exe] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write(f"memgate: cannot run {exe}: {e.strerror}\n")
        return 125
