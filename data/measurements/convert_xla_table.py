#!/usr/bin/env python3
"""Converts XLA's published GEMM table (gpu,b,m,n,k,dtype,flops_per_s) to wavecrest's measurement
CSV schema (data/measurements/README.md). Standard library only.

  python3 data/measurements/convert_xla_table.py ../shared/calibration/xla-gemm-perf-train.csv \
      > data/measurements/xla-gemm-perf-table.csv

`wavecrest calibrate --evaluate` also reads XLA's own format directly.
"""
import csv
import sys

GPUS = {"sm_90": "h100-sxm", "sm_100_B200": "b200", "sm_100": "b200"}
DTYPES = {
    "bf16xbf16->bf16": "bf16",
    "f16xf16->f16": "fp16",
    "f32xf32->f32": "tf32",  # XLA's default precision runs f32 dots on TF32 tensor cores
    "f8e4m3fnxf8e4m3fn->bf16": "fp8_e4m3",
    "f8e4m3fnxf8e5m2->bf16": "fp8_e4m3",
    "f8e5m2xf8e4m3fn->bf16": "fp8_e4m3",
}
HEADER = "source,gpu,dtype,dtype_detail,layout,m,n,k,batch,median_s,tflops,method,device"


def main(path):
    print("# XLA default matmul perf table (openxla/xla, Apache-2.0), converted by "
          "convert_xla_table.py; provenance in README.md")
    print(HEADER)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            b, m, n, k = (int(row[x]) for x in ("b", "m", "n", "k"))
            flops = float(row["flops_per_s"])
            t = 2.0 * b * m * n * k / flops
            print(",".join([
                "xla-default-matmul-perf-table", GPUS[row["gpu"]], DTYPES[row["dtype"]],
                row["dtype"], "NN", str(m), str(n), str(k), str(b), "%.6g" % t,
                "%.4g" % (flops / 1e12), "xla-perf-table", row["gpu"]]))


if __name__ == "__main__":
    main(sys.argv[1])
