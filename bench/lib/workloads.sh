# bench/lib/workloads.sh: the workloads of bench/run (sourced after
# contenders.sh). Each workload_NAME builds its tree, sets the W_* variables
# contenders.sh documents, runs the contenders and appends its lower bound
# to $BENCH_BOUNDS.

# Workload (a), flash-like: memjob jobs shaped like the measured flash-attn
# nvcc jobs (bench/lib/flash_jobs.py), memory / 16 and time / 15, sleeping
# (no --cpu) so the run stands for a 16-core machine with 3 GiB x 16 = 48 GiB
# of RAM whose limit is memory, not CPU. memjob is called as `nvcc` (a fake
# compiler dir first in PATH), so memgate's nvcc defaults apply when cold.
workload_flash() {
  local mem_scale=16 time_scale=15 njobs=48
  [ "$QUICK" = 1 ] && njobs=20
  W_NAME=flash
  W_DIR="$BENCH_TMP/flash"
  W_LIMIT=$((3 << 30))
  W_CORES=16
  W_MEMJOBS=16
  W_TIMEOUT=$([ "$QUICK" = 1 ] && echo 240 || echo 600)
  /usr/bin/python3 "$BENCH_LIB/flash_jobs.py" --data "$FLASH_DATA" --jobs "$njobs" \
    --mem-scale "$mem_scale" --time-scale "$time_scale" --out "$W_DIR"
  memjob_nvcc_build "$mem_scale"
  run_contenders
  # Each sleeping job stands for a CPU-bound compile of its duration on the
  # 16-core machine: CPU = duration.
  /usr/bin/python3 "$BENCH_LIB/bounds.py" --workload flash --cores "$W_CORES" --capacity "$W_LIMIT" \
    --jobs-csv "$W_DIR/jobs.csv" --source "nominal job specs (memory /$mem_scale, time /$time_scale)" >>"$BENCH_BOUNDS"
}

# Workload flash-real (issue 23): the measured flash-attn nvcc jobs replayed
# point by point (bench/lib/flash_real_jobs.py, memjob --curve) at their
# real memory, time / 4 (--quick: 8 of the 17 jobs), each burning CPU at
# its real rate, so its curve runs on its own CPU time. Not faster: on
# this VM the host takes freed pages back within seconds and touching them
# again costs about 1.8 s of system time per GiB, which no time scale
# shrinks. At time / 16 a replayed 5.9 GiB backward kernel peaked at 66%
# of its life instead of the measured 23%, at / 8 at 46%, at / 4 at 33%
# (memjob standing still only for the faults beyond a step's CPU). On
# this machine's real cores, in an 8 GiB cgroup (the issue's own check):
# most pairs of forward kernels fit at their peaks, none of the big backward
# ones beside another's peak, and any job fits beside another's tail. Real memory, not scaled: memgate's defaults
# for a job nothing has seen are at real scale, so a scaled-down workload
# would make its cold start look worse than a user's.
workload_flash-real() {
  local mem_scale=1 time_scale=4 q=()
  [ "$QUICK" = 1 ] && q=(--jobs 8)
  W_NAME=flash-real
  W_DIR="$BENCH_TMP/flash-real"
  W_LIMIT=$((8 << 30))
  W_CORES=$(nproc)
  W_MEMJOBS=""
  W_TIMEOUT=$([ "$QUICK" = 1 ] && echo 600 || echo 1800)
  /usr/bin/python3 "$BENCH_LIB/flash_real_jobs.py" --data "$FLASH_DATA" "${q[@]}" \
    --mem-scale "$mem_scale" --time-scale "$time_scale" --out "$W_DIR"
  memjob_nvcc_build "$mem_scale"
  run_contenders
  local hist=() f
  for f in "$BENCH_LOGS/$W_NAME"-*-memgate-*.history.json; do [ -e "$f" ] && hist+=(--history-json "$f"); done
  /usr/bin/python3 "$BENCH_LIB/bounds.py" --workload flash-real --cores "$W_CORES" --capacity "$W_LIMIT" \
    --jobs-csv "$W_DIR/jobs.csv" "${hist[@]}" \
    --source "the replayed curves (memory /$mem_scale, time /$time_scale): integral; CPU and length: the larger of the curves' and memgate's measured (smallest per job)" >>"$BENCH_BOUNDS"
}

