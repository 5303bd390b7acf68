# Shared helpers for the end-to-end suites (sourced, not run).
#
# Every memory scenario runs inside a cgroup this file creates below the
# test's own memory cgroup (read from /proc/self/cgroup), with a hard limit,
# so no test can push the machine into OOM. Everything created here is
# removed on exit, and only processes started here are ever killed.
set -euo pipefail

: "${MEMGATE:?MEMGATE must point at the memgate binary}"
: "${MEMJOB:?MEMJOB must point at the memjob binary}"

E2E_NAME=$(basename "$0" .sh)
E2E_TMP=$(mktemp -d "/tmp/memgate-e2e-$E2E_NAME.XXXXXX")
# cg_make runs in command substitutions (subshells), so the list of
# cgroups to remove lives in a file, not a variable.
E2E_CGROUP_LIST="$E2E_TMP/.cgroups"
: >"$E2E_CGROUP_LIST"

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "# $*" >&2; }

# The v1 memory hierarchy's mount point and this process's place in it.
cg_v1_root() { echo /sys/fs/cgroup/memory; }
cg_self() {
  local line
  line=$(grep -E '^[0-9]+:([^:]*,)?memory(,[^:]*)?:' /proc/self/cgroup || true)
  [ -n "$line" ] || return 1
  echo "$(cg_v1_root)${line##*:}"
}

have_cgroup_v1_memory() { [ -w "$(cg_self 2>/dev/null || echo /nonexistent)" ]; }
require_cgroups() {
  have_cgroup_v1_memory || { echo "SKIP: no writable cgroup v1 memory controller"; exit 77; }
}

# cg_make NAME LIMIT -> prints the new cgroup's directory. LIMIT like 3G.
cg_make() {
  local dir
  dir="$(cg_self)/memgate-test-$E2E_NAME-$$-$1"
  mkdir "$dir"
  echo "$dir" >>"$E2E_CGROUP_LIST"
  echo "$2" >"$dir/memory.limit_in_bytes"
  echo "$dir"
}

# cg_run DIR CMD...: runs CMD inside cgroup DIR (in the foreground).
cg_run() {
  local dir=$1
  shift
  bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' cg_run "$dir" "$@"
}

cg_oom_kills() { awk '$1=="oom_kill"{print $2}' "$1/memory.oom_control"; }

# Kills whatever is left in the cgroup (and its children), then removes them.
cg_destroy() {
  local dir=$1 sub pid tries
  [ -d "$dir" ] || return 0
  for sub in $(find "$dir" -mindepth 1 -type d | sort -r); do cg_destroy "$sub"; done
  for tries in $(seq 50); do
    local pids
    pids=$(cat "$dir/cgroup.procs" 2>/dev/null || true)
    [ -z "$pids" ] && break
    for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
    sleep 0.1
  done
  rmdir "$dir" 2>/dev/null || true
}

e2e_cleanup() {
  local dir
  for dir in $(tac "$E2E_CGROUP_LIST" 2>/dev/null); do cg_destroy "$dir"; done
  rm -rf "$E2E_TMP"
}
trap e2e_cleanup EXIT

# assert_eq EXPECTED ACTUAL MESSAGE
assert_eq() { [ "$1" == "$2" ] || fail "$3: expected '$1', got '$2'"; }

# Isolate memgate's per-user state (shim dir, default history) per test.
export XDG_CACHE_HOME="$E2E_TMP/cache"
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
# that "compiles" each into jNN.o with $(CC).
memjob_workload() {
  local dir=$1 i=0 spec
  shift
  mkdir -p "$dir"
  for spec in "$@"; do
    printf 'memjob: %s\n' "$spec" >"$dir/$(printf 'j%03d' $i).job"
    i=$((i + 1))
  done
  cat >"$dir/Makefile" <<'MK'
JOBS := $(sort $(wildcard *.job))
all: $(JOBS:.job=.o)
%.o: %.job
	$(CC) -c $< -o $@
clean:
	rm -f *.o
MK
}

# check_memjob_outputs DIR: every jNN.job has a jNN.o that memjob wrote
# completely ("memjob-ok ..." as its first line).
check_memjob_outputs() {
  local dir=$1 job out bad=0
  for job in "$dir"/*.job; do
    out=${job%.job}.o
    if [ ! -s "$out" ] || ! head -n1 "$out" | grep -q '^memjob-ok '; then
      echo "missing or incomplete output: $out" >&2
      bad=$((bad + 1))
    fi
  done
  [ "$bad" -eq 0 ]
}

# json_get FILE EXPR: evaluates a Python expression on the parsed JSON `j`.
json_get() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
