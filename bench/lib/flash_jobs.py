#!/usr/bin/python3
"""Workload (a), flash-like: memjob "nvcc" jobs drawn from the measured
flash-attn jobs (tests/fixtures/flash-attn), scaled in memory and time.

Each clean single-target profile (a `flash-attn-profiles/*.csv` file) is fit
to memjob's profile model:
  base     memory one second in (nvcc and cudafe++ before cicc grows),
  peak     the job's measured peak (peak_tree_bytes), reached by a linear
           ramp from the start when memory first reaches 90% of it,
  hold     from then until memory last is >= 90% of the peak (cicc's
           plateau; the measured t_peak_s falls inside it),
  after    the mean of the rest of the job (so memory x time is kept),
  duration the job's wall time (the clean rows have wall ~= CPU).
Memory is divided by --mem-scale and time by --time-scale.

Jobs are drawn round-robin over a seeded shuffle of the profiles, so every
profile is used about equally and the heavy backward kernels make up about
a third of the jobs, as in flash-attn. Writes, in --out:
  <name>.cu       one `memjob: ...` line per job (the fake nvcc reads it)
  Makefile        `all` builds every .o, in name order (bwd kernels first)
  jobs.csv        name, peak_bytes, duration_s, cpu_s, mem_seconds (GB*s)
"""
import argparse
import csv
import os
import random
import sys


def load_profile(path):
    rows = []
    with open(path) as f:
        for t, b in csv.reader(f):
            if t[0].isdigit():
                rows.append((float(t), int(b)))
    return rows


def fit(row, prof):
    peak = int(row["peak_tree_bytes"])
    duration = float(row["wall_s"])
    base = next((b for t, b in prof if t >= 1.0), prof[0][1])
    base = min(base, peak // 4)
    high = [t for t, b in prof if b >= 0.9 * peak] or [float(row["t_peak_s"])]
    t_peak, last90 = max(1.0, min(high)), max(high)
    hold = max(0.0, last90 - t_peak)
    rest = [b for t, b in prof if t > t_peak + hold]
    after = int(sum(rest) / len(rest)) if rest else peak // 4
    # Memory x time of the model, to report the workload's true area.
    ramp_area = (base + peak) / 2 * t_peak
    area = ramp_area + peak * hold + after * max(0.0, duration - t_peak - hold)
    return dict(base=base, peak=peak, peak_at=t_peak, hold=hold, after=after, duration=duration, area=area)


def write_build(out, jobs):
    """jobs.csv (name, peak, duration, CPU, memory area) and the Makefile of
    the .cu spec files in `out`; shared with flash_real_jobs.py."""
    with open(os.path.join(out, "jobs.csv"), "w") as f:
        w = csv.writer(f)
        w.writerow(["name", "peak_bytes", "duration_s", "cpu_s", "mem_gb_s"])
        for j in sorted(jobs):
            w.writerow([j[0], j[1], f"{j[2]:.3f}", f"{j[3]:.3f}", f"{j[4]:.3f}"])
    # The flags flash-attn's setup.py passes that memgate reads (target arch,
    # --threads); memjob ignores them.
    with open(os.path.join(out, "Makefile"), "w") as f:
        f.write("NVCCFLAGS := -O3 -std=c++17 --use_fast_math -gencode arch=compute_80,code=sm_80 --threads 1\n"
                "SRCS := $(sort $(wildcard *.cu))\n"
                "all: $(SRCS:.cu=.o)\n"
                "%.o: %.cu\n\tnvcc $(NVCCFLAGS) -c $< -o $@\n"
                "clean:\n\trm -f *.o\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="directory with flash-attn-nvcc-jobs.csv and flash-attn-profiles/")
    ap.add_argument("--jobs", type=int, required=True)
    ap.add_argument("--mem-scale", type=float, default=16)
    ap.add_argument("--time-scale", type=float, default=15)
    ap.add_argument("--seed", type=int, default=8)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    with open(os.path.join(a.data, "flash-attn-nvcc-jobs.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r["cpu_contended"] == "0"]
    fits = []
    for r in rows:
        path = os.path.join(a.data, "flash-attn-profiles", r["profile"])
        if os.path.exists(path):
            kernel = r["profile"].split("__")[0]
            fits.append((kernel, r["targets"], fit(r, load_profile(path))))
    if not fits:
        sys.exit("flash_jobs.py: no clean profiles under " + a.data)
    order = list(range(len(fits)))
    random.Random(a.seed).shuffle(order)

    os.makedirs(a.out, exist_ok=True)
    seen = {}
    jobs = []
    for i in range(a.jobs):
        kernel, targets, m = fits[order[i % len(fits)]]
        stem = f"{kernel}_{targets}"
        seen[stem] = seen.get(stem, 0) + 1
        name = f"{stem}_v{seen[stem]}"
        ms, ts = a.mem_scale, a.time_scale
        spec = (f"--base {int(m['base'] / ms)} --peak {int(m['peak'] / ms)} --ramp {m['peak_at'] / ts:.3f} "
                f"--peak-at {m['peak_at'] / ts:.3f} --hold {m['hold'] / ts:.3f} --after {int(m['after'] / ms)} "
                f"--duration {m['duration'] / ts:.3f}")
        with open(os.path.join(a.out, name + ".cu"), "w") as f:
            f.write(f"// synthetic flash-attn job from {kernel} ({targets}, --threads 1)\n// memjob: {spec}\n")
        dur = m["duration"] / ts
        jobs.append((name, int(m["peak"] / ms), dur, dur, m["area"] / ms / ts / 1e9))

    write_build(a.out, jobs)

if __name__ == "__main__":
    main()
