#!/usr/bin/env bash
# Other jobserver clients under memgate's jobserver (docs/jobserver.md):
#   1. cargo building a workspace of several crates, no -j: its rustc
#      processes take memgate's tokens (the jobserver log shows them held)
#      and every rustc is still gated, once;
#   2. a gcc -flto=jobserver link: its LTRANS partitions (run by the make
#      lto-wrapper starts) take tokens while the link job runs.
source "$(dirname "$0")/lib.sh"
require_cgroups
cg=$(cg_make tools 4G)
max_held() { awk '{ if ($3 > m) m = $3 } END { print m + 0 }' "$1"; }

# 1. cargo.
cargo=""
for dir in /usr/bin "$HOME/.cargo/bin"; do
  if [ -x "$dir/cargo" ] && [ -x "$dir/rustc" ]; then cargo="$dir/cargo"; export RUSTC="$dir/rustc"; break; fi
done
[ -n "$cargo" ] || { echo "SKIP: no cargo and rustc (apt-get install cargo rustc)"; exit 77; }
export CARGO_HOME="$E2E_TMP/cargo-home" CARGO_TARGET_DIR="$E2E_TMP/target"
ws="$E2E_TMP/ws"
crates="c1 c2 c3 c4 c5"
members=$(for c in $crates; do printf '"%s", ' "$c"; done)
printf '[workspace]\nmembers = [%s"app"]\nresolver = "2"\n' "$members" >"$ws.toml"
mkdir -p "$ws/app/src"
mv "$ws.toml" "$ws/Cargo.toml"
deps=""
for c in $crates; do
  mkdir -p "$ws/$c/src"
  printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2021"\n' "$c" >"$ws/$c/Cargo.toml"
  # Enough generic code that each crate compiles for a while.
  python3 - "$ws/$c/src/lib.rs" "$c" <<'PY'
import sys
out, name = sys.argv[1], sys.argv[2]
with open(out, "w") as f:
    for i in range(60):
        f.write("pub fn f%d(v: &[u64]) -> u64 { v.iter().map(|x| x.wrapping_mul(%d) ^ (x >> 3)).filter(|x| x %% 7 != %d).fold(0u64, |a, b| a.wrapping_add(b).rotate_left(%d)) }\n" % (i, i + 3, i % 7, i % 31))
    f.write("pub fn %s(n: u64) -> u64 { f1(&[n, n + 1]) }\n" % name)
PY
  deps="$deps$c = { path = \"../$c\" }\n"
done
printf "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n$deps" >"$ws/app/Cargo.toml"
printf 'fn main() { println!("{}", c1::c1(1) + c5::c5(2)); }\n' >"$ws/app/src/main.rs"
(cd "$ws" && cg_run "$cg" "$MEMGATE" run --jobs 3 --history "$E2E_TMP/h.db" --jobserver-log "$E2E_TMP/cargo.tokens" \
  -- "$cargo" build --offline --release >"$E2E_TMP/cargo.out" 2>&1) || fail "cargo build: $(cat "$E2E_TMP/cargo.out")"
"$CARGO_TARGET_DIR/release/app" >/dev/null || fail "the program cargo built does not run"
held=$(max_held "$E2E_TMP/cargo.tokens")
[ "$held" -ge 1 ] || fail "cargo's rustc processes took no tokens: $(cat "$E2E_TMP/cargo.tokens")"
note "cargo: at most $held token(s) held"
[ "$held" -le 2 ] || fail "more tokens held ($held) than --jobs 3 offers"
history_json "$E2E_TMP/h.db" "$E2E_TMP/h.json"
assert_eq "rustc" "$(json_get "$E2E_TMP/h.json" '",".join(sorted({x["tool"] for x in j["jobs"]}))')" "gated tools"
assert_eq 6 "$(json_get "$E2E_TMP/h.json" 'len(j["jobs"])')" "rustc jobs (five crates and the app)"

# 2. An LTO link: objects built first, then only the link under memgate.
d="$E2E_TMP/lto"
mkdir -p "$d"
python3 - "$d" <<'PY'
import sys
d = sys.argv[1]
for m in range(12):
    with open("%s/m%d.c" % (d, m), "w") as f:
        for i in range(12):
            f.write("double m%d_%d(double *v, int n) { double s = 0; for (int k = 0; k < n; k++) for (int j = 0; j < n; j++) s += v[(k * %d + j) %% n] * (j ^ k) / (k + %d.0); return s; }\n" % (m, i, i + 1, i + 1))
with open("%s/main.c" % d, "w") as f:
    f.write("#include <stdio.h>\n")
    for m in range(12):
        for i in range(12):
            f.write("double m%d_%d(double *, int);\n" % (m, i))
    f.write("int main(void) { double v[4] = {1, 2, 3, 4}, s = 0;\n")
    for m in range(12):
        for i in range(12):
            f.write(" s += m%d_%d(v, 4);\n" % (m, i))
    f.write(" printf(\"%g\\n\", s); return 0; }\n")
PY
for c in "$d"/*.c; do gcc -O2 -flto -c "$c" -o "${c%.c}.o" || fail "compiling $c"; done
(cd "$d" && cg_run "$cg" "$MEMGATE" run --jobs 3 --history "$E2E_TMP/h2.db" --jobserver-log "$E2E_TMP/lto.tokens" \
  -- gcc -O2 -flto=jobserver -flto-partition=max "$d"/*.o -o "$d/prog" >"$E2E_TMP/lto.out" 2>&1) ||
  fail "the LTO link: $(cat "$E2E_TMP/lto.out")"
"$d/prog" >/dev/null || fail "the linked program does not run"
! grep -qi "jobserver is not available" "$E2E_TMP/lto.out" || fail "gcc saw no jobserver: $(cat "$E2E_TMP/lto.out")"
held=$(max_held "$E2E_TMP/lto.tokens")
note "LTO: at most $held token(s) held"
[ "$held" -ge 1 ] || fail "the LTRANS partitions took no tokens: $(cat "$E2E_TMP/lto.tokens")"
# A link alone is recorded as a relink, which --build last passes over.
"$MEMGATE" history --json --build 1 --history "$E2E_TMP/h2.db" >"$E2E_TMP/h2.json"
assert_eq 1 "$(json_get "$E2E_TMP/h2.json" 'len(j["jobs"])')" "gated link jobs"
echo "PASS"
