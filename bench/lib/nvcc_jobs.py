#!/usr/bin/python3
"""Workload (c), real nvcc: generated CUDA kernels compiled by nvcc for
sm_80 (no GPU needed), whose memory is set by how much code one kernel
unrolls into: a template kernel whose loop of NN x 16 dependent FMAs is
fully unrolled, so cicc and ptxas see one huge function, as with
CUTLASS-based kernels such as flash-attn's.

Measured with nvcc 13.0 -O3 --threads 1 on this project's 2-vCPU VM (peak of
the job's cgroup, CPU = user + sys):
  NN=100  190 MB   4 s   (the floor: the host-side compile)
  NN=250  250 MB   8 s
  NN=500  475 MB  16 s
  NN=800  750 MB  26 s
  NN=1000 940 MB  41 s
Above ~1000 nvcc stops unrolling fully, and memory falls back to the floor.

Writes, in --out: the .cu files, Makefile (objects in build order, the two
biggest first), jobs.txt and jobs.csv (name, NN, nominal peak, nominal CPU).
"""
import argparse
import csv
import os

NVCCFLAGS = "-O3 -std=c++17 -gencode arch=compute_80,code=sm_80 --threads 1"
JOBS = [
    ("unroll_big_a", 900),
    ("unroll_big_b", 900),
    ("unroll_mid_a", 500),
    ("unroll_small_a", 250),
    ("unroll_tiny_a", 100),
    ("unroll_tiny_b", 100),
    ("unroll_tiny_c", 100),
]
CALIBRATION = [(100, 190e6, 4), (250, 250e6, 8), (500, 475e6, 16), (800, 750e6, 26), (1000, 940e6, 41)]

SOURCE = """template<int N>
__global__ void {name}(const float* __restrict__ in, float* __restrict__ out) {{
  float acc[16];
  #pragma unroll
  for (int j = 0; j < 16; ++j) acc[j] = in[threadIdx.x + j];
  #pragma unroll
  for (int i = 0; i < N; ++i) {{
    #pragma unroll
    for (int j = 0; j < 16; ++j) acc[j] = __fmaf_rn(acc[j], acc[(j + i) & 15], in[(i * 16 + j) & 1023] * 0.5f + i);
  }}
  #pragma unroll
  for (int j = 0; j < 16; ++j) out[threadIdx.x * 16 + j] = acc[j];
}}
template __global__ void {name}<{nn}>(const float*, float*);
"""


def nominal(nn):
    for (x0, m0, c0), (x1, m1, c1) in zip(CALIBRATION, CALIBRATION[1:]):
        if nn <= x1:
            f = (nn - x0) / (x1 - x0)
            return int(m0 + f * (m1 - m0)), c0 + f * (c1 - c0)
    return int(CALIBRATION[-1][1]), CALIBRATION[-1][2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name, nn in JOBS:
        with open(os.path.join(a.out, name + ".cu"), "w") as f:
            f.write(SOURCE.format(name=name, nn=nn))
    with open(os.path.join(a.out, "jobs.txt"), "w") as f:
        f.write("".join(name + ".cu\n" for name, _ in JOBS))
    with open(os.path.join(a.out, "jobs.csv"), "w") as f:
        w = csv.writer(f)
        w.writerow(["name", "nn", "nominal_peak_bytes", "nominal_cpu_s"])
        for name, nn in JOBS:
            peak, cpu = nominal(nn)
            w.writerow([name, nn, peak, f"{cpu:.1f}"])
    objs = " ".join(name + ".o" for name, _ in JOBS)
    with open(os.path.join(a.out, "Makefile"), "w") as f:
        f.write(f"NVCCFLAGS := {NVCCFLAGS}\nOBJS := {objs}\nall: $(OBJS)\n"
                "%.o: %.cu\n\tnvcc $(NVCCFLAGS) -c $< -o $@\nclean:\n\trm -f *.o\n")


if __name__ == "__main__":
    main()
