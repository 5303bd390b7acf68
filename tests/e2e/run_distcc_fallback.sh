#!/usr/bin/env bash
# Issue 15: distcc's quiet fallback. `memgate run -- make -j4 CC="distcc
# gcc"` where half the compiles go to a loopback distccd and half to a
# closed port on 127.0.0.1 (per-target DISTCC_HOSTS in the Makefile; a
# port the kernel picked as free, nobody listens there). distcc compiles
# the refused half here (its fallback, on by default). memgate must record
# those as what they were, local compiles learned under their own key,
# not as remote jobs: it reads distcc's own word, the "exec on localhost"
# line distcc logs for every compile it runs here (see read_distcc_log in
# src/engine/distcc.hpp). distcc's warnings still reach the build's stderr.
# Twice: with memgate's private log, and with the user's own DISTCC_LOG.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../lib/distcc.sh"
require_cgroups
have_distcc || { echo "SKIP: distcc/distccd not installed (apt-get install -y distcc)"; exit 77; }
command -v gcc >/dev/null || { echo "SKIP: no gcc"; exit 77; }

src="$E2E_TMP/src"
c_project "$src" 4 a
for i in 1 2 3 4; do cp "$src/a$i.c" "$src/b$i.c" && sed -i "s/\ba$i\b/b$i/g" "$src/b$i.c"; done
c_project_reference "$src" "$E2E_TMP/local" || fail "the local reference build failed"

srv_dir="$E2E_TMP/server"
distccd_dir "$srv_dir"
server=$(cg_make server 2G)
read -r dpid port < <(distccd_start "$server" "$srv_dir" 4) || fail "cannot start distccd"
closed=$(free_port)
note "distccd pid $dpid on 127.0.0.1:$port; nothing on 127.0.0.1:$closed"
cat >>"$src/Makefile" <<MK
a%.o: export DISTCC_HOSTS = 127.0.0.1:$port/4
b%.o: export DISTCC_HOSTS = 127.0.0.1:$closed/4
MK

# Fallback, local retry and backoff on, as distcc ships (without backoff
# distcc 3.4 retries the refused host for ever instead of falling back).
distcc_client_env "127.0.0.1:$port/4" "$E2E_TMP/distcc-client"
client=$(cg_make client 2G)
for round in private user; do
  make -s -C "$src" clean
  : >"$srv_dir/distccd.log"
  if [ $round = user ]; then export DISTCC_LOG="$E2E_TMP/user-distcc.log"; else unset DISTCC_LOG; fi
  export DISTCC_DIR="$E2E_TMP/distcc-client-$round" && mkdir -p "$DISTCC_DIR"  # fresh backoff state
  set +e
  cg_run "$client" timeout 240 "$MEMGATE" run --jobs 4 --history "$E2E_TMP/h.db" -- \
    make -s -C "$src" -j4 CC="distcc gcc" >"$E2E_TMP/$round.log" 2>&1
  rc=$?
  set -e
  cat "$E2E_TMP/$round.log" >&2
  assert_eq 0 "$rc" "memgate run exit status ($round log)"
  same_objects "$src" "$E2E_TMP/local" || fail "objects differ from the local build's ($round log)"
  assert_eq 4 "$(distccd_remote_ok "$srv_dir/distccd.log")" "compiles the daemon finished ($round log)"

  history_json "$E2E_TMP/h.db" "$E2E_TMP/$round.json"
  # The first letter of a job's object: a (served) or b (refused).
  json_get "$E2E_TMP/$round.json" '"\n".join("%s %s %s" % (x["where"], x["engine"], x["identity"]) for x in j["jobs"])' >&2
  assert_eq 4 "$(json_get "$E2E_TMP/$round.json" '(lambda obj: sum(1 for x in j["jobs"] if x["where"] == "remote" and x["identity"].startswith("distcc>") and obj(x) == "a"))(lambda x: x["identity"].split("->")[-1].split("/")[-1][:1])')" \
    "a*.c recorded remote ($round log)"
  assert_eq 4 "$(json_get "$E2E_TMP/$round.json" '(lambda obj: sum(1 for x in j["jobs"] if x["where"] == "local" and x["engine"] == "distcc" and not x["identity"].startswith("distcc>") and obj(x) == "b"))(lambda x: x["identity"].split("->")[-1].split("/")[-1][:1])')" \
    "b*.c recorded local, under their own key ($round log)"
  assert_eq 4 "$(json_get "$E2E_TMP/$round.json" 'j["build"]["counters"]["fell_back"]')" "the fell_back counter ($round log)"
  grep -q "4 jobs handed to an engine but compiled here" "$E2E_TMP/$round.log" || fail "the summary does not say so ($round log)"
  if [ $round = private ]; then
    # What distcc says on stderr without a log file still gets there.
    grep -q 'running locally instead' "$E2E_TMP/$round.log" || fail "distcc's warnings did not reach stderr"
  else
    [ "$(grep -c 'exec on localhost' "$DISTCC_LOG")" -ge 4 ] || fail "the user's DISTCC_LOG lost distcc's lines"
  fi
done

distccd_stop "$srv_dir" "$dpid"
assert_eq "" "$(cg_procs "$server")" "processes left in the server's cgroup"
assert_eq "" "$(cg_procs "$client")" "processes left in the client's cgroup"
echo "PASS"
