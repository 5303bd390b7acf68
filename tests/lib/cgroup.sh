# tests/lib/cgroup.sh: test cgroups on cgroup v1 or v2, for the end-to-end
# suites (tests/e2e/lib.sh), the bench (bench/lib/common.sh) and the VM run
# (tests/vm). Sourced, not run; needs bash.
#
# Every memory scenario runs in a cgroup made here, below this process's own
# memory cgroup, with a hard limit, so nothing a test starts can push the
# machine into OOM. What is made here is listed in $CGLIB_LIST and removed by
# cglib_cleanup; only processes inside those cgroups are ever killed.
#
# v1: the memory hierarchy (and the freezer's, for memgate's leftovers).
# v2: one tree, with its "no internal processes" rule: a cgroup that holds
# processes cannot give its children a memory controller. If ours does, we
# move its processes into a leaf child ($CGLIB_LEAF) and enable +memory (and
# +cpu where offered) for the children; cglib_cleanup undoes that once no
# test cgroup is left beside the leaf. Both steps hold a flock on the cgroup
# directory, so suites running side by side (ctest -j) agree.
#
# MEMGATE_CGROUP_FS (default /sys/fs/cgroup) and MEMGATE_PROC_CGROUP
# (default /proc/self/cgroup) point the library at a fake tree, which is how
# tests/e2e/cglib_fixture.sh tests it without root.

CGLIB_FS=${MEMGATE_CGROUP_FS:-/sys/fs/cgroup}
CGLIB_PROC_CGROUP=${MEMGATE_PROC_CGROUP:-/proc/self/cgroup}
CGLIB_LEAF=memgate-test-leaf
: "${CGLIB_TMP:=}"   # set by cglib_init
CGLIB_LIST=""        # cgroups we made (a file: cg_new runs in subshells)
CGLIB_PREPARED=""    # v2 bases whose processes sit in our leaf, one a line

# cglib_init TMPDIR: where the library keeps its lists. Call once.
cglib_init() {
  CGLIB_TMP=$1
  CGLIB_LIST="$CGLIB_TMP/.cglib-cgroups"
  CGLIB_PREPARED="$CGLIB_TMP/.cglib-prepared"
  : >"$CGLIB_LIST"
  : >"$CGLIB_PREPARED"
}

# The path of this process in the hierarchy carrying $1 (v1 controller
# name, or "" for the v2 line "0::/path").
cglib_path() {
  local re
  if [ -n "$1" ]; then re="^[0-9]+:([^:]*,)?$1(,[^:]*)?:"; else re='^0::'; fi
  grep -E "$re" "$CGLIB_PROC_CGROUP" 2>/dev/null | head -n1 | cut -d: -f3-
}

# v1, v2 or none: v1 when a v1 hierarchy carries memory (a host may mount an
# empty cgroup2 beside it, as this project's dev machines do), else v2 when
# the unified root offers memory.
cg_version() {
  if [ -n "$(cglib_path memory)" ] && [ -d "$CGLIB_FS/memory" ]; then echo v1
  elif [ -n "$(cglib_path "")" ] && grep -qw memory "$CGLIB_FS/cgroup.controllers" 2>/dev/null; then echo v2
  else echo none; fi
}

# cg_self [CONTROLLER]: the directory of our own cgroup (the memory one by
# default; v1 also freezer or cpu).
cg_self() {
  local ctl=${1:-memory} path mount
  case $(cg_version) in
    v1) path=$(cglib_path "$ctl"); mount="$CGLIB_FS/$ctl" ;;
    v2) path=$(cglib_path ""); mount=$CGLIB_FS ;;
    *) return 1 ;;
  esac
  [ -n "$path" ] || return 1
  if [ "$path" = / ]; then echo "$mount"; else echo "$mount$path"; fi
}

# Where test cgroups go: our own cgroup, or on v2 the parent of the leaf we
# were moved into.
cg_base() {
  local self
  self=$(cg_self) || return 1
  if [ "$(cg_version)" = v2 ] && [ "${self##*/}" = "$CGLIB_LEAF" ]; then echo "${self%/*}"; else echo "$self"; fi
}

