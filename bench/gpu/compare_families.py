#!/usr/bin/env python3
"""Judges the `families` part of run_on_device.sh: today's layers (MoE blocks, local and latent
attention) timed whole twice each through a cache-less server. For every layer of every model:
its source (MEASURED is the point; a PREDICTED row says why in sum_of_parts_reason), the two
runs' times and their ratio (re-run within 2%), and the planner's price against the measured
layer (predicted_sum_s / time_s - 1) and against the layer program's emulated price.

Usage: compare_families.py DIR   (reads DIR/families-*-1.json and -2.json; prints a table and one
verdict line: "families: N layers MEASURED, M re-run within 2%, K not measured")
"""
import glob
import json
import os
import sys


def layers(path):
    try:
        with open(path) as f:
            return json.load(f).get("layers", [])
    except (OSError, ValueError):
        return []


def main(directory):
    rows, measured, stable, missing = [], 0, 0, 0
    for first in sorted(glob.glob(os.path.join(directory, "families-*-1.json"))):
        tag = os.path.basename(first)[len("families-"):-len("-1.json")]
        second = {l["key"]: l for l in layers(first[:-len("-1.json")] + "-2.json")}
        for layer in layers(first):
            again = second.get(layer["key"], {})
            t1, t2 = layer.get("time_s", 0), again.get("time_s", 0)
            source = layer.get("provenance", {}).get("source", "?")
            is_measured = source in ("SOURCE_MEASURED", "SOURCE_CACHED")
            measured += is_measured
            missing += not is_measured
            rerun = t2 / t1 if t1 > 0 and t2 > 0 else 0
            stable += is_measured and abs(rerun - 1) <= 0.02
            planner = layer.get("predicted_sum_s", 0)
            rows.append((tag, layer["key"][:90], source.replace("SOURCE_", ""), t1, rerun,
                         planner / t1 - 1 if t1 > 0 else 0,
                         layer.get("predicted_program_s", 0),
                         layer.get("sum_of_parts_reason", "")))
    print(f"{'model':28s} {'layer':90s} {'source':9s} {'time_ms':>9s} {'rerun':>6s} "
          f"{'planner':>8s} {'program_ms':>10s}")
    for tag, key, source, t, rerun, gap, program, why in rows:
        print(f"{tag:28s} {key:90s} {source:9s} {1e3 * t:9.3f} {rerun:6.3f} {100 * gap:+7.1f}% "
              f"{1e3 * program:10.3f}" + (f"  ({why})" if why else ""))
    print(f"families: {measured} layers MEASURED, {stable} re-run within 2%, {missing} not "
          f"measured")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