# memjob_nvcc_build MEM_SCALE: the contenders' settings for $W_DIR's .cu
# memjob specs built by nvcc (memjob under that name): jobs.txt, the fake
# compiler first in PATH, GNU parallel's command and peak, flash-attn's
# formula at that memory scale, and the output check.
memjob_nvcc_build() {
  (cd "$W_DIR" && ls -1 *.cu >jobs.txt)
  mkdir -p "$BENCH_TMP/fakecc"
  ln -sf "$MEMJOB" "$BENCH_TMP/fakecc/nvcc"
  W_PATH="$BENCH_TMP/fakecc"
  W_PAR_CMD='nvcc -O3 -std=c++17 --use_fast_math -gencode arch=compute_80,code=sm_80 --threads 1 -c {} -o {.}.o'
  W_PAR_PEAK=$(/usr/bin/python3 -c 'import csv,sys; print(max(int(r["peak_bytes"]) for r in csv.DictReader(open(sys.argv[1]))))' "$W_DIR/jobs.csv")
  W_FORMULA_GB_PER_THREAD=$(/usr/bin/python3 -c "print(5 / $1)")
  w_check() { memjob_outputs cu; }
}

# "OK TOTAL": how many $W_DIR/*.EXT sources have a complete memjob output.
memjob_outputs() {
  local src ok=0 total=0
  for src in "$W_DIR"/*."$1"; do
    total=$((total + 1))
    head -n1 "${src%."$1"}.o" 2>/dev/null | grep -q '^memjob-ok ' && ok=$((ok + 1))
  done
  echo "$ok $total"
}

# Helpers for the real-compiler workloads (gxx, nvcc).

# "OK TOTAL": how many $W_DIR/*.EXT sources have an ELF object beside them.
elf_outputs() {
  local src ok=0 total=0
  for src in "$W_DIR"/*."$1"; do
    total=$((total + 1))
    [ "$(head -c4 "${src%."$1"}.o" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ] && ok=$((ok + 1))
  done
  echo "$ok $total"
}

# The largest nominal peak in $W_DIR/jobs.csv (GNU parallel's --memsuspend).
largest_nominal_peak() {
  /usr/bin/python3 -c 'import csv,sys; print(max(int(r["nominal_peak_bytes"]) for r in csv.DictReader(open(sys.argv[1]))))' "$W_DIR/jobs.csv"
}

# The lower bound of workload $W_NAME from the CPU time and peak of every job
# as memgate measured them in its cold and warm runs.
bounds_from_memgate_runs() {
  local hist=() f
  for f in "$BENCH_LOGS/$W_NAME"-*-memgate-*.history.json; do hist+=(--history-json "$f"); done
  /usr/bin/python3 "$BENCH_LIB/bounds.py" --workload "$W_NAME" --cores "$W_CORES" --capacity "$W_LIMIT" "${hist[@]}" \
    --source "per-job CPU time (smallest) and peak (largest) memgate measured in its cold and warm runs" >>"$BENCH_BOUNDS"
}

# Workload (b), real g++: generated translation units (bench/lib/gxx_jobs.py)
# that make cc1plus use ~150 MB to ~1.2 GB, on this machine's real cores,
# in a 2 GiB cgroup.
workload_gxx() {
  W_NAME=gxx
  W_DIR="$BENCH_TMP/gxx"
  W_LIMIT=$((2 << 30))
  W_CORES=$(nproc)
  W_MEMJOBS=""
  W_PATH=""
  W_TIMEOUT=$([ "$QUICK" = 1 ] && echo 300 || echo 900)
  local q=()
  [ "$QUICK" = 1 ] && q=(--quick)
  /usr/bin/python3 "$BENCH_LIB/gxx_jobs.py" "${q[@]}" --out "$W_DIR"
  W_PAR_CMD='g++ -O2 -std=c++17 -fconstexpr-loop-limit=100000000 -fconstexpr-ops-limit=1000000000000 -c {} -o {.}.o'
  W_PAR_PEAK=$(largest_nominal_peak)
  # Real memory, so flash-attn's 5 GB per thread as it is.
  W_FORMULA_GB_PER_THREAD=5
  w_check() { elf_outputs cpp; }
  run_contenders
  bounds_from_memgate_runs
}

# Workload (c), real nvcc (not with --quick): generated CUDA kernels
# (bench/lib/nvcc_jobs.py) compiled by /usr/local/cuda/bin/nvcc for sm_80,
# 190 MB to ~850 MB each, on this machine's real cores, in a 2 GiB cgroup.
workload_nvcc() {
  local cuda=${CUDA_HOME:-/usr/local/cuda}
  [ -x "$cuda/bin/nvcc" ] || { bench_log "nvcc: no $cuda/bin/nvcc; skipping workload nvcc"; return 0; }
  W_NAME=nvcc
  W_DIR="$BENCH_TMP/nvcc"
  W_LIMIT=$((2 << 30))
  W_CORES=$(nproc)
  W_MEMJOBS=""
  W_PATH="$cuda/bin"
  W_TIMEOUT=900
  /usr/bin/python3 "$BENCH_LIB/nvcc_jobs.py" --out "$W_DIR"
  W_PAR_CMD='nvcc -O3 -std=c++17 -gencode arch=compute_80,code=sm_80 --threads 1 -c {} -o {.}.o'
  W_PAR_PEAK=$(largest_nominal_peak)
  W_FORMULA_GB_PER_THREAD=5
  w_check() { elf_outputs cu; }
  run_contenders
  bounds_from_memgate_runs
}

# Workload (d), torch (not with --quick): the torch extension of
# tests/e2e/projects/torch_ext (3 C++ files with <torch/extension.h>, ~1.5
# GiB each, and a small kernel file) built the way flash-attn is installed:
# `pip install -v --no-build-isolation --no-deps .` into a target
# directory, on this machine's real cores, in a 2.5 GiB cgroup.
# A static "-jN" is MAX_JOBS=N (the Makefile reads N from make's -j); under
# memgate (make -j, no N) MAX_JOBS is unset and memgate sets it. torch's
# "Using envvar MAX_JOBS (N)" is recorded in each run's note. GNU parallel
# has nothing to split here (one pip command) and is left out.
workload_torch() {
  local py=""
  for p in /usr/bin/python3 python3; do
    p=$(command -v "$p" 2>/dev/null) || continue
    if "$p" -c 'import importlib.util,os,sys; s=importlib.util.find_spec("torch"); sys.exit(0 if s and os.path.exists(os.path.join(os.path.dirname(s.origin),"include/torch/extension.h")) else 1)' 2>/dev/null; then
      py=$p
      break
    fi
  done
  if [ -z "$py" ] || ! "$py" -m pip --version >/dev/null 2>&1 || ! command -v ninja >/dev/null; then
    bench_log "torch: needs python3-torch, libtorch-dev, python3-pip and ninja-build; skipping workload torch"
    return 0
  fi
  W_NAME=torch
  W_DIR="$BENCH_TMP/torch"
  W_LIMIT=$((5 << 29))  # 2.5 GiB: two 1.3 GiB compiles and pip's python do not fit
  W_CORES=$(nproc)
  W_MEMJOBS=""
  W_PATH=""
  W_TIMEOUT=1800
  W_PARALLEL=0
  W_FORMULA_GB_PER_THREAD=5
  mkdir -p "$W_DIR"
  cp -r "$ROOT/tests/e2e/projects/torch_ext/." "$W_DIR/"
  cat >"$W_DIR/Makefile" <<MK
# make -jN: MAX_JOBS=N; make -j (under memgate): MAX_JOBS left to memgate.
N = \$(patsubst -j%,%,\$(filter -j%,\$(MAKEFLAGS)))
all:
	\$(if \$(N),MAX_JOBS=\$(N)) PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \\
	PIP_ROOT_USER_ACTION=ignore $py -m pip install -v --no-index --no-build-isolation --no-deps --target site .
clean:
	rm -rf build site *.egg-info
MK
  ls -1 "$W_DIR"/csrc/*.cpp >"$W_DIR/jobs.txt"
  w_check() {
    local ok=0 total=5 o
    for o in api kernel ops_add ops_reduce; do
      ls "$W_DIR"/build/temp.*/csrc/$o.o >/dev/null 2>&1 && ok=$((ok + 1))
    done
    PYTHONPATH="$W_DIR/site" "$py" -c 'import memgate_torch_ext as m; assert m.triangle(4) == 10' 2>/dev/null && ok=$((ok + 1))
    echo "$ok $total"
  }
  # What torch's ninja ran with, from the run's log.
  w_note() { grep -o 'Using envvar MAX_JOBS ([0-9]*)' "$1" | head -n1 | sed 's/Using envvar /torch: /'; }
  run_contenders
  unset -f w_note
  W_PARALLEL=1
  bounds_from_memgate_runs
}
