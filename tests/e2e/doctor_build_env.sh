#!/usr/bin/env bash
# doctor --build-env on the real machine: it exits 1 exactly when a check
# is an `error`, and says nothing of torch in a plain C++ project.
source "$(dirname "$0")/lib.sh"
mkdir -p "$E2E_TMP/cpp" "$E2E_TMP/ext" "$E2E_TMP/nocuda"
printf 'project(plain CXX)\nadd_executable(plain main.cpp)\n' >"$E2E_TMP/cpp/CMakeLists.txt"
printf 'from torch.utils.cpp_extension import BuildExtension\n' >"$E2E_TMP/ext/setup.py"

# doctor DIR [ENV...]: runs it in DIR; "STATUS ERRORS TORCH_PROJECT".
doctor() {
  local dir=$1 rc=0
  shift
  (cd "$dir" && env "$@" "$MEMGATE" doctor --build-env --json >"$E2E_TMP/d.json") || rc=$?
  echo "$rc $(json_get "$E2E_TMP/d.json" 'sum(c["level"] == "error" for c in j["build_env"]["checks"])') \
$(json_get "$E2E_TMP/d.json" 'j["build_env"]["torch_project"]')"
}

note "a plain C++ project: no torch, module or flash-attn checks"
read -r rc errors torch <<<"$(doctor "$E2E_TMP/cpp")"
assert_eq False "$torch" "torch_project in a plain C++ project"
assert_eq "$([ "$errors" -gt 0 ] && echo 1 || echo 0)" "$rc" "exit status with $errors error findings"
json_get "$E2E_TMP/d.json" '[c["key"] for c in j["build_env"]["checks"]]' >"$E2E_TMP/keys"
grep -Eq "torch_cuda|module_|flash_attn|'ninja'" "$E2E_TMP/keys" && fail "torch checks in a plain project: $(cat "$E2E_TMP/keys")"
(cd "$E2E_TMP/cpp" && "$MEMGATE" doctor --build-env >"$E2E_TMP/d.txt") || true
grep -Eq "^flash-attn|FLASH_ATTN_CUDA_ARCHS|^targets" "$E2E_TMP/d.txt" &&
  fail "flash-attn's sections in a plain project's text: $(cat "$E2E_TMP/d.txt")"
grep -q "not a torch extension" "$E2E_TMP/d.txt" || fail "no note saying the torch checks were skipped"

note "an extension's setup.py names torch: its checks run"
read -r rc errors torch <<<"$(doctor "$E2E_TMP/ext")"
assert_eq True "$torch" "torch_project for a setup.py with torch"
assert_eq "$([ "$errors" -gt 0 ] && echo 1 || echo 0)" "$rc" "exit status with $errors error findings"

note "an error finding (CUDA_HOME without nvcc): exit 1, in either project"
for dir in cpp ext; do
  read -r rc errors torch <<<"$(doctor "$E2E_TMP/$dir" CUDA_HOME="$E2E_TMP/nocuda")"
  [ "$errors" -ge 1 ] || fail "CUDA_HOME without nvcc is no error in $dir"
  assert_eq 1 "$rc" "exit status with an error finding in $dir"
done
echo "PASS"