# The v1 memory mount, or the v2 root: where walks up the tree stop.
cg_mount_root() {
  case $(cg_version) in
    v1) echo "$CGLIB_FS/memory" ;;
    v2) echo "$CGLIB_FS" ;;
    *) return 1 ;;
  esac
}

have_cgroups() { local b; b=$(cg_base 2>/dev/null) && [ -w "$b" ]; }

# Runs "$@" holding an exclusive flock on directory $1 (unlocked if flock
# is missing: a lone suite needs no lock).
cglib_locked() {
  local dir=$1 fd rc=0
  shift
  command -v flock >/dev/null || { "$@"; return; }
  exec {fd}<"$dir"
  flock "$fd"
  "$@" || rc=$?
  exec {fd}<&-
  return "$rc"
}

cglib_is_v2_root() { [ ! -e "$1/cgroup.type" ]; }  # only the real root lacks cgroup.type
cglib_enabled() { grep -qw -- "$2" "$1/cgroup.subtree_control" 2>/dev/null; }

# Moves every process of $1 into $1/$CGLIB_LEAF, then enables the memory
# (and cpu) controller for $1's children. The real root may hold processes
# and still have controllers enabled, so it needs no leaf.
cglib_v2_leaf_move() {
  local base=$1 leaf="$1/$CGLIB_LEAF" pid tries
  cglib_enabled "$base" memory && return 0
  if ! cglib_is_v2_root "$base"; then
    mkdir -p "$leaf"
    for tries in 1 2 3; do  # processes may fork while we move them
      for pid in $(cg_procs "$base"); do echo "$pid" >>"$leaf/cgroup.procs" 2>/dev/null || true; done
    done
  fi
  echo +memory >>"$base/cgroup.subtree_control" || return 1
  if grep -qw cpu "$base/cgroup.controllers" 2>/dev/null && ! cglib_enabled "$base" cpu; then
    echo +cpu >>"$base/cgroup.subtree_control" 2>/dev/null || true
  fi
}

# v2: make sure children of our base can have a memory controller. A base
# with our leaf in it is noted for cglib_cleanup, whichever suite made it.
cg_prepare() {
  [ "$(cg_version)" = v2 ] || return 0
  local base
  base=$(cg_base) || return 1
  cglib_enabled "$base" memory || cglib_locked "$base" cglib_v2_leaf_move "$base" || return 1
  if [ -d "$base/$CGLIB_LEAF" ] && [ -n "$CGLIB_PREPARED" ] && ! grep -qxF "$base" "$CGLIB_PREPARED"; then
    echo "$base" >>"$CGLIB_PREPARED"
  fi
}

# Undoes cglib_v2_leaf_move for $1 once no test cgroup (memgate-*) is left
# beside the leaf: controllers off again, the leaf's processes back, the leaf
# removed. Before the move $1 held processes, so no controller can have been
# enabled there but by a leaf move.
cglib_v2_leaf_undo() {
  local base=$1 ctl pid sub
  for sub in "$base"/memgate-*/; do
    [ -d "$sub" ] || continue
    sub=${sub%/}
    [ "${sub##*/}" = "$CGLIB_LEAF" ] || return 0  # another suite's cgroups are still here
  done
  for ctl in cpu memory; do
    if cglib_enabled "$base" "$ctl"; then echo "-$ctl" >>"$base/cgroup.subtree_control" 2>/dev/null || true; fi
  done
  [ -d "$base/$CGLIB_LEAF" ] || return 0
  for pid in $(cg_procs "$base/$CGLIB_LEAF"); do echo "$pid" >>"$base/cgroup.procs" 2>/dev/null || true; done
  rmdir "$base/$CGLIB_LEAF" 2>/dev/null || true
}

# cg_limit_file: the file holding the hard limit.
cg_limit_file() { if [ "$(cg_version)" = v1 ]; then echo memory.limit_in_bytes; else echo memory.max; fi; }

# cg_set_limit DIR LIMIT (like 3G; both versions take K/M/G suffixes).
cg_set_limit() { echo "$2" >"$1/$(cg_limit_file)"; }

