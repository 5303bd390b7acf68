#!/usr/bin/env bash
# A config file someone else controls, read by root. Another user (uid
# 65534) owns the directory XDG_CONFIG_HOME points at and writes
# `history = <a 0600 file of root's>` there; before, `memgate run` moved
# that file aside as a corrupt database and put a 0644 one in its place.
# A root-owned but group-writable config did the same. Now memgate refuses
# the file with an error that names it and why (exit 2) and reads nothing
# of it, and root's file is untouched.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the attack is on root's memgate)"; exit 77; }
cd "$E2E_TMP"
secret="$E2E_TMP/root-only/secret"
mkdir -m 0700 "$E2E_TMP/root-only"
printf 'not a database\n' >"$secret" && chmod 0600 "$secret"

# check_refused CONFIG_HOME CONFIG WHY: memgate run refuses CONFIG and leaves the secret alone.
check_refused() {
  local status=0
  XDG_CONFIG_HOME=$1 "$MEMGATE" run -- true >"$E2E_TMP/out.txt" 2>"$E2E_TMP/err.txt" || status=$?
  cat "$E2E_TMP/err.txt" >&2
  assert_eq 2 "$status" "exit status with the config $2"
  grep -q "^memgate: error: refusing the config file $2: .*$3" "$E2E_TMP/err.txt" ||
    fail "no error naming $2 and '$3'"
  assert_eq "not a database" "$(cat "$secret")" "the secret's content"
  assert_eq 600 "$(stat -c %a "$secret")" "the secret's mode"
  assert_eq "" "$(ls "$E2E_TMP/root-only" | grep -v '^secret$' || true)" "files beside the secret"
}

note "a config directory of another user's"
theirs="$E2E_TMP/theirs"
mkdir -p "$theirs/memgate"
printf 'history = %s\n' "$secret" >"$theirs/memgate/config"
chown -R 65534:65534 "$theirs"
check_refused "$theirs" "$theirs/memgate/config" "$theirs: it is owned by uid 65534, neither root nor uid 0"

note "root's own config, but group-writable"
mine="$E2E_TMP/mine"
mkdir -p "$mine/memgate"
printf 'history = %s\n' "$secret" >"$mine/memgate/config"
chmod 0664 "$mine/memgate/config"
check_refused "$mine" "$mine/memgate/config" "it is writable by group or others"

note "the same file made private is read"
chmod 0644 "$mine/memgate/config"
printf 'jobs = 3\n' >"$mine/memgate/config"
XDG_CONFIG_HOME=$mine "$MEMGATE" run -q --history "$E2E_TMP/h.db" --summary-json "$E2E_TMP/s.json" -- true ||
  fail "memgate run with a trusted config failed"
assert_eq 3 "$(json_get "$E2E_TMP/s.json" 'j["build"]["slots"]')" "slots from the trusted config"
echo PASS
