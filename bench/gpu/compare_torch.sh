#!/usr/bin/env bash
# compare_torch.sh [OUT_DIR]: on a GPU machine, times bench/gpu/shapes.csv with `wavecrest-worker
# bench` (twice, for repeatability) and with PyTorch (torch_matmul.py), one after the other on the
# same device in one command, and prints the comparison (compare.py). Raw JSON, the device's
# identity (nvidia-smi) and logs go to OUT_DIR (default $OUT, else bench/results/gpu).
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
for run in 1 2; do
  "${worker[@]}" bench --device 0 --gemms "$shapes" --dtype bf16 --json "$out/wavecrest-$run.json" \
    > "$out/wavecrest-$run.txt" 2> "$out/wavecrest-$run.log"
  tail -n 3 "$out/wavecrest-$run.txt"
done
python3 "$here/torch_matmul.py" --gemms "$shapes" --dtype bf16 --json "$out/torch.json" \
  > "$out/torch.log" 2>&1
python3 "$here/compare.py" "$out/wavecrest-1.json" "$out/wavecrest-2.json" "$out/torch.json" \
  | tee "$out/compare.txt"
