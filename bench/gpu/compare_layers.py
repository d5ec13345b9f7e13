#!/usr/bin/env python3
"""compare_layers.py WAVECREST_RUN1.json WAVECREST_RUN2.json TORCH.json: wavecrest's layers timed
whole (two runs of `wavecrest time --layers --format json`) against PyTorch's same layers
(torch_layers.py), with the repeatability of wavecrest's figure and the engine that ran each layer
(cuBLASLt, and cuDNN's attention engine and version). Missing rows, failed layers and
non-finite values are reported, never fatal. Unfused attention has several torch references
(torch_layers.py: megatron-fused, neox-unfused, hf-eager); the table scores against the first, the
fused scale-mask-softmax as Megatron-LM and GPT-NeoX run it, names it, and lists the others' ratios
beside it. Each layer's measured time also stands beside the analytic model's sum of its parts
(predicted_sum_s: GEMMs, fused attention and the elementwise estimate, as the planner prices a
layer), the check of the planner's layer at the device. Prints a table, then two summary lines:
  layers N, within 5% of torch M, re-run within 1% K (unfused attention against megatron-fused)
  measured / predicted (the planner's sum of parts): median R over N layers (min A, max B)
"""
import json
import math
import statistics
import sys


def load_wavecrest(path):
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"{path}: {e}")
        return {}
    out = {}
    for t in doc.get("layers", []):
        key = t.get("key")
        src = t.get("provenance", {}).get("source", "")
        time_s = t.get("time_s", t.get("timeS"))
        engine = t.get("stats", {}).get("engine", "")
        predicted = t.get("predicted_sum_s", t.get("predictedSumS"))
        if key:
            out[key] = (float(time_s) if time_s is not None else math.nan, src, engine,
                        float(predicted) if predicted is not None else math.nan)
    return out


def load_torch(path):
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"{path}: {e}")
        return {}, {}
    rows = {r["key"]: r for r in doc.get("layers", []) if r.get("key")}
    return rows, {k: doc.get(k) for k in ("torch", "cuda", "cudnn", "device")}


def ratio(a, b):
    return a / b if (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)) else math.nan


def main(argv):
    if len(argv) != 4:
        print(__doc__)
        return 2
    run1, run2 = load_wavecrest(argv[1]), load_wavecrest(argv[2])
    torch_rows, versions = load_torch(argv[3])
    print("torch:", versions)
    print(f"{'layer':<100} {'wavecrest':>10} {'source':>16} {'re-run':>8} {'torch':>10} "
          f"{'wc/torch':>9} {'predicted':>10} {'wc/pred':>8}  torch method | wavecrest engine")
    n = within5 = within1 = 0
    over_predicted = []
    for key in sorted(set(run1) | set(torch_rows)):
        t1, src, engine, pred = run1.get(key, (math.nan, "missing", "", math.nan))
        t2 = run2.get(key, (math.nan,))[0]
        tr = torch_rows.get(key, {})
        tt = float(tr.get("median_s", math.nan)) if "median_s" in tr else math.nan
        rerun = ratio(t2, t1)
        wt = ratio(t1, tt)
        method = tr.get("error") or f"{tr.get('attention_backend', '?')} {tr.get('launch', '?')}"
        others = ", ".join(
            f"{name} {ratio(t1, float(r['median_s'])):.3f}" if "median_s" in r
            else f"{name} {r.get('error', 'not run')}"
            for name, r in tr.get("references", {}).items() if name != tr.get("reference"))
        if others:
            method += f" (wc/torch against the others: {others})"
        wp = ratio(t1, pred)
        print(f"{key:<100} {t1 * 1e3:>8.3f}ms {src:>16} {rerun:>8.4f} {tt * 1e3:>8.3f}ms "
              f"{wt:>9.3f} {pred * 1e3:>8.3f}ms {wp:>8.3f}  {method} | {engine}")
        if src == "SOURCE_MEASURED" or src == "SOURCE_CACHED":
            n += 1
            within5 += abs(wt - 1) <= 0.05
            within1 += abs(rerun - 1) <= 0.01
            if math.isfinite(wp):
                over_predicted.append(wp)
    refs = sorted({r.get("reference") for r in torch_rows.values() if r.get("reference")})
    against = f" (unfused attention against {', '.join(refs)})" if refs else ""
    print(f"layers {n}, within 5% of torch {within5}, re-run within 1% {within1}{against}")
    if over_predicted:
        print(f"measured / predicted (the planner's sum of parts): median "
              f"{statistics.median(over_predicted):.3f} over {len(over_predicted)} layers "
              f"(min {min(over_predicted):.3f}, max {max(over_predicted):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
