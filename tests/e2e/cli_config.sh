#!/usr/bin/env bash
# Issue 16: per-machine defaults in $XDG_CONFIG_HOME/memgate/config (else
# ~/.config/memgate/config). Precedence flag > environment > config >
# default, seen in what memgate really used (the run's record, the history
# path it names); a broken file is an error naming the file and the line
# (exit 2); `memgate wrap`, which every compiler call runs, never reads it.
source "$(dirname "$0")/lib.sh"
cd "$E2E_TMP"
cfg="$XDG_CONFIG_HOME/memgate/config"
mkdir -p "$(dirname "$cfg")"
db="$E2E_TMP/h.db"

# used FLAGS...: "SLOTS CAPACITY-BUDGET BUDGET" (MiB) of `memgate run FLAGS
# -- true`; without --memory the middle one is the reserve.
used() {
  "$MEMGATE" run -q --history "$db" --summary-json "$E2E_TMP/s.json" "$@" -- true ||
    fail "memgate run $* -- true failed"
  json_get "$E2E_TMP/s.json" \
    '"%d %d %d" % (j["build"]["slots"], (j["build"]["capacity_bytes"] - j["build"]["budget_bytes"]) >> 20, j["build"]["budget_bytes"] >> 20)'
}
history_path() { "$MEMGATE" history "$@" | sed -n 's/.*No builds recorded yet (\(.*\) does not exist).*/\1/p'; }

note "defaults, with no config file"
"$MEMGATE" doctor --json >"$E2E_TMP/doctor.json"
read -r slots reserve budget <<<"$(used)"
assert_eq "$(json_get "$E2E_TMP/doctor.json" 'j["reserve_bytes"] >> 20')" "$reserve" "default reserve (MiB)"
assert_eq "$XDG_CACHE_HOME/memgate/history.db" "$(history_path)" "default history"

note "run: the config's jobs, reserve and memory; a flag beats them"
printf '# this machine\njobs = 3\nreserve = 700M   # leave room for the desktop\n\n' >"$cfg"
read -r s r b <<<"$(used)"
assert_eq "3 700" "$s $r" "slots and reserve from the config"
"$MEMGATE" doctor --json >"$E2E_TMP/doctor2.json"
assert_eq 700 "$(json_get "$E2E_TMP/doctor2.json" 'j["reserve_bytes"] >> 20')" "doctor's reserve (MiB) with the config's"
assert_eq "700M config $cfg:$(grep -n '^reserve' "$cfg" | cut -d: -f1)" \
  "$(json_get "$E2E_TMP/doctor2.json" 'j["settings"]["reserve"]["value"] + " " + j["settings"]["reserve"]["source"]')" \
  "doctor's reserve with where it came from"
read -r s r b <<<"$(used --jobs 2 --reserve 600M)"
assert_eq "2 600" "$s $r" "slots and reserve from the flags"
printf 'memory = 512M\n' >>"$cfg"
read -r s r b <<<"$(used)"
assert_eq "3 512" "$s $b" "slots and budget from the config (jobs, memory)"
read -r s r b <<<"$(used --memory 256M -j 1)"
assert_eq "1 256" "$s $b" "slots and budget from the flags"

note "history: flag > MEMGATE_HISTORY > config > default"
printf 'history = %s\n' "$E2E_TMP/cfg.db" >"$cfg"
assert_eq "$E2E_TMP/cfg.db" "$(history_path)" "history from the config"
assert_eq "$E2E_TMP/env.db" "$(MEMGATE_HISTORY="$E2E_TMP/env.db" history_path)" "MEMGATE_HISTORY beats the config"
assert_eq "$E2E_TMP/flag.db" "$(MEMGATE_HISTORY="$E2E_TMP/env.db" history_path --history "$E2E_TMP/flag.db")" \
  "--history beats both"
"$MEMGATE" run -q -- true
"$MEMGATE" run -q --record-empty -- true
[ -f "$E2E_TMP/cfg.db" ] || fail "memgate run did not use the config's history"
assert_eq 1 "$("$MEMGATE" history --json | json_get /dev/stdin 'len(j["builds"])')" "builds in the config's history"

