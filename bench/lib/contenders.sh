# bench/lib/contenders.sh: the six contenders, run the same way for every
# workload (sourced by bench/run after common.sh).
#
# A workload sets, before calling run_contenders:
#   W_NAME      short name (flash, gxx, nvcc)
#   W_DIR       the build tree: a Makefile whose `all` builds every job,
#               `clean` removes the outputs, and jobs.txt (sources, in order)
#   W_LIMIT     bytes: the hard limit of each contender's cgroup (the machine)
#   W_CORES     the cores of the machine it stands for (make -jN, --jobs)
#   W_MEMJOBS   memgate --jobs value ("" = memgate's default: the real cores)
#   W_PATH      directories put first in PATH for every contender ("" = none)
#   W_PAR_CMD   GNU parallel's command template ({} = source, {.} = stem)
#   W_PAR_PEAK  the largest job's peak, bytes (parallel's --memsuspend)
#   W_FORMULA_GB_PER_THREAD  flash-attn's 5 GB per nvcc thread, scaled
#   W_TIMEOUT   seconds before a contender is stopped
#   W_PARALLEL  0 leaves GNU parallel out (a build it cannot split); default 1
# and defines w_check (prints "ok total" for the outputs in W_DIR), and
# optionally w_note LOG (text added to each run's note, from its log).

BENCH_RUNS=0
declare -A STATIC_ROW   # N -> the CSV row of the run of make -jN
declare -A STATIC_CLEAN # N -> 1 when make -jN succeeded without an OOM kill
declare -A SWEEP_LISTED # N -> 1 once the sweep has a row for make -jN

w_clean() { make -s -C "$W_DIR" clean >/dev/null; }

# The environment every contender runs with: W_PATH first in PATH.
w_env() { W_ENV=(env "PATH=${W_PATH:+$W_PATH:}$PATH"); }

# contender LABEL KIND N CMD...: one run in a fresh cgroup of W_LIMIT;
# appends its CSV row and sets LAST_ROW and LAST_CLEAN (1: ok, no OOM kill).
contender() {
  local label=$1 kind=$2 n=$3
  shift 3
  BENCH_RUNS=$((BENCH_RUNS + 1))
  local tag="$W_NAME-$BENCH_RUNS-$kind"
  local log="$BENCH_LOGS/$tag.log" cg status oom peak outs ok total
  local frozen="" requeued="" retried="" note="" frozen_s="" requeued_cpu_s=""
  w_clean
  rm -f "$W_DIR/attempts.log"
  cg=$(bench_cg_new "$tag" "$W_LIMIT")
  bench_log "$W_NAME: $label ..."
  run_in_cgroup "$cg" "$W_TIMEOUT" "$log" "$@"
  oom=$(cg_oom_kills "$cg")
  peak=$(cg_peak "$cg")
  local load; load=$(load1)
  if [ "$kind" = memgate-cold ] || [ "$kind" = memgate-warm ]; then
    BENCH_MEMGATE_PIDS="$BENCH_MEMGATE_PIDS $RUN_PID"
    local mg_oom
    read -r mg_oom requeued frozen retried frozen_s requeued_cpu_s < <(read_memgate_counters "$MG_HISTORY")
    "$MEMGATE" history --json --build last --history "$MG_HISTORY" >"$BENCH_LOGS/$tag.history.json" 2>/dev/null || true
    oom=$((oom + mg_oom))
    note="memgate: $frozen frozen, $requeued requeued, $mg_oom OOM-killed jobs rerun"
  fi
  cg_destroy "$cg"
  memgate_freezer_cleanup
  if [ "$kind" = parallel ]; then
    local attempts jobs
    attempts=$(wc -l <"$W_DIR/attempts.log" 2>/dev/null || echo 0)
    jobs=$(wc -l <"$W_DIR/jobs.txt")
    retried=$((attempts > jobs ? attempts - jobs : 0))
    note="parallel: $retried jobs rerun after a kill or failure"
  fi
  if declare -F w_note >/dev/null; then
    local wn
    wn=$(w_note "$log" || true)
    [ -n "$wn" ] && note="${note:+$note; }$wn"
  fi
  read -r ok total < <(w_check)
  if [ "$RUN_RC" -eq 124 ] || [ "$RUN_RC" -eq 137 ]; then
    status=TIMEOUT
  elif [ "$RUN_RC" -eq 0 ] && [ "$ok" -eq "$total" ]; then
    status=ok
  else
    status=FAILED
  fi
  LAST_CLEAN=0
  [ "$status" = ok ] && [ "$oom" -eq 0 ] && LAST_CLEAN=1
  LAST_ROW=("$W_NAME" "$label" "$kind" "$n" "$RUN_WALL" "$status" "$RUN_RC" "$oom" "$peak" "$ok" "$total"
            "$frozen" "$requeued" "$retried" "$load" "$note" "$frozen_s" "$requeued_cpu_s")
  csv_row "${LAST_ROW[@]}"
  bench_log "$W_NAME: $label: $status in ${RUN_WALL}s, exit $RUN_RC, $oom OOM kills, peak $((peak >> 20)) MiB, $ok/$total outputs${note:+ ($note)}"
}

