#!/usr/bin/env bash
# The browser test on synthetic builds (100 and 5,000 jobs) rendered by
# bench_report_scale: proves the HTML report and the Chromium checks
# without needing `memgate run`. See report_browser.sh.
REPORT_SOURCE=synthetic exec bash "$(dirname "$0")/report_browser.sh"
