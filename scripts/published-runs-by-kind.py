#!/usr/bin/env python3
"""Summarise bench/published_runs --rows output of NVIDIA's DGX-H100 set by kind of run.

Reads the rows (id, metric, "published", value, "predicted", value, signed error) on stdin and
prints, per kind, the rows, median |error|, median signed error, min and max (%). The kinds come
from the row ids written by bench/data/make_nemo_h100_runs.py. A step-time row's error is turned
into the throughput's (predicted rate / published - 1), so that + is too fast in every kind;
memory figures are left out.
"""
import re
import statistics
import sys

KINDS = [
    ("Llama 2 7B, context parallel, 4k-1M tokens (model TFLOP/s)", re.compile(r"^nemo_longseq_")),
    ("MoE with expert parallelism (tokens/s, step time)",
     re.compile(r"(qwen3-30b|qwen3-235b|gpt-oss|deepseekv3|mixtral|nemotron-3-nano)")),
    ("dense (tokens/s)", re.compile(r".")),
]


def main() -> None:
    groups = {name: [] for name, _ in KINDS}
    for line in sys.stdin:
        parts = line.split()
        if len(parts) != 7 or parts[2] != "published" or not parts[6].endswith("%"):
            continue
        if parts[1].startswith("memory"):  # not a rate of the step: the data set's .md has it
            continue
        err = float(parts[6].rstrip("%"))
        if parts[1] == "step_time_s":
            err = 100 * (1 / (1 + err / 100) - 1)
        for name, pattern in KINDS:
            if pattern.search(parts[0]):
                groups[name].append(err)
                break
    print("# by kind (signed error, %): rows, median |error|, median signed, min, max")
    for name, _ in reversed(KINDS):
        e = groups[name]
        if not e:
            continue
        print(f"{name:<62}{len(e):4d} {statistics.median(abs(x) for x in e):6.1f} "
              f"{statistics.median(e):+7.1f} {min(e):+7.1f} {max(e):+7.1f}")


if __name__ == "__main__":
    main()