note "~/.config/memgate/config without XDG_CONFIG_HOME"
mkdir -p "$E2E_TMP/home/.config/memgate"
echo "jobs = 5" >"$E2E_TMP/home/.config/memgate/config"
env -u XDG_CONFIG_HOME HOME="$E2E_TMP/home" "$MEMGATE" run -q --history "$db" --summary-json "$E2E_TMP/s.json" -- true
assert_eq 5 "$(json_get "$E2E_TMP/s.json" 'j["build"]["slots"]')" "slots from ~/.config/memgate/config"

note "a broken config: the file and the line, exit 2"
# expect_config_error WANT: run, history and plan all refuse with exactly WANT.
expect_config_error() {
  local want=$1 status
  for cmd in "run -q -- true" "plan --recommend"; do
    status=0
    "$MEMGATE" $cmd >"$E2E_TMP/out" 2>"$E2E_TMP/err" || status=$?
    assert_eq 2 "$status" "exit status of memgate $cmd with a broken config"
    assert_eq "$want" "$(cat "$E2E_TMP/err")" "memgate $cmd with a broken config"
  done
  # history runs on without it and warns; doctor reports it and exits 1.
  "$MEMGATE" history --history "$db" >"$E2E_TMP/out" 2>"$E2E_TMP/err" ||
    fail "memgate history refused a broken config: $(cat "$E2E_TMP/err")"
  assert_eq "${want/memgate: error: /memgate: warning: the config file was ignored: }" "$(cat "$E2E_TMP/err")" \
    "memgate history's warning"
  status=0
  "$MEMGATE" doctor >"$E2E_TMP/out" 2>"$E2E_TMP/err" || status=$?
  assert_eq 1 "$status" "exit status of memgate doctor with a broken config"
  grep -q "^  config file      IGNORED: ${want#memgate: error: }" "$E2E_TMP/out" ||
    fail "doctor does not report the config error: $(cat "$E2E_TMP/out")"
  grep -q '^capacity$' "$E2E_TMP/out" || fail "doctor did not report the machine: $(cat "$E2E_TMP/out")"
}
printf 'jobs = 3\njbos = 4\n' >"$cfg"
expect_config_error "memgate: error: $cfg:2: unknown key 'jbos'; did you mean 'jobs'? (keys: memory, reserve, jobs, history)"
printf 'jobs = 0\n' >"$cfg"
expect_config_error "memgate: error: $cfg:1: jobs: jobs wants a number from 1 to 65536, not '0'"
printf 'history = h.db\n' >"$cfg"
expect_config_error "memgate: error: $cfg:1: history: history wants an absolute path (or one starting with ~/), not 'h.db'"
head -c 70000 /dev/zero | tr '\0' '#' >"$cfg"
expect_config_error "memgate: error: cannot read the config file $cfg: larger than 64 KiB, which no memgate config is"
note "wrap never reads it (a compiler call must not fail on a config)"
printf 'jbos = 4\n' >"$cfg"
out=$(env -u MEMGATE_SOCKET "$MEMGATE" wrap -- echo compiled 2>/dev/null) || fail "memgate wrap failed with a broken config"
assert_eq compiled "$out" "memgate wrap's program ran"
note "nor does --help (it is how one learns what the file may say)"
"$MEMGATE" run --help >"$E2E_TMP/out" 2>&1 || fail "memgate run --help failed with a broken config: $(cat "$E2E_TMP/out")"
grep -q 'Usage: memgate run' "$E2E_TMP/out" || fail "memgate run --help printed no usage with a broken config"
rm "$cfg"

note "--help says where the file is and the precedence"
"$MEMGATE" --help >"$E2E_TMP/help"
"$MEMGATE" run --help >"$E2E_TMP/run-help"
grep -q 'XDG_CONFIG_HOME/memgate/config' "$E2E_TMP/help" || fail "--help does not name the config file"
grep -q 'A flag beats the' "$E2E_TMP/help" || fail "--help does not give the precedence"
grep -q "the config's 'jobs'" "$E2E_TMP/run-help" || fail "run --help does not name the config's jobs"
echo "PASS"