# static_make N LABEL KIND: make -jN, run once per N; a second role for the
# same N (the sweep reaching make -j$(nproc)'s N) repeats its row.
static_make() {
  local n=$1 label=$2 kind=$3
  if [ -n "${STATIC_ROW[$n]:-}" ]; then
    if [ "$kind" = static ]; then
      [ -n "${SWEEP_LISTED[$n]:-}" ] && return
      SWEEP_LISTED[$n]=1
    fi
    local row=()
    IFS=$'\x1f' read -r -a row <<<"${STATIC_ROW[$n]}"
    row[15]="the same run as ${row[1]}"
    row[1]=$label row[2]=$kind
    csv_row "${row[@]}"
    return
  fi
  contender "$label" "$kind" "$n" "${W_ENV[@]}" make -C "$W_DIR" -j"$n"
  if [ "$kind" = static ]; then SWEEP_LISTED[$n]=1; fi
  STATIC_ROW[$n]=$(IFS=$'\x1f'; echo "${LAST_ROW[*]}")
  STATIC_CLEAN[$n]=$LAST_CLEAN
}

# flash-attn's setup.py: MAX_JOBS = max(1, min(cpu_count // 2,
# int(available_GB / (5 * nvcc_threads)))), with the bench's cgroup limit as
# the available memory and the 5 GB scaled like the workload's memory.
flash_formula_jobs() {
  /usr/bin/python3 -c "print(max(1, min($W_CORES // 2, int($W_LIMIT / 2**30 / ($W_FORMULA_GB_PER_THREAD * 1)))))"
}

# The hand search users do, done properly: halve from make -j$(nproc)'s N
# until a build succeeds without an OOM kill, bisect between the largest
# clean N and the smallest failing one (at most SWEEP_MAX runs), then build
# once more with the best N (unless it is 1): one lucky run does not make a
# static N safe (whether two heavy jobs meet at their peaks varies from run
# to run). An N that fails either run is out, and the search goes on below.
static_sweep() {
  local n=$W_CORES lo hi k runs
  declare -A confirmed=()
  while :; do
    while :; do
      static_make "$n" "static sweep -j$n" static  # (a row only the first time)
      [ "${STATIC_CLEAN[$n]}" = 1 ] && break
      [ "$n" -le 1 ] && return 0
      n=$((n / 2))
    done
    # lo: the largest clean N; hi: the smallest failed N above it (0: none).
    lo=0 hi=0
    for k in "${!STATIC_CLEAN[@]}"; do
      if [ "${STATIC_CLEAN[$k]}" = 1 ] && [ "$k" -gt "$lo" ]; then lo=$k; fi
    done
    for k in "${!STATIC_CLEAN[@]}"; do
      if [ "${STATIC_CLEAN[$k]}" = 0 ] && [ "$k" -gt "$lo" ] && { [ "$hi" -eq 0 ] || [ "$k" -lt "$hi" ]; }; then hi=$k; fi
    done
    runs=0
    while [ "$hi" -gt $((lo + 1)) ] && [ "$runs" -lt "$SWEEP_MAX" ]; do
      n=$(((lo + hi) / 2))
      static_make "$n" "static sweep -j$n" static
      runs=$((runs + 1))
      if [ "${STATIC_CLEAN[$n]}" = 1 ]; then lo=$n; else hi=$n; fi
    done
    # -j1 needs no second run: one job at a time peaks at the largest job,
    # whatever the timing.
    [ -n "${confirmed[$lo]:-}" ] || [ "$lo" -le 1 ] && return 0
    confirmed[$lo]=1
    contender "static sweep -j$lo (2nd run)" static "$lo" "${W_ENV[@]}" make -C "$W_DIR" -j"$lo"
    [ "$LAST_CLEAN" = 1 ] && return 0
    STATIC_CLEAN[$lo]=0
    [ "$lo" -le 1 ] && return 0
    # Go on from the largest clean N below, else halve.
    n=$((lo / 2))
    for k in "${!STATIC_CLEAN[@]}"; do
      if [ "${STATIC_CLEAN[$k]}" = 1 ] && [ "$k" -lt "$lo" ] && [ "$k" -gt "$n" ]; then n=$k; fi
    done
  done
}

