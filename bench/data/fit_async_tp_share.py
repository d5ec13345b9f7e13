#!/usr/bin/env python3
"""The share of the tensor-parallel collectives TorchTitan's async TP hides, from its published
pairs of runs (the same run with vanilla and with async TP), and that share cross-validated.

Reads `bench/published_runs --rows --components bench/data/published-runs-torchtitan-h100.csv`
on standard input. For each pair, the planner's step of the vanilla run (T) and its exposed
tensor-parallel collectives (C, the components line's "tp") and the two published rates (r_v,
r_a) give the share f of C that the measured speed-up implies hidden:

    T / (T - f C) = r_a / r_v   =>   f = T (1 - r_v / r_a) / C

The share is fitted to the June 2025 page's pairs with tensorwise (or no) float8 scales, the
median of them (kAsyncTpHiddenShare in core/parallelism.h), and checked on what it was not
fitted to: the December 2024 page's pair, and each pair left out of the median of the others.
The rowwise-scaled pairs are reported, not fitted: their vanilla runs are priced 9-17% fast
(the planner prices rowwise float8's tensor parallelism in BF16 and its backward's casts, not the
row-scaled kernel's rate nor the small linears torchao's auto filter now leaves in BF16), so the
implied share is not the collectives' alone.

  build/bench/published_runs --rows --components bench/data/published-runs-torchtitan-h100.csv \
    | python3 bench/data/fit_async_tp_share.py [--check core/parallelism.h client/main.cc]

With --check, exits 1 unless the header's kAsyncTpHiddenShare equals the fitted median to two
decimals and the CLI's --tp-overlap help gives it.
"""
import re
import statistics
import sys

ROW = re.compile(r"^(\S+) tokens_per_s_per_gpu published\s+([\d.]+) predicted\s+([\d.]+)")
PARTS = re.compile(r"step ([\d.]+) s: .* tp ([\d.]+) ")


def read_rows(lines):
    """id -> (published, predicted, step s, tp s) for every row with a components line."""
    rows, last = {}, None
    for line in lines:
        m = ROW.match(line)
        if m:
            last = m.group(1)
            rows[last] = [float(m.group(2)), float(m.group(3))]
            continue
        p = PARTS.search(line)
        if p and last is not None and len(rows[last]) == 2:
            rows[last] += [float(p.group(1)), float(p.group(2))]
    return rows


def pairs(rows):
    """(async id, vanilla id) for every async TP row whose vanilla run is in the set."""
    out = []
    for rid in rows:
        if "asynctp" not in rid:
            continue
        vanilla = rid.replace("asynctp", "")
        if vanilla in rows:
            out.append((rid, vanilla))
    return out


def share(rows, a, v):
    published_v, _, step, tp = rows[v]
    return step * (1 - published_v / rows[a][0]) / tp


def predicted_speedup(rows, v, f):
    _, _, step, tp = rows[v]
    return step / (step - f * tp)


def main():
    rows = read_rows(sys.stdin)
    all_pairs = pairs(rows)
    fit = [(a, v) for a, v in all_pairs if "_2506_" in a and "rowwise" not in a]
    held = [(a, v) for a, v in all_pairs if (a, v) not in fit]
    if len(fit) < 3:
        sys.exit(f"fit_async_tp_share: {len(fit)} fitting pairs found; expected 4")
    shares = {a: share(rows, a, v) for a, v in all_pairs}
    median = statistics.median(shares[a] for a, _ in fit)
    print("Async TP's hidden share of the planner's tensor-parallel collectives, by published pair")
    print(f"{'async TP run':78} {'share':>6} {'speed-up':>9} {'predicted':>9}  role")
    for a, v in all_pairs:
        measured = rows[a][0] / rows[v][0]
        role = "fitted" if (a, v) in fit else "held out"
        if "rowwise" in a:
            role += " (rowwise float8: its kernels not priced)"
        print(f"{a:78} {shares[a]:6.3f} {measured:8.3f}x {predicted_speedup(rows, v, median):8.3f}x"
              f"  {role}")
    print(f"fitted share (median of {len(fit)} pairs): {median:.3f}")
    # Leave one out: each fitting pair's speed-up from the median of the others.
    errors = []
    for a, v in fit:
        others = statistics.median(shares[o] for o, _ in fit if o != a)
        predicted = predicted_speedup(rows, v, others)
        measured = rows[a][0] / rows[v][0]
        errors.append(predicted / measured - 1)
        print(f"leave-one-out {a}: share {others:.3f}, speed-up {predicted:.3f}x against "
              f"{measured:.3f}x ({100 * errors[-1]:+.1f}%)")
    for a, v in held:
        if "rowwise" in a:
            continue
        predicted = predicted_speedup(rows, v, median)
        measured = rows[a][0] / rows[v][0]
        print(f"held out {a}: speed-up {predicted:.3f}x against {measured:.3f}x "
              f"({100 * (predicted / measured - 1):+.1f}%)")
    print(f"all tensor-parallel collectives hidden (the share 1) would predict "
          + ", ".join(f"{predicted_speedup(rows, v, 1.0):.2f}x" for _, v in fit)
          + " for the fitted pairs")
    if len(sys.argv) == 4 and sys.argv[1] == "--check":
        check(sys.argv[2], sys.argv[3], median)


def check(header, cli, median):
    """Exits 1 unless the header's constant and the CLI's help give the fit's median."""
    m = re.search(r"kAsyncTpHiddenShare = ([\d.]+);", open(header).read())
    if not m or abs(float(m.group(1)) - round(median, 2)) > 1e-9:
        sys.exit(f"kAsyncTpHiddenShare in {header} is {m.group(1) if m else 'missing'}; "
                 f"the fit gives {median:.2f}")
    if f"async TP hid {m.group(1)}" not in open(cli).read():
        sys.exit(f"{cli}'s --tp-overlap help does not give async TP's share {m.group(1)}")
    print(f"kAsyncTpHiddenShare = {m.group(1)}: the fit's median to two decimals, as the CLI says")


if __name__ == "__main__":
    main()
