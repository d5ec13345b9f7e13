#!/usr/bin/env bash
# Guards the CPU path's speed: runs analyze_bench and recommend_bench (5 repetitions each), takes
# each benchmark's fastest repetition (CPU time) and compares it with the fastest in the committed
# bench/results/<bench>.json (written by `make bench`). Fails when one is more than LIMIT times
# its committed figure, naming it and by how much.
#
# Shared machines have slow spells that last from seconds to minutes, and two machines differ:
# each binary also runs BM_Reference (bench/reference.h, no wavecrest code), and a benchmark is
# compared as its time over the reference's in the same run, now and when committed. A benchmark
# over the limit is run again, twice, on its own beside the reference, and fails only if its best
# ratio is still over. Without a committed reference, the clocks Google Benchmark reports scale
# the ratio; BENCH_CHECK_RAW=1 compares seconds. Run it before a submission that touches core/,
# service/ or server/. It is a script, not a test.
#
# usage: scripts/bench-check.sh [BUILD_DIR]     env: BENCH_CHECK_LIMIT (default 1.5)
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
build=${1:-build}
cd "$(dirname "$0")/.."
cmake --build "$build" --target analyze_bench recommend_bench >/dev/null
exec python3 - "$build" "${BENCH_CHECK_LIMIT:-1.5}" "${BENCH_CHECK_RAW:-0}" <<'PY'
import json, os, re, subprocess, sys, tempfile

build, limit, raw = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "1"
UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def best_of(doc, into):
    """Fastest CPU time of each benchmark's repetitions in a Google Benchmark JSON document."""
    for b in doc["benchmarks"]:
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        t = b["cpu_time"] * UNIT[b.get("time_unit", "ns")]
        into[b["run_name"]] = min(into.get(b["run_name"], t), t)
    return float(doc["context"].get("mhz_per_cpu", 0))


def run(binary, name_filter=None):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        cmd = [binary, "--benchmark_repetitions=5", f"--benchmark_out={out}",
               "--benchmark_out_format=json"]
        if name_filter:
            cmd.append(f"--benchmark_filter=^({name_filter})$")
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            sys.exit(f"bench-check: {binary} failed:\n{p.stderr}")
        with open(out) as f:
            return json.load(f)


REF = "BM_Reference"
status = 0
for bench in ("analyze_bench", "recommend_bench"):
    committed = f"bench/results/{bench}.json"
    if not os.path.exists(committed):
        sys.exit(f"bench-check: {committed} is missing; run 'make bench' and commit bench/results/")
    before, now = {}, {}
    with open(committed) as f:
        mhz_before = best_of(json.load(f), before)
    binary = os.path.join(build, "bench", bench)
    mhz_now = best_of(run(binary), now)
    by_reference = REF in before and REF in now and not raw
    by_cycles = not by_reference and not raw and mhz_before > 0 and mhz_now > 0
    clock = mhz_now / mhz_before if by_cycles else 1.0
    # Each benchmark's time in units of the reference's, this run (the best run wins).
    best_ratio = {n: now[n] / now[REF] for n in now if by_reference and n != REF}

    def ratio(name):
        if by_reference:
            return best_ratio[name] / (before[name] / before[REF])
        return now[name] / before[name] * clock

    # A slow spell of the machine, or the code? Run what is over the limit again on its own.
    rerun = [n for n in now if n in before and n != REF and ratio(n) > limit]
    for name in rerun:
        for _ in range(2):
            again = {}
            best_of(run(binary, f"{re.escape(name)}|{REF}" if by_reference else re.escape(name)), again)
            if by_reference and name in again and REF in again:
                best_ratio[name] = min(best_ratio[name], again[name] / again[REF])
            now[name] = min(now[name], again.get(name, now[name]))
    basis = ("the reference workload" if by_reference else
             "cycles" if by_cycles else "seconds")
    print(f"{committed}: committed at {mhz_before:.0f} MHz, now {mhz_now:.0f} MHz "
          f"({basis} compared), limit {limit:g}x")
    failed = []
    for name in sorted(set(before) | set(now)):
        if name == REF:
            print(f"  ref   {name}: {before.get(name, 0) * 1e6:.1f} us -> {now[name] * 1e6:.1f} us "
                  f"(the machine now runs at {before.get(name, now[name]) / now[name]:.2f}x its "
                  f"committed speed)")
            continue
        if name not in now:
            print(f"  FAIL  {name}: in the committed results, not run now")
            failed.append(name)
            continue
        if name not in before:
            print(f"  new   {name}: {now[name] * 1e6:.1f} us (no committed figure)")
            continue
        r = ratio(name)
        again = " (best of 3 runs)" if name in rerun else ""
        print(f"  {'FAIL' if r > limit else 'ok':5} {name}: {before[name] * 1e6:.1f} us -> "
              f"{now[name] * 1e6:.1f} us, {r:.2f}x the committed figure{again}")
        if r > limit:
            failed.append(f"{name} ({r:.2f}x)")
    if failed:
        print(f"bench-check: slower than {limit:g}x the committed figure: " + ", ".join(failed),
              file=sys.stderr)
        status = 1
sys.exit(status)
PY
