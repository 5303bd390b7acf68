#!/usr/bin/env bash
# Issue 6, "the browser test": the HTML report of a real run opens in
# headless Chromium with no console message at all (the page has no
# scripts, so any message is a failed load or a parse problem), and its
# timeline holds one .job bar per job. The first screen answers how close
# the build came to its budget, what limited it (the verdict) and which
# five jobs were heaviest; the memory chart (used, reserved and budget
# curves, with a legend) and the timeline share one time axis (the same
# width and scale attributes, one scroll container); event lanes exist
# only for kinds that happened; bars have a fixed peak-colour legend.
# Screenshots at 1400x900 are kept in the build directory
# (test-artefacts/report-*.png) for people to look at.
#
# REPORT_SOURCE=synthetic (report_browser_synthetic.sh) renders synthetic
# builds of 100 and 5,000 jobs with bench_report_scale instead of running
# one, so the renderer and this check are proven without `memgate run`.
source "$(dirname "$0")/lib.sh"
REPORT_SOURCE=${REPORT_SOURCE:-run}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "SKIP: no $CHROMIUM (Debian package chromium)"; exit 77; }

# browser ARGS... URL: one headless Chromium with a fresh profile; console
# messages go to stderr as "...:CONSOLE:<line>] ...".
browser() {
  local profile
  profile=$(mktemp -d "$E2E_TMP/profile.XXXXXX")
  timeout 180 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --enable-logging=stderr --v=0 "$@"
}
console_messages() { grep -E ':CONSOLE[:(]' "$1" || true; }

# The console check must be able to fail: a page with a deliberate error
# has to show up, or this Chromium logs differently and the check is blind.
prove_console_check() {
  cat >"$E2E_TMP/bad.html" <<'HTML'
<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"></head>
<body><script>no_such_function_in_memgate_report();</script></body></html>
HTML
  browser --dump-dom "file://$E2E_TMP/bad.html" >/dev/null 2>"$E2E_TMP/bad.log" || true
  console_messages "$E2E_TMP/bad.log" | grep -q no_such_function_in_memgate_report ||
    fail "Chromium did not report a deliberate console error; cannot check for console errors"
}

# svg_attr DOM CLASS ATTR: ATTR of the first <svg class="CLASS" ...> tag.
svg_attr() {
  grep -o "<svg class=\"$2\"[^>]*>" "$1" | head -n1 | grep -o " $3=\"[^\"]*\"" | head -n1
}

# check_time_view DOM NAME: one time axis, both curves and the budget, the
# legends, and no empty event lane.
check_time_view() {
  local dom=$1 name=$2 a mem tl
  for a in width data-x0 data-px-per-s data-t-end; do
    mem=$(svg_attr "$dom" mem "$a")
    tl=$(svg_attr "$dom" tl "$a")
    [ -n "$mem" ] || fail "$name: the memory chart has no $a"
    assert_eq "$mem" "$tl" "$name: $a of the timeline against the memory chart"
  done
  # One scroll container holds the memory chart and then the timeline.
  tr -d '\n' <"$dom" | grep -q '<div class="scroll"><svg class="mem"[^>]*>.*</svg><svg class="tl"' ||
    fail "$name: memory chart and timeline are not in one scroll container, chart first"
  grep -q '<polyline class="used" points="[0-9]' "$dom" || fail "$name: no memory-used curve"
  grep -q '<polyline class="reserved" points="[0-9]' "$dom" || fail "$name: no reserved curve"
  grep -q '<line class="budget"' "$dom" || fail "$name: no budget line"
  grep -q 'id="mem-legend"[^>]*>Memory: <span class="sw used">' "$dom" || fail "$name: no memory legend"
  grep -q '<span class="sw reserved">' "$dom" || fail "$name: reserved is not in the legend"
  grep -q '<span class="sw budget">' "$dom" || fail "$name: budget is not in the legend"
  assert_eq 4 "$(grep -o '<span class="sw p[0-3]">' "$dom" | sort -u | wc -l)" "$name: peak bands in the legend"
  # Event lanes: exactly the kinds that have an event mark.
  local lanes marks
  # (a build without events has neither: grep finds nothing, which is fine)
  lanes=$({ grep -o '<text class="evl" data-kind="[a-z_]*"' "$dom" || true; } | sed 's/.*data-kind="//; s/"//' | sort)
  marks=$({ grep -o '<rect class="ev k-[a-z_]*"' "$dom" || true; } | sed 's/.*k-//; s/"//' | sort -u)
  assert_eq "$marks" "$lanes" "$name: event lanes against the kinds of event marked"
  assert_eq "$(echo "$lanes" | grep -c . || true)" "$({ grep -o '<rect class="evlane"' "$dom" || true; } | wc -l)" \
    "$name: event lane backgrounds"
}

