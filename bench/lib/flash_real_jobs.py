#!/usr/bin/python3
"""Workload flash-real: the measured flash-attn nvcc jobs replayed point by
point (issue 23). Unlike flash_jobs.py, nothing is fit to a model: memjob
--curve follows each clean profile in tests/fixtures/flash-attn/
flash-attn-profiles (one row per second: the largest sample of that second)
with memory divided by --mem-scale and time by --time-scale, and --rate
burns CPU at the real job's rate (cpu_s / wall_s), so a job's curve runs on
its own CPU time: two jobs on one core each take twice as long, as real
nvcc jobs do, and a frozen job does not move on.

Jobs: every clean profile once (17), or --jobs N of them drawn by a seeded
shuffle. Names are the kernel's with `flash_` made `attn_`, then the
targets (attn_bwd_hdim128_fp16_sm80_sm80): the real names' shape (one
token every kernel shares, then bwd/fwd, head dim, type), but not the
stems of the shipped flash-attn prior, whose memory is at real scale, so
a cold run is a true cold start of a project shaped like flash-attn. Writes, in --out:
  curves/<name>.csv  the scaled curve (t_seconds,bytes)
  <name>.cu          `// memjob: --curve curves/<name>.csv --rate R`
  Makefile           `all` builds every .o, in name order (bwd kernels first)
  jobs.csv           name, peak_bytes, duration_s, cpu_s, mem_gb_s (the
                     curve's integral: memory actually held, scaled)
"""
import argparse
import csv
import os
import random
import sys

from flash_jobs import load_profile, write_build


def area_gb_s(rows):
    """Integral of memory over time, linear between rows (GB*s)."""
    return sum((b0 + b1) / 2 * (t1 - t0) for (t0, b0), (t1, b1) in zip(rows, rows[1:])) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="directory with flash-attn-nvcc-jobs.csv and flash-attn-profiles/")
    ap.add_argument("--jobs", type=int, default=0, help="how many jobs (default: every clean profile once)")
    ap.add_argument("--mem-scale", type=float, default=4)
    ap.add_argument("--time-scale", type=float, default=8)
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    with open(os.path.join(a.data, "flash-attn-nvcc-jobs.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r["cpu_contended"] == "0"]
    found = [r for r in rows if os.path.exists(os.path.join(a.data, "flash-attn-profiles", r["profile"]))]
    if not found:
        sys.exit("flash_real_jobs.py: no clean profiles under " + a.data)
    order = sorted(found, key=lambda r: r["profile"])
    random.Random(a.seed).shuffle(order)
    picked = order[: a.jobs] if a.jobs else order

    os.makedirs(os.path.join(a.out, "curves"), exist_ok=True)
    jobs = []
    for r in picked:
        kernel = r["profile"].split("__")[0]
        name = f"attn_{kernel.removeprefix('flash_')}_{r['targets']}"
        prof = load_profile(os.path.join(a.data, "flash-attn-profiles", r["profile"]))
        scaled = [(t / a.time_scale, int(b / a.mem_scale)) for t, b in prof]
        with open(os.path.join(a.out, "curves", name + ".csv"), "w") as f:
            f.write("t_seconds,bytes\n")
            f.writelines(f"{t:.4f},{b}\n" for t, b in scaled)
        rate = min(1.0, float(r["cpu_s"]) / float(r["wall_s"]))
        with open(os.path.join(a.out, name + ".cu"), "w") as f:
            f.write(f"// flash-attn {kernel} ({r['targets']}, --threads 1), replayed from {r['profile']}\n"
                    f"// memjob: --curve curves/{name}.csv --rate {rate:.3f}\n")
        duration = scaled[-1][0]
        jobs.append((name, max(b for _, b in scaled), duration, duration * rate, area_gb_s(scaled)))

    write_build(a.out, jobs)

if __name__ == "__main__":
    main()