run_contenders() {
  w_env
  STATIC_ROW=()
  STATIC_CLEAN=()
  SWEEP_LISTED=()
  [ "${ONLY:-}" = memgate ] || run_static_contenders
  run_memgate_contenders
}

# 1-4: static -j, the flash-attn formula, the sweep, GNU parallel.
run_static_contenders() {
  local nf
  # 1. What users try first.
  static_make "$W_CORES" "make -j$W_CORES" make
  # 2. flash-attn's formula.
  nf=$(flash_formula_jobs)
  static_make "$nf" "flash-attn formula -j$nf" formula
  # 3. The best static -j.
  static_sweep
  # 4. GNU parallel, with its memory options (bench/README.md: the choices).
  # F = S/2, but F + S within the machine: parallel starts a job only when
  # F + S is free, and with more it never starts one (flash-real's 8 GiB
  # under 1.5 times its biggest job).
  local suspend=${W_PAR_PEAK:-0} free=$((${W_PAR_PEAK:-0} / 2))
  ((free + suspend <= W_LIMIT)) || free=$(((W_LIMIT - suspend) / 2))
  [ "${W_PARALLEL:-1}" = 0 ] || contender "parallel -j$W_CORES --memfree $((free >> 20))M --memsuspend $((suspend >> 20))M --retries 10" \
    parallel "$W_CORES" env -C "$W_DIR" PATH="$BENCH_LIB/cgroup-meminfo${W_PATH:+:$W_PATH}:$PATH" \
    parallel -j"$W_CORES" --memfree "$free" --memsuspend "$suspend" --retries 10 \
    "echo {} >>attempts.log; $W_PAR_CMD" :::: "$W_DIR/jobs.txt"
}

# memgate with an empty history, then the same build again.
run_memgate_contenders() {
  MG_HISTORY="$BENCH_TMP/$W_NAME-history.db"
  rm -f "$MG_HISTORY"*
  # No --memory: memgate finds the run's cgroup limit and sizes its reserve
  # by its own rule for a cgroup limit (capacity.hpp), as in a container.
  local mg=()
  mg=("$MEMGATE" run --history "$MG_HISTORY")
  [ -n "$W_MEMJOBS" ] && mg+=(--jobs "$W_MEMJOBS")
  local jl="${W_MEMJOBS:+ --jobs $W_MEMJOBS}"
  contender "memgate cold$jl" memgate-cold "${W_MEMJOBS:-0}" "${W_ENV[@]}" "${mg[@]}" -- make -C "$W_DIR" -j
  contender "memgate warm$jl" memgate-warm "${W_MEMJOBS:-0}" "${W_ENV[@]}" "${mg[@]}" -- make -C "$W_DIR" -j
  # Both runs' history, for `memgate plan --history` against what was measured.
  "$MEMGATE" history export "$BENCH_LOGS/$W_NAME-history.json" --history "$MG_HISTORY" >/dev/null 2>&1 || true
  local f
  for f in "$MG_HISTORY"*; do cp "$f" "$BENCH_LOGS/$W_NAME-history.db${f#"$MG_HISTORY"}"; done
}
