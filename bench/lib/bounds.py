#!/usr/bin/python3
"""The lower bound on a workload's wall time, as issue 8 defines it:
    max(sum of CPU / cores, sum of memory held / capacity, longest job)
where the memory held is the sum of each job's integral of memory over time
(the jobs CSV's mem_gb_s) when known, else sum of (peak x duration), which
over-states it (issue 23: not a lower bound once reservations are released)
from the jobs' nominal specs (--jobs-csv: name, peak_bytes, duration_s,
cpu_s[, mem_gb_s]) or from memgate histories (--history-json, repeated:
`memgate history --json --build ID`, each job's cpu_s and peak_bytes; a
single-threaded compile alone on a core lasts its CPU time). With several
histories a job counts with its smallest CPU time and largest peak: CPU time
on this shared VM varies by up to 1.6x between runs of the same job, and the
bound must not exceed what a fast run achieved. Capacity is the cgroup limit
every contender runs under. Prints one CSV row (no header): workload, cores,
capacity_bytes, sum_cpu_s, sum_peak_x_dur_gb_s, longest_s, area_gb_s,
lower_bound_s, source. area_gb_s is the memory actually held over time
(sum of the integral of each job's memory), when known: area / capacity is
a true lower bound even for a scheduler that packs jobs past their peaks,
which sum(peak x duration) / capacity is not.

With both --jobs-csv and --history-json (flash-real), the curves give the
memory terms and the larger of the two CPU sums (and longest jobs) counts:
on a VM whose host backs memory lazily a replayed job also spends CPU
getting its memory, which the measured curve's CPU time does not hold, and
no schedule runs faster than the CPU the jobs really took.
"""
import argparse
import csv
import json
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--workload", required=True)
ap.add_argument("--cores", type=int, required=True)
ap.add_argument("--capacity", type=int, required=True)
ap.add_argument("--jobs-csv")
ap.add_argument("--history-json", action="append", default=[])
ap.add_argument("--source", default="")
a = ap.parse_args()

jobs = []  # (peak bytes, duration s, cpu s, area GB*s or None)
if a.jobs_csv:
    for r in csv.DictReader(open(a.jobs_csv)):
        area = float(r["mem_gb_s"]) if r.get("mem_gb_s") else None
        jobs.append((int(r["peak_bytes"]), float(r["duration_s"]), float(r["cpu_s"]), area))
measured = []
by_id = {}
for path in a.history_json:
    for j in json.load(open(path))["jobs"]:
        peak, cpu = by_id.get(j["identity"], (0, float("inf")))
        by_id[j["identity"]] = (max(peak, int(j["peak_bytes"])), min(cpu, float(j["cpu_s"])))
for peak, cpu in by_id.values():
    measured.append((peak, cpu, cpu, None))
if not jobs:
    jobs = measured
if not jobs:
    sys.exit("bounds.py: no jobs")
cap = a.capacity / 1e9
sum_cpu = max(sum(j[2] for j in jobs), sum(j[2] for j in measured))
sum_pd = sum(j[0] / 1e9 * j[1] for j in jobs)
longest = max(j[1] for j in jobs + measured)
area = sum(j[3] for j in jobs) if all(j[3] is not None for j in jobs) else None
# With each job's real memory integral known, it is the memory term: a
# scheduler that starts jobs beside others' tails beats sum(peak x duration).
lb = max(sum_cpu / a.cores, (area if area is not None else sum_pd) / cap, longest)
csv.writer(sys.stdout).writerow([a.workload, a.cores, a.capacity, f"{sum_cpu:.1f}", f"{sum_pd:.1f}", f"{longest:.1f}",
                                 "" if area is None else f"{area:.1f}", f"{lb:.1f}", a.source])
