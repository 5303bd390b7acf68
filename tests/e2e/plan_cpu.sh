#!/usr/bin/env bash
# Issue 16, Done means 3: plan on a CPU-bound build recorded on a loaded
# machine. 8 compiles of a fixed 0.6 CPU-s each (memjob --work: on a busy
# machine they take longer, as a compiler does) are recorded with -j <cores>
# while a CPU burner, started by this test in a cgroup of its own, takes
# CPU beside them. From that record, `plan --recommend` prints at most
# nproc and `plan` predicts no speed-up from more jobs than cores. Then a
# ninja build under `memgate run --jobs 1` with ninja -j3, whose log counts
# each job's wait for admission: `plan --ninja-log` takes the waits out.
source "$(dirname "$0")/lib.sh"
require_cgroups
command -v ninja >/dev/null || { echo "SKIP: ninja is not installed"; exit 77; }
export PATH="$(fake_compilers):$PATH"
export MEMGATE_HISTORY="$E2E_TMP/h.db"
cores=$(nproc)

burner=""
stop_burner() { [ -z "$burner" ] || kill "$burner" 2>/dev/null || true; wait "$burner" 2>/dev/null || true; burner=""; }
trap 'stop_burner; e2e_cleanup' EXIT

w="$E2E_TMP/cpu"
specs=()
for i in $(seq 0 7); do specs+=("--peak 16M --work 0.6"); done
memjob_workload "$w" "${specs[@]}"
cg=$(cg_make build 3G)  # a budget above the 512 MiB a job never seen is given
burn_cg=$(cg_make burner 256M)

note "record the build beside a CPU burner"
cg_run "$burn_cg" "$MEMJOB" --peak 4M --cpu --duration 600 &
burner=$!
cg_run "$cg" "$MEMGATE" run -q --jobs "$cores" -- make -s -C "$w" -j"$cores" >"$E2E_TMP/run.log" 2>&1 ||
  { cat "$E2E_TMP/run.log" >&2; fail "the build failed"; }
stop_burner
check_memjob_outputs "$w"
"$MEMGATE" history --json --build last >"$E2E_TMP/build.json"
[ -z "${PLAN_CPU_KEEP:-}" ] || cp "$MEMGATE_HISTORY" "$PLAN_CPU_KEEP"  # for a closer look
other=$(json_get "$E2E_TMP/build.json" 'j["build"]["counters"].get("other_cpu_ms", -1)')
wall=$(json_get "$E2E_TMP/build.json" 'round(j["build"]["end_unix"] - j["build"]["start_unix"], 2)')
note "build: ${wall}s wall, $(json_get "$E2E_TMP/build.json" 'round(sum(x["cpu_s"] for x in j["jobs"]), 2)') CPU-s in jobs, other processes ${other} ms CPU"
[ "$other" -gt 0 ] || fail "the record does not say others used the CPU (other_cpu_ms=$other)"

note "plan from that record"
"$MEMGATE" plan --json --jobs-range 1-$((4 * cores)) >"$E2E_TMP/plan.json" 2>"$E2E_TMP/plan.err"
cat "$E2E_TMP/plan.err" >&2
"$MEMGATE" plan >&2
rec=$("$MEMGATE" plan --recommend 2>/dev/null)
note "--recommend: $rec on $cores cores"
[ "$rec" -le "$cores" ] || fail "plan --recommend says -j$rec on $cores cores for a CPU-bound build"
# Job counts above the cores that plan says are more than 5% faster.
faster=$(json_get "$E2E_TMP/plan.json" "(lambda w: [(n, round(t, 2)) for n, t in sorted(w.items()) if n > $cores and t < 0.95 * w[$cores]])({r['jobs']: r['wall_s'] for r in j['rows']})")
assert_eq "[]" "$faster" "job counts faster than -j$cores on $cores cores"

note "--ninja-log of a build whose jobs waited for memgate"
nw="$E2E_TMP/ninja"
mkdir -p "$nw"
{
  echo 'rule cc'
  echo '  command = cc -c $in -o $out'
  for i in 0 1 2 3 4 5; do
    echo "--peak 16M --work 0.3" | sed 's/^/memjob: /' >"$nw/n$i.job"
    echo "build n$i.o: cc n$i.job"
  done
} >"$nw/build.ninja"
cg_run "$cg" "$MEMGATE" run -q --jobs 1 -- ninja -C "$nw" -j3 >"$E2E_TMP/ninja.log" 2>&1 ||
  { cat "$E2E_TMP/ninja.log" >&2; fail "the ninja build failed"; }
"$MEMGATE" history --json --build last >"$E2E_TMP/nbuild.json"
ran=$(json_get "$E2E_TMP/nbuild.json" 'round(sum(x["wall_s"] for x in j["jobs"]), 2)')
waited=$(json_get "$E2E_TMP/nbuild.json" 'round(sum(x["wait_s"] for x in j["jobs"]), 2)')
logged=$(awk '!/^#/ {s += ($2 - $1) / 1000} END {printf "%.2f", s}' "$nw/.ninja_log")
note "jobs ran ${ran}s, waited ${waited}s; the log says ${logged}s"
python3 -c "import sys; sys.exit(0 if $logged > 1.5 * $ran else 1)" || fail "the jobs did not wait (log ${logged}s, ran ${ran}s)"
"$MEMGATE" plan --ninja-log "$nw/.ninja_log" --cores 1 --jobs-range 1-1 --json >"$E2E_TMP/nplan.json" 2>"$E2E_TMP/nplan.err"
cat "$E2E_TMP/nplan.err" >&2
grep -q "admission waits taken out of 6 jobs" "$E2E_TMP/nplan.err" || fail "plan did not say it took the waits out"
planned=$(json_get "$E2E_TMP/nplan.json" 'round(j["rows"][0]["wall_s"], 2)')
note "-j1 from the log: ${planned}s (jobs ran ${ran}s)"
python3 -c "import sys; sys.exit(0 if 0.7 * $ran <= $planned <= 1.3 * $ran else 1)" ||
  fail "plan --ninja-log -j1 takes ${planned}s for jobs that ran ${ran}s (the log's ${logged}s includes waits)"
echo "ok"
