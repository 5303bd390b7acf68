#!/usr/bin/env bash
# Builds the libFuzzer targets (a clang configuration of their own, see
# tests/fuzz/CMakeLists.txt) and runs each on its seed corpus for a while:
# first every seed is replayed, then it fuzzes for --seconds. Used by ctest
# (fuzz.replay: 10 s per target) and bench/fuzz (minutes per target, in a
# memory-limited cgroup). Prints one line per target: executions, corpus
# size, and "ok" or the saved input that crashed, leaked or timed out.
# Exit 0 when every target is ok, 1 otherwise, 77 (with SKIP) when clang-14
# or libFuzzer is missing.
#
# Usage: tests/fuzz/run.sh [--build DIR] [--out DIR] [--seconds N] [--jobs N]
#                          [--no-build | --build-only] [TARGET...]
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$src/build-fuzz seconds=10 jobs=1 out="" do_build=1 build_only=0 targets=()
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "fuzz: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
out=${out:-$build/fuzz-out}

cxx=${MEMGATE_FUZZ_CXX:-clang++-14}
cc=${MEMGATE_FUZZ_CC:-clang-14}
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "SKIP: $cxx not installed (Debian: clang-14 libclang-rt-14-dev)"; exit 77
fi
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' >"$probe_dir/p.cpp"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe_dir/p.cpp" -o "$probe_dir/p" >/dev/null 2>&1; then
  echo "SKIP: $cxx cannot link -fsanitize=fuzzer,address,undefined (Debian: libclang-rt-14-dev)"; exit 77
fi

if ((do_build)); then
  launcher=()
  # As scripts/deps.sh's memgate_build: cache keys independent of where the tree is.
  if command -v ccache >/dev/null 2>&1; then
    launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$src;CCACHE_NOHASHDIR=1;ccache"
              "-DCMAKE_C_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$src;CCACHE_NOHASHDIR=1;ccache")
  fi
  cmake -S "$src" -B "$build" -G Ninja -DMEMGATE_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" "${launcher[@]}" >"$probe_dir/configure.log" 2>&1 ||
    { cat "$probe_dir/configure.log"; echo "fuzz: configure failed" >&2; exit 1; }
  cmake --build "$build" || { echo "fuzz: build failed" >&2; exit 1; }
fi
((build_only)) && exit 0
if ((${#targets[@]} == 0)); then
  read -ra targets <"$build/fuzz-targets.txt" || { echo "fuzz: no $build/fuzz-targets.txt" >&2; exit 1; }
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# One target: a fresh working corpus under $out (new inputs go there, the
# seeds in the repository stay as they are), the seeds replayed, then
# fuzzing. Leaves $out/T/result: "EXECS CORPUS RESULT".
run_target() {
  local t=$1 dir=$out/$1 exe=$build/tests/fuzz/fuzz_$1 rc execs corpus result art
  rm -rf "$dir" && mkdir -p "$dir/corpus"
  "$exe" -max_total_time="$seconds" -rss_limit_mb="${MEMGATE_FUZZ_RSS_MB:-2048}" -timeout=30 \
    -print_final_stats=1 -artifact_prefix="$dir/" "$dir/corpus" "$src/tests/fuzz/corpus/$t" >"$dir/log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -n1)
  corpus=$(grep -o 'corp: [0-9]*' "$dir/log" | tail -n1 | cut -d' ' -f2)
  art=$(ls "$dir"/{crash,leak,timeout,oom,slow-unit}-* 2>/dev/null | head -n1)
  if ((rc == 0)) && [ -z "$art" ]; then result=ok
  elif [ -n "$art" ]; then result="FAIL $art"
  else result="FAIL exit $rc (see $dir/log)"; fi
  echo "${execs:-0} ${corpus:-0} $result" >"$dir/result"
}

mkdir -p "$out"
running=0
for t in "${targets[@]}"; do
  [ -x "$build/tests/fuzz/fuzz_$t" ] || { echo "fuzz: no target $t" >&2; exit 2; }
  if ((running >= jobs)); then wait -n; ((running--)); fi
  run_target "$t" &
  ((running++))
done
wait

status=0
printf '%-10s %12s %8s  %s\n' target executions corpus result
for t in "${targets[@]}"; do
  read -r execs corpus result <"$out/$t/result"
  printf '%-10s %12s %8s  %s\n' "$t" "$execs" "$corpus" "$result"
  [ "$result" = ok ] || { status=1; grep -m3 -E 'ERROR|runtime error|invariant failed' "$out/$t/log" | sed 's/^/    /'; }
done
exit $status
