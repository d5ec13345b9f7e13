#!/usr/bin/env bash
# compare_torch.sh [OUT_DIR]: on a GPU machine, times bench/gpu/shapes.csv with `wavecrest-worker
# bench` (twice, for repeatability) and with PyTorch (torch_matmul.py) on the same device in one
# command, and prints the comparison (compare.py). The tools are interleaved shape by shape, and
# which goes first alternates, so that neither always meets the hotter GPU. Raw JSON per shape,
# the device's identity (nvidia-smi) and logs go to OUT_DIR (default $OUT, else
# bench/results/gpu).
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
i=0
grep -vE '^\s*(#|m,|$)' "$shapes" | while IFS= read -r row; do
  i=$((i + 1))
  dir=$out/shape-$(printf %03d $i)
  mkdir -p "$dir"
  echo "$row" > "$dir/shape.csv"
  wc() {
    # --samples_log: the raw sample streams, for `wavecrest-worker replay` of the stopping rule.
    "${worker[@]}" bench --device 0 --gemms "$dir/shape.csv" --dtype bf16 --json "$dir/wavecrest-$1.json" \
      --samples_log "$out/samples.jsonl" \
      >> "$dir/wavecrest.txt" 2>> "$dir/wavecrest.log" || echo "wavecrest run $1 failed: $row"
  }
  tc() {
    python3 "$here/torch_matmul.py" --gemms "$dir/shape.csv" --dtype bf16 --json "$dir/torch.json" \
      >> "$dir/torch.log" 2>&1 || echo "torch failed: $row"
  }
  if (( i % 2 )); then wc 1; tc; wc 2; else tc; wc 1; wc 2; fi
  echo "[$i] $row done"
done
python3 "$here/compare.py" "$out" | tee "$out/compare.txt"
