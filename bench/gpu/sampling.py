"""How the bench/gpu PyTorch scripts time a piece of GPU work, the same way for each of them (and
as the worker does): about 200 ms of warm-up, then samples, each behind a blocking kernel
(torch.cuda._sleep) so that the host has queued the work before the start event runs, timed by
CUDA events, until (p90 - p10) / median is under the target after at least 300 ms sampled (or 30
samples' worth), or the budget is spent. torch is imported by the caller; nothing here needs it
until sample() runs."""
import math
import time


def percentile(v, q):
    s = sorted(v)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def sample(run, target=0.01, budget=2.0, sleep_cycles=100000):
    """Times run() on the current CUDA stream; returns median, p10, p90, count and spread."""
    import torch
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.time()
    while time.time() - t0 < 0.2:
        run()
        torch.cuda.synchronize()
    samples, sampled, t0 = [], 0.0, time.time()
    while True:
        torch.cuda._sleep(sleep_cycles)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        v = start.elapsed_time(stop) * 1e-3
        samples.append(v)
        sampled += v
        med = percentile(samples, 0.5)
        spread = (percentile(samples, 0.9) - percentile(samples, 0.1)) / med
        if len(samples) >= 10 and sampled >= min(0.3, 30 * med) and spread <= target:
            break
        if time.time() - t0 > budget and len(samples) >= 3:
            break
    return {"median_s": med, "p10_s": percentile(samples, 0.1), "p90_s": percentile(samples, 0.9),
            "samples": len(samples), "relative_spread": spread}


def whole_against_parts(path, cases, header):
    """Times each case's two closures (the whole, then its parts alone), writes a CSV row per case
    to `path` (its label fields, both medians, the share of the whole beyond the parts, the sample
    counts, the device) and prints a line each. `cases` yields (label fields, build) where build()
    returns the two closures; `header` names the CSV's columns: the label fields', the whole's,
    the parts', the share's, the two sample counts' and the device's. A case that fails is reported and the rest go on.
    Returns how many cases were timed."""
    import csv
    import sys
    import torch
    device = f"{torch.cuda.get_device_name(0)} torch {torch.__version__}"
    written = 0
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for label, build in cases:
            try:
                whole, parts = build()
                a = sample(whole, budget=2.0, sleep_cycles=1000000)
                b = sample(parts, budget=2.0, sleep_cycles=1000000)
            except Exception as e:  # reported, the rest go on
                print(f"{' '.join(map(str, label))}: {type(e).__name__}: {e}", file=sys.stderr)
                continue
            finally:
                torch.cuda.empty_cache()
            share = 1 - b["median_s"] / a["median_s"]
            w.writerow(list(label) + [f"{a['median_s']:.6e}", f"{b['median_s']:.6e}",
                                      f"{share:.4f}", a["samples"], b["samples"],
                                      device.replace(",", ";")])
            f.flush()
            written += 1
            print(f"{' '.join(map(str, label)):<30} {a['median_s'] * 1e3:>9.3f} ms "
                  f"{b['median_s'] * 1e3:>9.3f} ms {100 * share:>6.1f}% beyond the parts",
                  flush=True)
    print(f"{written} timed into {path} ({device})")
    return written
