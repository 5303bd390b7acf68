#!/usr/bin/env bash
# Issue 3, "nested calls": real nvcc compiling a small .cu through memgate
# is gated once, not once per gcc call it makes inside (nvcc is the build
# command itself here: the preload library's start-up check gates it). A
# PATH shim never finds itself, even with this copy's shim directory twice
# in PATH, and a shim under the preload library is still one job.
source "$(dirname "$0")/lib.sh"
nvcc=/usr/local/cuda/bin/nvcc
[ -x "$nvcc" ] || { echo "SKIP: no nvcc"; exit 77; }
cg=$(cg_make nvcc 6G)
cat >"$E2E_TMP/k.cu" <<'CU'
__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }
int main() { return 0; }
CU
export PATH="/usr/local/cuda/bin:$PATH"
cd "$E2E_TMP"
cg_run "$cg" "$MEMGATE" run --quiet --history "$E2E_TMP/h.db" -- \
  nvcc -c k.cu -o k.o -gencode arch=compute_80,code=sm_80
[ -s k.o ] || fail "no object"
"$MEMGATE" history --json --build last --history "$E2E_TMP/h.db" >h.json
assert_eq 1 "$(json_get h.json 'len(j["jobs"])')" "gated jobs for one nvcc"
assert_eq nvcc "$(json_get h.json 'j["jobs"][0]["tool"]')" "the gated tool"

note "shim directory twice in PATH"
shims="$(dirname "$MEMGATE")/shims"  # this copy's, made by its first run
PATH="$shims:$shims:$PATH" cg_run "$cg" "$MEMGATE" run --quiet --history "$E2E_TMP/h.db" -- \
  g++ -c -x c++ /dev/null -o empty.o
[ -s empty.o ] || fail "g++ through a doubled shim dir"
"$MEMGATE" history --json --build last --history "$E2E_TMP/h.db" >h2.json
assert_eq 1 "$(json_get h2.json 'len(j["jobs"])')" "gated jobs for one g++"
echo "PASS"
