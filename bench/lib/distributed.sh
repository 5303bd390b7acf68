# bench/lib/distributed.sh: the `distributed` workload of bench/run (issue
# 15; sourced after common.sh, contenders.sh and workloads.sh).
#
# The gxx workload's quick job list (real g++ translation units: two
# ~1.2 GB tables, one ~330 MB grid, a ~240 MB constexpr table, a ~170 MB
# grid), built on a "laptop" cgroup of 1.75 GiB with one loopback distccd
# "server" in a 2 GiB cgroup (--jobs 2, DISTCC_HOSTS 127.0.0.1:PORT/2):
#   distcc make -j4       plain make with CXX="distcc g++" (-j4: distcc's
#                         advice of about twice the remote slots)
#   memgate local         memgate run -- make -j4 (no distcc)
#   memgate offload       memgate run --offload distcc -- make -j4
#   governed server       the client as "distcc make -j4", the server as
#                         memgate run --decline-after 20 -- distccd (as
#                         the distccd user)
# Each contender gets fresh cgroups and a fresh server. Reported: wall
# time, OOM kills on the laptop and on the server, where the jobs ran (the
# server's log counts its compiles), the peaks of both cgroups.
# Rows go to distributed.csv and a markdown table of their own.

source "$ROOT/tests/lib/distcc.sh"

DIST_LAPTOP=$((1792 << 20))
DIST_SERVER=$((2 << 30))

# dist_contender LABEL CLIENT_KIND [governed]: one run. CLIENT_KIND is
# distcc (make CXX="distcc g++"), local (memgate, no distcc) or offload;
# "governed" runs the server under memgate.
dist_contender() {
  local label=$1 kind=$2 governed=${3:-}
  local prefix=()
  BENCH_RUNS=$((BENCH_RUNS + 1))
  local tag="distributed-$BENCH_RUNS" laptop server srv_dir dpid port log hist ok total remote lo so lp sp
  srv_dir="$BENCH_TMP/$tag-server"
  mkdir -p "$srv_dir/cache" && chmod 777 "$srv_dir" "$srv_dir/cache"
  log="$BENCH_LOGS/$tag.log"
  hist="$BENCH_TMP/$tag.db"
  w_clean
  laptop=$(bench_cg_new "$tag-laptop" "$DIST_LAPTOP")
  server=$(bench_cg_new "$tag-server" "$DIST_SERVER")
  if [ -n "$governed" ]; then  # memgate runs as the daemon's user, in a cgroup delegated to it
    chown distccd "$server" "$server"/cgroup.procs "$server"/tasks 2>/dev/null || chown distccd "$server" "$server"/cgroup.procs
    prefix=(setpriv --reuid=distccd --regid=nogroup --clear-groups -- \
      "$MEMGATE" run --decline-after 20 --history "$srv_dir/h.db" --)
  fi
  read -r dpid port < <(XDG_CACHE_HOME="$srv_dir/cache" distccd_start "$server" "$srv_dir" 2 "${prefix[@]}") ||
    bench_die "cannot start distccd"
  local client=(make -s -C "$W_DIR" -j4)
  case $kind in
    distcc) client+=(CXX="distcc g++") ;;
    local) client=("$MEMGATE" run --history "$hist" -- "${client[@]}") ;;
    offload) client=("$MEMGATE" run --offload distcc --history "$hist" -- "${client[@]}") ;;
  esac
  mkdir -p "$BENCH_TMP/$tag-distcc"
  bench_log "distributed: $label ..."
  DISTCC_HOSTS="127.0.0.1:$port/2" DISTCC_DIR="$BENCH_TMP/$tag-distcc" DISTCC_BACKOFF_PERIOD=0 \
    run_in_cgroup "$laptop" "$W_TIMEOUT" "$log" "${client[@]}"
  distccd_stop "$srv_dir" "$dpid"
  lo=$(cg_oom_kills "$laptop"); so=$(cg_oom_kills "$server")
  lp=$(cg_peak "$laptop"); sp=$(cg_peak "$server")
  remote=$(distccd_remote_ok "$srv_dir/distccd.log")
  cp "$srv_dir/distccd.log" "$BENCH_LOGS/$tag.distccd.log" 2>/dev/null || true
  [ -f "$srv_dir/h.db" ] && "$MEMGATE" history --json --build last --history "$srv_dir/h.db" \
    >"$BENCH_LOGS/$tag.server-history.json" 2>/dev/null || true
  cg_destroy "$laptop"
  cg_destroy "$server"
  memgate_freezer_cleanup
  read -r ok total < <(elf_outputs cpp)
  local status=FAILED
  if [ "$RUN_RC" -eq 124 ] || [ "$RUN_RC" -eq 137 ]; then status=TIMEOUT
  elif [ "$RUN_RC" -eq 0 ] && [ "$ok" -eq "$total" ]; then status=ok; fi
  echo "$label,$status,$RUN_WALL,$RUN_RC,$lo,$so,$lp,$sp,$remote,$total,$(load1)" >>"$DIST_CSV"
  bench_log "distributed: $label: $status in ${RUN_WALL}s, OOM kills laptop $lo server $so, $remote of $total compiled on the server, peaks $((lp >> 20))/$((sp >> 20)) MiB"
}

workload_distributed() {
  have_distcc || bench_die "the distributed workload needs distcc and distccd (apt-get install -y distcc)"
  id distccd >/dev/null 2>&1 || bench_die "the distributed workload needs the distccd user (the distcc package makes it)"
  W_NAME=distributed
  W_DIR="$BENCH_TMP/distributed"
  W_TIMEOUT=900
  /usr/bin/python3 "$BENCH_LIB/gxx_jobs.py" --quick --out "$W_DIR"
  # The generated Makefile names g++; the contenders put distcc in front.
  sed -i 's/^\tg++ /\t$(CXX) /; 1i CXX ?= g++' "$W_DIR/Makefile"
  chmod 755 "$BENCH_TMP"
  chmod -R a+rX "$W_DIR"
  DIST_CSV="$BENCH_OUT/distributed.csv"
  echo "contender,status,wall_s,exit,oom_laptop,oom_server,peak_laptop,peak_server,on_server,jobs,load1" >"$DIST_CSV"
  dist_contender "distcc make -j4" distcc
  dist_contender "memgate local (no distcc)" local
  dist_contender "memgate --offload distcc" offload
  dist_contender "governed server (memgate run -- distccd)" distcc governed
  {
    echo
    echo "### distributed: laptop $((DIST_LAPTOP >> 20)) MiB, one loopback distccd server $((DIST_SERVER >> 20)) MiB (--jobs 2)"
    echo
    echo "| contender | status | wall | OOM kills laptop / server | compiled on the server | peak laptop / server |"
    echo "|---|---|---|---|---|---|"
    tail -n +2 "$DIST_CSV" | while IFS=, read -r c st w rc lo so lp sp rem n ld; do
      echo "| $c | $st | ${w} s | $lo / $so | $rem of $n | $((lp >> 20)) / $((sp >> 20)) MiB |"
    done
  } >"$BENCH_OUT/distributed.md"
}