# cg_limit DIR: the limit set on DIR itself in bytes, or "max". v2 counts
# memory.high too, as memgate does (above it the kernel throttles hard).
cg_limit() {
  local dir=$1 v best=max f
  if [ "$(cg_version)" = v1 ]; then
    v=$(cat "$dir/memory.limit_in_bytes" 2>/dev/null) || { echo max; return; }
    # v1 shows "no limit" as a page-rounded number near 2^63.
    if [ "$v" -ge $((1 << 62)) ]; then echo max; else echo "$v"; fi
    return
  fi
  for f in memory.max memory.high; do
    v=$(cat "$dir/$f" 2>/dev/null) || continue
    [ "$v" = max ] && continue
    if [ "$best" = max ] || [ "$v" -lt "$best" ]; then best=$v; fi
  done
  echo "$best"
}

# cg_child PARENT NAME [LIMIT] -> prints the new cgroup's directory, listed
# for cglib_cleanup. v2 first enables the memory controller in PARENT,
# which must then hold no processes of its own.
cg_child() {
  local parent=$1 dir="$1/$2"
  if [ "$(cg_version)" = v2 ] && ! cglib_enabled "$parent" memory; then
    echo +memory >>"$parent/cgroup.subtree_control"
    grep -qw cpu "$parent/cgroup.controllers" 2>/dev/null && { echo +cpu >>"$parent/cgroup.subtree_control" 2>/dev/null || true; }
  fi
  mkdir "$dir"
  [ -n "$CGLIB_LIST" ] && echo "$dir" >>"$CGLIB_LIST"
  [ $# -lt 3 ] || cg_set_limit "$dir" "$3"
  echo "$dir"
}

# cg_new NAME LIMIT -> a new cgroup below our base, with a hard limit. NAME
# starts with "memgate-": cglib_cleanup keeps a v2 leaf while such cgroups
# remain (another suite's).
cg_new() {
  local base
  cg_prepare
  base=$(cg_base)
  cglib_locked "$base" cg_child "$base" "$1" "$2"
}

# cg_enter DIR [PID]: moves PID (default: this shell) into DIR.
cg_enter() { echo "${2:-$BASHPID}" >>"$1/cgroup.procs"; }

# cg_run DIR CMD...: runs CMD inside cgroup DIR (in the foreground).
cg_run() {
  local dir=$1
  shift
  bash -c 'echo $$ >>"$1/cgroup.procs" && shift && exec "$@"' cg_run "$dir" "$@"
}

cg_procs() { cat "$1/cgroup.procs" 2>/dev/null || true; }

# OOM kills of processes that lived in DIR itself, not in cgroups below it:
# the kills "outside memgate's cgroup" when memgate runs in DIR. v1's
# counter is local already; v2's memory.events counts the subtree, so v2
# reads memory.events.local (4.19+; else memory.events).
cg_oom_kills() {
  local f
  if [ "$(cg_version)" = v1 ]; then f=memory.oom_control
  elif [ -e "$1/memory.events.local" ]; then f=memory.events.local
  else f=memory.events; fi
  awk '$1=="oom_kill"{print $2; found=1} END {if (!found) print 0}' "$1/$f"
}

# cg_peak DIR: the highest usage of DIR. v1 max_usage_in_bytes; v2
# memory.peak (5.19+), else what cg_sample_peak saw, else memory.current.
cg_peak() {
  local dir=$1 sampled
  if [ "$(cg_version)" = v1 ]; then cat "$dir/memory.max_usage_in_bytes"; return; fi
  if [ -e "$dir/memory.peak" ]; then cat "$dir/memory.peak"; return; fi
  sampled=$(cat "$(cglib_peak_file "$dir")" 2>/dev/null || true)
  if [ -n "$sampled" ]; then echo "$sampled"; else cat "$dir/memory.current"; fi
}

cglib_peak_file() { echo "${CGLIB_TMP:-/tmp}/.cglib-peak$(echo "$1" | tr / _)"; }

# cg_sample_peak DIR: where the kernel keeps no peak (v2 before 5.19),
# samples memory.current every 50 ms in the background for cg_peak. Prints
# the sampler's pid (kill it when the run is over), or nothing.
cg_sample_peak() {
  local dir=$1 file
  [ "$(cg_version)" = v2 ] && [ ! -e "$dir/memory.peak" ] || return 0
  file=$(cglib_peak_file "$dir")
  echo 0 >"$file"
  (
    max=0
    while [ -e "$dir/memory.current" ]; do
      cur=$(cat "$dir/memory.current" 2>/dev/null) || break
      if [ "$cur" -gt "$max" ]; then max=$cur; echo "$max" >"$file"; fi
      sleep 0.05
    done
  ) >/dev/null 2>&1 &
  echo $!
}

# cg_cpu_favour DIR WEIGHT: a large CPU share for what runs in DIR. v2
# writes cpu.weight (1-10000, default 100); v1 has its own cpu hierarchy, so
# this shell moves into a new cpu cgroup there with cpu.shares WEIGHT*1024/100
# (cglib_cleanup moves it back). False where neither can be done.
cg_cpu_favour() {
  local dir=$1 weight=$2 home cpu_cg
  if [ "$(cg_version)" = v2 ]; then
    [ -e "$dir/cpu.weight" ] && echo "$weight" >"$dir/cpu.weight"
    return
  fi
  [ -s "$CGLIB_TMP/.cglib-cpu-home" ] && return 0  # done already
  home=$(cg_self cpu) && [ -w "$home" ] || return 1
  cpu_cg="$home/memgate-test-cpu-$$"
  mkdir "$cpu_cg" && echo "$cpu_cg" >>"$CGLIB_LIST"
  echo $((weight * 1024 / 100)) >"$cpu_cg/cpu.shares"
  echo "$home" >"$CGLIB_TMP/.cglib-cpu-home"
  cg_enter "$cpu_cg" $$
}

# Thaws, then kills, whatever is left in DIR and below, and removes it
# (deepest first). Works on v1 memory and freezer directories and on v2,
# where cgroup.kill (5.14+) ends the whole subtree at once.
cg_destroy() {
  local dir=$1 tries pids pid sub
  [ -d "$dir" ] || return 0
  cglib_thaw_tree "$dir"
  [ -f "$dir/cgroup.kill" ] && { echo 1 >"$dir/cgroup.kill" 2>/dev/null || true; }
  for tries in $(seq 100); do
    pids=$(find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null || true)
    [ -z "$pids" ] && break
    for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
    sleep 0.1
  done
  for sub in $(find "$dir" -mindepth 1 -type d 2>/dev/null | sort -r); do rmdir "$sub" 2>/dev/null || true; done
  for tries in $(seq 20); do  # the kernel may still be tearing the last tasks down
    rmdir "$dir" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "cglib: could not remove cgroup $dir" >&2
}

# A v1 child frozen on its own stays frozen when its parent thaws, so every
# level is thawed (v2's cgroup.freeze is per cgroup too).
cglib_thaw_tree() {
  local f
  for f in $(find "$1" \( -name freezer.state -o -name cgroup.freeze \) 2>/dev/null); do
    case $f in
      */freezer.state) echo THAWED >"$f" 2>/dev/null || true ;;
      *) echo 0 >"$f" 2>/dev/null || true ;;
    esac
  done
}

# Removes what memgate (pid $1) left in the v1 freezer hierarchy if it
# died; on v2 its cgroups lie inside the test cgroup it ran in.
cg_memgate_leftovers() {
  local fz
  [ "$(cg_version)" = v1 ] || return 0
  fz=$(cg_self freezer 2>/dev/null) || return 0
  cg_destroy "$fz/memgate-$1"
}

# Everything made here, newest first; then the v2 leaf moves are undone.
cglib_cleanup() {
  local dir home
  [ -n "$CGLIB_TMP" ] || return 0
  if [ -s "$CGLIB_TMP/.cglib-cpu-home" ]; then
    home=$(cat "$CGLIB_TMP/.cglib-cpu-home")
    cg_enter "$home" $$ 2>/dev/null || true
  fi
  for dir in $(awk '{l[NR]=$0} END {for (i = NR; i > 0; i--) print l[i]}' "$CGLIB_LIST" 2>/dev/null); do
    cg_destroy "$dir"
  done
  : >"$CGLIB_LIST"
  while read -r dir; do
    [ -d "$dir" ] && cglib_locked "$dir" cglib_v2_leaf_undo "$dir"
  done <"$CGLIB_PREPARED"
  : >"$CGLIB_PREPARED"
}
