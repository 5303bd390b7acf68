#!/usr/bin/python3
"""Workload (b), real g++: generated translation units whose compilation
makes g++ (cc1plus) itself use from ~150 MB to ~1.2 GB, in a mix of sizes.

Three generators, each with one dial (measured with g++ 12.2 -O2 on this
project's 2-vCPU VM; memory is cc1plus's max RSS, CPU is user time):

  table K    a lookup table of K x 100,000 constant expressions, expanded by
             nested macros from a few lines of source (generated tables:
             Unicode data, descriptors). ~0.35 GB and ~4.3 CPU-s per K.
  grid N     N x N distinct class-template instantiations summed by fold
             expressions (template metaprogramming).
             N=200 ~0.17 GB/2.5 s, 300 ~0.33 GB/5.8 s, 450 ~0.70 GB/20 s.
  cexpr N    a constexpr-evaluated table of N entries (compile-time
             computation). 1M ~0.24 GB/3.6 s, 2M ~0.46 GB/8 s.

The job list is in build order (the Makefile's `all` lists the objects in
this order, and GNU parallel gets the same list): the two biggest tables
come first, as the heaviest kernels of a real project tend to sit together
in its source list, so a static -j2 runs them at the same time.

Writes, in --out: the .cpp files, Makefile, jobs.txt (build order) and
jobs.csv (name, kind, dial, nominal peak bytes, nominal CPU s).
"""
import argparse
import csv
import os

CXXFLAGS = "-O2 -std=c++17 -fconstexpr-loop-limit=100000000 -fconstexpr-ops-limit=1000000000000"

# name, kind, dial
QUICK = [
    ("table_big_a", "table", 3.3),
    ("table_big_b", "table", 3.3),
    ("grid_mid_a", "grid", 300),
    ("cexpr_small_a", "cexpr", 1_000_000),
    ("grid_small_a", "grid", 200),
]
FULL = [
    ("table_big_a", "table", 3.3),
    ("table_big_b", "table", 3.3),
    ("table_big_c", "table", 2.6),
    ("grid_big_a", "grid", 420),
    ("cexpr_mid_a", "cexpr", 2_000_000),
    ("cexpr_mid_b", "cexpr", 1_500_000),
    ("grid_mid_a", "grid", 300),
    ("table_mid_a", "table", 1.2),
    ("cexpr_small_a", "cexpr", 1_000_000),
    ("grid_small_a", "grid", 250),
    ("table_small_a", "table", 0.5),
    ("grid_small_b", "grid", 200),
    ("cexpr_small_b", "cexpr", 800_000),
    ("table_small_b", "table", 0.4),
]


def nominal(kind, dial):
    """(peak bytes, CPU s) from the calibration above; used for GNU parallel's
    --memfree/--memsuspend (the largest job) and shown in jobs.csv."""
    if kind == "table":
        return int(0.35e9 * dial + 30e6), 4.3 * dial
    if kind == "grid":
        pts = [(200, 0.17e9, 2.5), (300, 0.33e9, 5.8), (450, 0.70e9, 20.0)]
    else:
        pts = [(1e6, 0.24e9, 3.6), (2e6, 0.46e9, 8.0), (3e6, 0.73e9, 15.0)]
    for (x0, m0, c0), (x1, m1, c1) in zip(pts, pts[1:]):
        if dial <= x1 or (x1 == pts[-1][0]):
            f = (dial - x0) / (x1 - x0)
            return int(m0 + f * (m1 - m0)), c0 + f * (c1 - c0)
    raise AssertionError


TABLE_MACROS = """\
#define A(x) (x)*7+1, (x)*7+2, (x)*7+3, (x)*7+4, (x)*7+5, (x)*7+6, (x)*7+7, (x)*7+8, (x)*7+9, (x)*7+10
#define B(x) A((x)*10+0), A((x)*10+1), A((x)*10+2), A((x)*10+3), A((x)*10+4), A((x)*10+5), A((x)*10+6), A((x)*10+7), A((x)*10+8), A((x)*10+9)
#define C(x) B((x)*10+0), B((x)*10+1), B((x)*10+2), B((x)*10+3), B((x)*10+4), B((x)*10+5), B((x)*10+6), B((x)*10+7), B((x)*10+8), B((x)*10+9)
#define D(x) C((x)*10+0), C((x)*10+1), C((x)*10+2), C((x)*10+3), C((x)*10+4), C((x)*10+5), C((x)*10+6), C((x)*10+7), C((x)*10+8), C((x)*10+9)
#define E(x) D((x)*10+0), D((x)*10+1), D((x)*10+2), D((x)*10+3), D((x)*10+4), D((x)*10+5), D((x)*10+6), D((x)*10+7), D((x)*10+8), D((x)*10+9)
"""


def table_source(name, k):
    # k x 100,000 entries: whole E blocks (100,000) then D blocks (10,000).
    e, d = int(k), int(round((k - int(k)) * 10))
    parts = [f"E({i + 1})" for i in range(e)] + [f"D({100 + i})" for i in range(d)]
    return TABLE_MACROS + f"extern const unsigned long long {name}[] = {{ {', '.join(parts)} }};\n"


def grid_source(name, n):
    return f"""#include <utility>
template<int A, int B> struct P {{ static constexpr long v = long(A) * B + (A ^ B); }};
template<int A, int... B> constexpr long row(std::integer_sequence<int, B...>) {{ return (P<A, B>::v + ...); }}
template<int... A> constexpr long all(std::integer_sequence<int, A...>) {{
  return (row<A>(std::make_integer_sequence<int, {n}>{{}}) + ...);
}}
extern const long {name} = all(std::make_integer_sequence<int, {n}>{{}});
"""


def cexpr_source(name, n):
    return f"""constexpr int N = {n};
struct T {{ unsigned a[N]; }};
constexpr T make() {{ T t{{}}; for (int i = 0; i < N; i++) t.a[i] = i * 2654435761u; return t; }}
extern const T {name} = make();
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    jobs = QUICK if a.quick else FULL
    os.makedirs(a.out, exist_ok=True)
    gen = {"table": table_source, "grid": grid_source, "cexpr": cexpr_source}
    for name, kind, dial in jobs:
        with open(os.path.join(a.out, name + ".cpp"), "w") as f:
            f.write(gen[kind](name, dial))
    with open(os.path.join(a.out, "jobs.txt"), "w") as f:
        f.write("".join(name + ".cpp\n" for name, _, _ in jobs))
    with open(os.path.join(a.out, "jobs.csv"), "w") as f:
        w = csv.writer(f)
        w.writerow(["name", "kind", "dial", "nominal_peak_bytes", "nominal_cpu_s"])
        for name, kind, dial in jobs:
            peak, cpu = nominal(kind, dial)
            w.writerow([name, kind, dial, peak, f"{cpu:.1f}"])
    objs = " ".join(name + ".o" for name, _, _ in jobs)
    with open(os.path.join(a.out, "Makefile"), "w") as f:
        f.write(f"CXXFLAGS := {CXXFLAGS}\nOBJS := {objs}\nall: $(OBJS)\n"
                "%.o: %.cpp\n\tg++ $(CXXFLAGS) -c $< -o $@\nclean:\n\trm -f *.o\n")


if __name__ == "__main__":
    main()
