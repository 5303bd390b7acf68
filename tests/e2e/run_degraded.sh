#!/usr/bin/env bash
# Issue 4, "degraded mode": the surprise workload with confinement and the
# cgroup freezer forced off (--no-confine, MEMGATE_NO_FREEZER=1). memgate
# pauses jobs with SIGSTOP and kills with SIGKILL plus requeue; the build
# still succeeds, and the summary and `doctor` say what was degraded.
SURPRISE_DEGRADED=1 exec bash "$(dirname "$0")/run_surprise.sh"
