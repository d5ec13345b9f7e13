#!/usr/bin/env python3
"""recommend_rerun.py NAME A.json B.json: one model's measured Recommend on two fresh caches
(`wavecrest recommend --mode measured --format json`, run_on_device.sh's recommend part), judged as
issue 35 asks: the same verdict, and the second run's speed-ups within the bands the first stated.

A candidate is matched across the runs by its shape (h, a, a_kv, d, f, v, L, experts, top-k); its
re-measured speed-up is within its band when |s_B - s_A| <= 1.645 x speedup_uncertainty_A (the
first run's one-sigma uncertainty, two-sided 90%). Prints, for summary.py:

  recommend NAME: verdicts VERDICT_CHANGE / VERDICT_CHANGE (same)
  recommend NAME: re-run coverage 9 of 10 candidates within 1.645 sigma (90.0%; target >= 90%)

and one line per matched candidate. Exit 0 whatever the verdicts; 2 on a bad command line.
"""
import json
import sys

Z90 = 1.645
SHAPE = ("hidden_size", "num_attention_heads", "num_kv_heads", "head_dim", "ffn_hidden_size",
         "vocab_size", "num_layers", "num_experts", "experts_per_token")


def load(path):
    """The final answer of a recommend JSON file: the last JSON object in it (a progress line or
    an error message before it is skipped); None when there is none."""
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return None
    start = text.find("{")
    decoder = json.JSONDecoder()
    last = None
    while start >= 0:
        try:
            obj, end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(obj, dict):
            last = obj
        start = text.find("{", end)
    return last


def shape(candidate):
    m = candidate.get("model", {})
    return tuple(int(m.get(k, 0) or 0) for k in SHAPE)


def judge(name, a, b):
    lines = []
    if a is None or b is None:
        missing = " and ".join(p for p, d in (("A", a), ("B", b)) if d is None)
        return [f"recommend {name}: no answer in {missing}"]
    va, vb = a.get("verdict", "VERDICT_UNSPECIFIED"), b.get("verdict", "VERDICT_UNSPECIFIED")
    lines.append(f"recommend {name}: verdicts {va} / {vb} ({'same' if va == vb else 'differ'})")
    second = {shape(c): c for c in b.get("candidates", []) if not c.get("baseline")}
    matched = within = 0
    rows = []
    for c in a.get("candidates", []):
        if c.get("baseline") or shape(c) not in second:
            continue
        s1, sigma = float(c.get("speedup", 0)), float(c.get("speedup_uncertainty", 0))
        s2 = float(second[shape(c)].get("speedup", 0))
        ok = abs(s2 - s1) <= Z90 * sigma
        matched += 1
        within += ok
        rows.append(f"  {'ok ' if ok else 'OUT'} {'/'.join(map(str, shape(c)))}: "
                    f"{s1:.3f} +- {sigma:.3f} then {s2:.3f} ({100 * (s2 / s1 - 1):+.2f}%)")
    if matched == 0:
        lines.append(f"recommend {name}: re-run coverage: no candidate in both runs")
    else:
        lines.append(f"recommend {name}: re-run coverage {within} of {matched} candidates within "
                     f"1.645 sigma ({100 * within / matched:.1f}%; target >= 90%)")
    return lines + rows


def main(argv):
    if len(argv) != 4:
        print(__doc__)
        return 2
    print("\n".join(judge(argv[1], load(argv[2]), load(argv[3]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
