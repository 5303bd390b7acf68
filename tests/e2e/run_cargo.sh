#!/usr/bin/env bash
# Issue 11, done-means 5: a cargo workspace of three crates (two libraries
# and a binary using both) built under memgate has each of its rustc
# compiles gated once: three rustc jobs, no job for cargo's `rustc -vV` and
# `--print` probes, none for the linker rustc runs inside its own job.
# Debian's cargo and rustc are preferred; a rustup toolchain in
# ~/.cargo/bin is used otherwise.
source "$(dirname "$0")/lib.sh"
cargo=""
for dir in /usr/bin "$HOME/.cargo/bin"; do
  if [ -x "$dir/cargo" ] && [ -x "$dir/rustc" ]; then cargo="$dir/cargo"; export RUSTC="$dir/rustc"; break; fi
done
[ -n "$cargo" ] || { echo "SKIP: no cargo and rustc (apt-get install cargo rustc)"; exit 77; }
note "using $cargo, $($RUSTC --version)"
cg=$(cg_make cargo 4G)
export CARGO_HOME="$E2E_TMP/cargo-home" CARGO_TARGET_DIR="$E2E_TMP/target"
ws="$E2E_TMP/ws"
mkdir -p "$ws/alpha/src" "$ws/beta/src" "$ws/app/src"
printf '[workspace]\nmembers = ["alpha", "beta", "app"]\nresolver = "2"\n' >"$ws/Cargo.toml"
for c in alpha beta; do
  printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2021"\n' "$c" >"$ws/$c/Cargo.toml"
  printf 'pub mod util;\npub fn %s(n: u64) -> u64 { util::twice(n) + 1 }\n' "$c" >"$ws/$c/src/lib.rs"
  printf 'pub fn twice(n: u64) -> u64 { n * 2 }\n' >"$ws/$c/src/util.rs"
done
printf '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nalpha = { path = "../alpha" }\nbeta = { path = "../beta" }\n' \
  >"$ws/app/Cargo.toml"
printf 'fn main() { println!("{}", alpha::alpha(2) + beta::beta(3)); }\n' >"$ws/app/src/main.rs"

(cd "$ws" && cg_run "$cg" "$MEMGATE" run --history "$E2E_TMP/h.db" -- "$cargo" build --offline -j2 \
  >"$E2E_TMP/out" 2>"$E2E_TMP/err") || fail "cargo build under memgate: $(cat "$E2E_TMP/err")"
assert_eq 12 "$("$CARGO_TARGET_DIR/debug/app")" "the program cargo built"
history_json "$E2E_TMP/h.db" "$E2E_TMP/h.json"
assert_eq "rustc" "$(json_get "$E2E_TMP/h.json" '",".join(sorted({x["tool"] for x in j["jobs"]}))')" "gated tools"
assert_eq 3 "$(json_get "$E2E_TMP/h.json" 'len(j["jobs"])')" "rustc jobs"
assert_eq "alpha,app,beta" \
  "$(json_get "$E2E_TMP/h.json" '",".join(sorted(x["identity"].split("crate ")[-1].split("[")[0] for x in j["jobs"]))')" \
  "the crates gated"
echo "PASS"
