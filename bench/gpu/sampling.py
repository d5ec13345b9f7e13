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
