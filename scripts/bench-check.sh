#!/usr/bin/env bash
# Guards the CPU path's speed: runs analyze_bench and recommend_bench (5 repetitions each), takes
# each benchmark's fastest repetition (CPU time) and compares it with the fastest in the committed
# bench/results/<bench>.json (written by `make bench`). Fails when one is more than LIMIT times
# its committed figure, naming it and by how much.
#
# The two runs may be on machines of different clocks: the ratio is scaled by the clocks Google
# Benchmark reports (cycles, not seconds, are compared); BENCH_CHECK_RAW=1 compares seconds.
# Run it before a submission that touches core/, service/ or server/. It is a script, not a test:
# shared machines are noisy, so the limit is wide and the minimum of 5 is used.
#
# usage: scripts/bench-check.sh [BUILD_DIR]     env: BENCH_CHECK_LIMIT (default 1.5)
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
limit=${BENCH_CHECK_LIMIT:-1.5}
raw=${BENCH_CHECK_RAW:-0}
if [[ ${1:-} == -h || ${1:-} == --help ]]; then sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
cmake --build "$build" --target analyze_bench recommend_bench >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for b in analyze_bench recommend_bench; do
  committed=bench/results/$b.json
  if [[ ! -s $committed ]]; then
    echo "bench-check: $committed is missing; run 'make bench' and commit bench/results/" >&2
    exit 2
  fi
  "$build/bench/$b" --benchmark_repetitions=5 --benchmark_out="$tmp/$b.json" \
    --benchmark_out_format=json >/dev/null 2>"$tmp/$b.err" || {
    cat "$tmp/$b.err" >&2
    exit 2
  }
  python3 - "$committed" "$tmp/$b.json" "$limit" "$raw" <<'PY' || status=1
import json, sys

committed_path, now_path, limit, raw = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1"


def load(path):
    with open(path) as f:
        doc = json.load(f)
    best = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
        t = b["cpu_time"] * scale
        name = b["run_name"]
        best[name] = min(best.get(name, t), t)
    return best, float(doc["context"].get("mhz_per_cpu", 0))


before, mhz_before = load(committed_path)
now, mhz_now = load(now_path)
clock = 1.0 if raw or mhz_before <= 0 or mhz_now <= 0 else mhz_now / mhz_before
print(f"{committed_path}: committed at {mhz_before:.0f} MHz, now {mhz_now:.0f} MHz "
      f"({'seconds' if clock == 1.0 else 'cycles'} compared), limit {limit:g}x")
failed = []
for name in sorted(set(before) | set(now)):
    if name not in now:
        print(f"  FAIL  {name}: in the committed results, not run now")
        failed.append(name)
        continue
    if name not in before:
        print(f"  new   {name}: {now[name] * 1e6:.1f} us (no committed figure)")
        continue
    ratio = now[name] / before[name] * clock
    verdict = "FAIL" if ratio > limit else "ok"
    print(f"  {verdict:5} {name}: {before[name] * 1e6:.1f} us -> {now[name] * 1e6:.1f} us, "
          f"{ratio:.2f}x the committed figure")
    if ratio > limit:
        failed.append(f"{name} ({ratio:.2f}x)")
if failed:
    print(f"bench-check: slower than {limit:g}x the committed figure: " + ", ".join(failed),
          file=sys.stderr)
    sys.exit(1)
PY
done
exit $status
