# Shared helpers for the end-to-end suites (sourced, not run).
#
# Every memory scenario runs inside a cgroup this file creates below the
# test's own memory cgroup (tests/lib/cgroup.sh, v1 or v2), with a hard
# limit, so no test can push the machine into OOM. Everything created here
# is removed on exit, and only processes started here are ever killed.
set -euo pipefail

: "${MEMGATE:?MEMGATE must point at the memgate binary}"
: "${MEMJOB:?MEMJOB must point at the memjob binary}"

E2E_NAME=$(basename "$0" .sh)
E2E_TMP=$(mktemp -d "/tmp/memgate-e2e-$E2E_NAME.XXXXXX")

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "# $*" >&2; }

# The cgroup helpers (v1 and v2) are shared with the bench and the VM run.
source "$(dirname "${BASH_SOURCE[0]}")/../lib/cgroup.sh"
cglib_init "$E2E_TMP"

# Kept names: the suites say what they mean with these.
have_cgroup_v1_memory() { have_cgroups; }  # any version, despite the old name
require_cgroups() {
  have_cgroups || { echo "SKIP: no writable memory cgroup (v1 or v2) here"; exit 77; }
  cg_prepare || { echo "SKIP: cannot enable the memory controller below $(cg_base) (cgroup v2)"; exit 77; }
}

# cg_make NAME LIMIT -> prints the new cgroup's directory. LIMIT like 3G.
cg_make() { cg_new "memgate-test-$E2E_NAME-$$-$1" "$2"; }

e2e_cleanup() {
  cglib_cleanup
  rm -rf "$E2E_TMP"
}
trap e2e_cleanup EXIT

# child_of PID -> the PID of the first process whose parent is PID, or
# nothing. Pure bash, as busybox (the VM) has no `ps --ppid`: an awk over
# /proc/[0-9]*/stat is wrong here, as mawk gives up at the first file of the
# glob whose process has ended since (CI failed so under load). comm, in
# parentheses, may hold spaces: the fields are read after its last ")".
child_of() {
  local parent=$1 f line fields
  for f in /proc/[0-9]*/stat; do
    { read -r line <"$f"; } 2>/dev/null || continue
    read -r -a fields <<<"${line##*) }"  # state ppid pgrp ...
    if [ "${fields[1]:-}" = "$parent" ]; then f=${f#/proc/}; echo "${f%/stat}"; return 0; fi
  done
  return 0
}

# assert_eq EXPECTED ACTUAL MESSAGE
assert_eq() { [ "$1" == "$2" ] || fail "$3: expected '$1', got '$2'"; }

# Isolate memgate's per-user state (shim dir, default history, config
# file) per test.
export XDG_CACHE_HOME="$E2E_TMP/cache"
export XDG_CONFIG_HOME="$E2E_TMP/config"
unset MEMGATE_SOCKET MEMGATE_JOB MEMGATE_DISABLE MEMGATE_HISTORY MAX_JOBS || true

# A directory of fake compilers: every compiler name runs memjob. Put it
# in PATH behind memgate's shims: `export PATH="$(fake_compilers):$PATH"`.
fake_compilers() {
  local dir="$E2E_TMP/fakecc" name
  if [ ! -d "$dir" ]; then
    mkdir -p "$dir"
    for name in cc c++ gcc g++ nvcc; do ln -s "$MEMJOB" "$dir/$name"; done
  fi
  echo "$dir"
}

# memjob_workload DIR SPEC...: one DIR/jNN.job per SPEC (memjob options,
# e.g. "--peak 300M --ramp 0.3 --hold 0.5 --duration 1"), and a Makefile
# that "compiles" each into jNN.o with $(CC). With MEMJOB_EXT=c the
# sources are jNN.c (what distcc sends out).
memjob_workload() {
  local dir=$1 i=0 spec ext=${MEMJOB_EXT:-job}
  shift
  mkdir -p "$dir"
  for spec in "$@"; do
    printf 'memjob: %s\n' "$spec" >"$dir/$(printf 'j%03d' $i).$ext"
    i=$((i + 1))
  done
  sed "s/@EXT@/$ext/g" >"$dir/Makefile" <<'MK'
JOBS := $(sort $(wildcard *.@EXT@))
all: $(JOBS:.@EXT@=.o)
%.o: %.@EXT@
	$(CC) -c $< -o $@
clean:
	rm -f *.o
MK
}

# check_memjob_outputs DIR [EXT]: every jNN.EXT (default job) has a jNN.o
# that memjob wrote completely ("memjob-ok ..." as its first line).
check_memjob_outputs() {
  local dir=$1 ext=${2:-job} job out bad=0
  for job in "$dir"/*."$ext"; do
    out=${job%."$ext"}.o
    if [ ! -s "$out" ] || ! head -n1 "$out" | grep -q '^memjob-ok '; then
      echo "missing or incomplete output: $out" >&2
      bad=$((bad + 1))
    fi
  done
  [ "$bad" -eq 0 ]
}

# json_get FILE EXPR: evaluates a Python expression on the parsed JSON `j`.
json_get() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

# install_memgate PREFIX: `cmake --install` of the build under test into
# PREFIX (needs MEMGATE_BUILD, the build directory); prints PREFIX/bin/memgate.
install_memgate() {
  : "${MEMGATE_BUILD:?MEMGATE_BUILD must point at the build directory}"
  cmake --install "$MEMGATE_BUILD" --prefix "$1" >"$E2E_TMP/install-$(basename "$1").log" 2>&1 ||
    fail "cmake --install into $1: $(cat "$E2E_TMP/install-$(basename "$1").log")"
  echo "$1/bin/memgate"
}

# history_json DB FILE: the last build of history DB as JSON in FILE.
history_json() { "$MEMGATE" history --json --build last --history "$1" >"$2"; }