# check_report HTML JOBS SCREENSHOT: no console messages, JOBS .job bars
# in the rendered DOM, the first screen, the time view, and a screenshot.
check_report() {
  local html=$1 jobs=$2 shot=$3 name bars
  name=$(basename "$html" .html)
  browser --dump-dom "file://$html" >"$E2E_TMP/$name.dom" 2>"$E2E_TMP/$name.log" ||
    fail "Chromium failed on $html (see $E2E_TMP/$name.log)"
  local messages dom="$E2E_TMP/$name.dom"
  messages=$(console_messages "$E2E_TMP/$name.log")
  [ -z "$messages" ] || fail "console messages for $name: $messages"
  bars=$(grep -o '<rect class="job[ "]' "$dom" | wc -l)
  assert_eq "$jobs" "$bars" "timeline bars (.job) in the rendered $name"
  grep -q "data-jobs=\"$jobs\"" "$dom" || fail "$name: the timeline does not say $jobs jobs"
  # The first screen, before the charts: how close, what limited it, the heaviest jobs.
  tr -d '\n' <"$dom" | grep -q '<div class="first">.*id="headroom".*% of the budget.*id="limit".*<p class="verdict">[^<].*<table id="top-jobs">.*<svg class="mem"' ||
    fail "$name: the first screen lacks how close / what limited / the heaviest jobs, or comes after the charts"
  local top=$((jobs < 5 ? jobs : 5))
  assert_eq "$top" "$(sed -n '/<table id="top-jobs">/,/<\/table>/p' "$dom" | grep -o '<tr><td class="nm"' | wc -l)" \
    "$name: rows of the top-jobs table"
  grep -q '<h2>Details</h2>' "$dom" || fail "$name: no details table"
  check_time_view "$dom" "$name"
  local heaviest=$((jobs < 20 ? jobs : 20))
  assert_eq $((heaviest * 6)) "$(sed -n '/<table id="heaviest">/,/<\/table>/p' "$dom" | grep -o '<td class="n">' | wc -l)" \
    "$name: numeric cells of the $heaviest heaviest jobs"
  if [ -n "$shot" ]; then
    mkdir -p "$(dirname "$shot")"
    browser --screenshot="$shot" --window-size=1400,900 --hide-scrollbars "file://$html" \
      >/dev/null 2>"$E2E_TMP/$name.shot.log" || fail "no screenshot of $name"
    [ -s "$shot" ] || fail "empty screenshot $shot"
    note "screenshot: $shot"
  fi
}

# A real build: 12 memjob "compiles" under the cc name, through memgate
# run with --report and --trace; then `memgate report` from its history.
real_run() {
  export PATH="$(fake_compilers):$PATH"
  local peaks=(120M 300M 80M 200M 150M 250M) specs=() i w="$E2E_TMP/work"
  for i in $(seq 0 11); do specs+=("--peak ${peaks[$((i % 6))]} --ramp 0.3 --hold 0.2 --duration 0.6"); done
  memjob_workload "$w" "${specs[@]}"
  local run=("$MEMGATE" run --report "$E2E_TMP/r.html" --trace "$E2E_TMP/t.json" --history "$E2E_TMP/h.db" --
    make -j4 -C "$w")
  if have_cgroups && cg_prepare; then
    local cg
    cg=$(cg_make run 2G)
    run=(cg_run "$cg" "${run[@]}")
  fi
  set +e
  "${run[@]}" >"$E2E_TMP/run.log" 2>&1
  local rc=$?
  set -e
  cat "$E2E_TMP/run.log" >&2
  assert_eq 0 "$rc" "memgate run exit status"
  check_memjob_outputs "$w" || fail "outputs missing or wrong"
  [ -s "$E2E_TMP/r.html" ] || fail "memgate run --report wrote no report"
  check_report "$E2E_TMP/r.html" 12 "${MEMGATE_BUILD:-$E2E_TMP}/test-artefacts/report-run.png"
  assert_eq 12 "$(json_get "$E2E_TMP/t.json" 'len({e["args"]["identity"] for e in j["traceEvents"] if e["ph"]=="X"})')" \
    "jobs with a complete event in the trace of the run"

  note "memgate report from the history of that run"
  (cd "$E2E_TMP" && "$MEMGATE" report --history "$E2E_TMP/h.db" >"$E2E_TMP/report.out") ||
    fail "memgate report failed"
  assert_eq "memgate-report.html" "$(cat "$E2E_TMP/report.out")" "path printed by memgate report"
  check_report "$E2E_TMP/memgate-report.html" 12 ""
}

synthetic() {
  local bench="${MEMGATE_BUILD:?}/bench_report_scale"
  [ -x "$bench" ] || fail "$bench is not built"
  "$bench" --jobs 100 --slots 6 --out "$E2E_TMP/s100.html" --trace "$E2E_TMP/s100.json" >/dev/null
  check_report "$E2E_TMP/s100.html" 100 "$MEMGATE_BUILD/test-artefacts/report-100.png"
  note "the 5,000-job report"
  "$bench" --jobs 5000 --slots 32 --out "$E2E_TMP/s5000.html" >/dev/null
  check_report "$E2E_TMP/s5000.html" 5000 "$MEMGATE_BUILD/test-artefacts/report-5000.png"
}

prove_console_check
if [ "$REPORT_SOURCE" = synthetic ]; then synthetic; else real_run; fi
echo "PASS"
