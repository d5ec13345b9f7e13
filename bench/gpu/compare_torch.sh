#!/usr/bin/env bash
# compare_torch.sh [OUT_DIR]: on a GPU machine, times bench/gpu/shapes.csv with `wavecrest-worker
# bench` (twice, for repeatability) and with PyTorch (torch_matmul.py) on the same device in one
# command, and prints the comparison (compare.py). Each tool takes the whole list in one process
# (three processes, where one per shape and tool spent most of a device call starting them: 20 of
# 31 shapes in 170 s), torch between the worker's two runs so that neither tool always meets the
# cooler GPU. The three JSON files, the device's identity (nvidia-smi) and logs go to OUT_DIR
# (default $OUT, else bench/results/gpu).
#
# The worker comes from WAVECREST_WORKER (a command), else .devbundle/run wavecrest-worker (see
# shared/tools/device-bundle.sh), else build/gpu_worker/wavecrest-worker.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${OUT:-bench/results/gpu}}
mkdir -p "$out"
if [[ -n ${WAVECREST_WORKER:-} ]]; then
  worker=($WAVECREST_WORKER)
elif [[ -x .devbundle/run ]]; then
  worker=(.devbundle/run wavecrest-worker)
else
  worker=(build/gpu_worker/wavecrest-worker)
fi
shapes=$here/shapes.csv

{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,pci.bus_id,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv || true
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} > "$out/device.txt" 2>&1
cat "$out/device.txt"

"${worker[@]}" devices | tee "$out/devices.json"
# --samples_log: the raw sample streams, for `wavecrest-worker replay` of the stopping rule.
worker_run() {
  "${worker[@]}" bench --device 0 --gemms "$shapes" --dtype bf16 --json "$out/wavecrest-$1.json" \
    --samples_log "$out/samples.jsonl" > "$out/wavecrest-$1.txt" 2> "$out/wavecrest-$1.log" ||
    echo "wavecrest run $1 failed (see $out/wavecrest-$1.log)"
}
torch_run() {
  python3 "$here/torch_matmul.py" --gemms "$shapes" --dtype bf16 --json "$out/torch.json" \
    > "$out/torch.log" 2>&1 || echo "torch failed (see $out/torch.log)"
}
worker_run 1
torch_run
worker_run 2
python3 "$here/compare.py" "$out/wavecrest-1.json" "$out/wavecrest-2.json" "$out/torch.json" |
  tee "$out/compare.txt"
