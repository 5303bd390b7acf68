#!/usr/bin/python3
"""Prints bench/run's markdown table from its results.csv and bounds.csv.

One row per contender run. "x best static" is wall time over the fastest
run of a static `make -jN` whose every run in the sweep built everything
without an OOM kill (that row is renamed `static -jN (best)`); "x lower bound" is wall time over
bounds.py's bound. Ratios are shown for successful runs only: a failed run's
wall time is its time to failure. A run whose peak went into the last
RESERVE bytes of the cgroup is flagged: on a real machine that memory is
the system's, and a build using it is the one that makes SSH stop answering.

  table.py RESULTS.csv BOUNDS.csv RESERVE_BYTES
"""
import csv
import sys


def fmt_bytes(b):
    b = int(b)
    return f"{b / 2**30:.2f} GiB" if b >= 2**30 else f"{b / 2**20:.0f} MiB"


def clean_run(r):
    return r["status"] == "ok" and int(r["oom_kills"]) == 0


def main(results_path, bounds_path, reserve):
    rows = list(csv.DictReader(open(results_path)))
    bounds = {}
    try:
        for r in csv.reader(open(bounds_path)):
            if r:
                bounds[r[0]] = r
    except FileNotFoundError:
        pass
    out = []
    out.append("| workload | contender | wall s | result | OOM kills | peak | x best static | x lower bound "
               "| frozen job-s | requeued CPU-s | retries | notes |")
    out.append("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
    footers = []
    for w in dict.fromkeys(r["workload"] for r in rows):
        wr = [r for r in rows if r["workload"] == w]
        # A static N is clean when every run of it built everything without
        # an OOM kill; the best is the fastest run of a clean N.
        static = [r for r in wr if r["kind"] == "static"]
        failed_n = {r["jobs_n"] for r in static if not clean_run(r)}
        clean = [r for r in static if r["jobs_n"] not in failed_n]
        best = min(clean, key=lambda r: float(r["wall_s"])) if clean else None
        lb = float(bounds[w][7]) if w in bounds else None
        for r in wr:
            name = r["contender"]
            if r is best:
                name = f"static -j{r['jobs_n']} (best)"
            wall = float(r["wall_s"])
            ok = r["status"] == "ok"
            result = "ok" if ok else f"{r['status']} ({r['outputs_ok']}/{r['outputs_total']} built)"
            xb = f"{wall / float(best['wall_s']):.2f}" if ok and best else "–"
            xl = f"{wall / lb:.2f}" if ok and lb else "–"
            over = ""
            if w in bounds and int(r["peak_bytes"]) > int(bounds[w][2]) - reserve:
                over = f"peak in the last {fmt_bytes(reserve)} (memgate's reserve)"
            notes = "; ".join(x for x in (r["note"], over, f"load {r['load1']}") if x)
            # The cost of optimism (issue 13): memgate's runs only; GNU
            # parallel's reruns go in the retries column too.
            fz, rq = r.get("frozen_s") or "–", r.get("requeued_cpu_s") or "–"
            rt = r.get("retried") or "–"
            out.append(f"| {w} | {name} | {wall:.1f} | {result} | {r['oom_kills']} | {fmt_bytes(r['peak_bytes'])} "
                       f"| {xb} | {xl} | {fz} | {rq} | {rt} | {notes} |")
        if static:
            tried = ", ".join(f"-j{r['jobs_n']} " + ("ok" if clean_run(r) else "FAILED") for r in static)
            footers.append(f"- {w}: static sweep tried {tried}; best: "
                           + (f"-j{best['jobs_n']} ({float(best['wall_s']):.1f} s)" if best else "none succeeded"))
        if w in bounds:
            b = bounds[w]
            mem = (f"Σ∫m(t)dt {b[6]} GB·s" if b[6] else f"Σ(peak×duration) {b[4]} GB·s")
            area = f" (Σ(peak×duration) would be {b[4]} GB·s)" if b[6] else ""
            footers.append(f"- {w}: lower bound {b[7]} s = max(ΣCPU {b[3]} s / {b[1]} cores, "
                           f"{mem} / {int(b[2]) / 1e9:.2f} GB, longest job {b[5]} s){area}; "
                           f"from {b[8]}")
    print("\n".join(out))
    print()
    print("\n".join(footers))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
