#!/usr/bin/env bash
# run_on_device.sh [PART ...]: the GPU plan (build here, bench/gpu/make_bundle.sh, then run this
# there with .devbundle carried). PARTs, in order (default: all of them, in one call):
#   tests      the `gpu` tests (cuBLASLt engine and cuDNN attention behaviour, with the device's
#              own libcudnn.so.9 from its PyTorch wheels on the library path), cudnn_sdpa_test;
#   families   today's layers whole, first (issue 51): MoE blocks (Mixtral with balanced and
#              Zipf-skewed routing, Qwen3-30B-A3B's 128 experts: router, top-k, dispatch, grouped
#              experts, combine), local attention (Mistral-7B at 8192 tokens under its 4096 window,
#              Gemma-3-1B's local/global stack) and latent attention (DeepSeek-V2-Lite: MLA and its
#              MoE), each twice through a cache-less server (`wavecrest time --layers`), judged
#              by compare_families.py (families.txt: every layer MEASURED, re-run within 2%, and
#              the planner's price against each); torch's MoE block (torch_moe_block.py, the moe
#              part) runs right after it as the MoE reference. No PyTorch reference of windowed
#              or latent attention is in the plan yet (torch's SDPA takes a window only as a mask,
#              off its flash kernels);
#              These engine paths (grouped expert GEMMs, the routing kernels, cuDNN's windowed and
#              latent attention graphs) are compiled and host-tested but have not run on a GPU yet;
#   gemms      compare_torch.sh (the whole list in one process per run: wavecrest-worker bench,
#              torch.matmul in a CUDA graph, the worker again; same device, same method; raw
#              sample streams kept), then the sweeps part;
#   sweeps     the whole list three times in one process each (sweep.txt: the cost per GEMM with
#              the process, and each GEMM's spread across the three runs), then three more with a
#              quarter of the default sampling budget (--max_seconds 0.5: sweep-quick.txt) to say
#              what a cheaper sweep costs in agreement, and three by a plain PyTorch loop
#              (torch_loop.py: torch-loop.txt), the reference for both;
#   attention  fused attention alone (torch_attention.py: torch's cuDNN SDPA at the published
#              attention rows' shapes, and causal at 32k-128k tokens, attention-long.csv: issue
#              36's long sequences), scored against the model's predictions by `wavecrest
#              calibrate --attention_check` (attention-check.txt, attention-long-check.txt; the
#              CSVs also refit them); and PyTorch's FlashAttention-2 backend at TorchTitan's
#              Llama 3.1 shapes (attention-flash2.csv: the planner's flash2 class's rate);
#   fp8        what FP8's split accumulator (Transformer Engine's dgrad and wgrad) costs against
#              fast accumulation (its forward), the list's m,n,k as TN GEMMs timed interleaved by
#              torch._scaled_mm (torch_fp8_accum.py: fp8-accum.csv and .txt, the median ratio);
#              a figure for the planner's FP8 backward, not a target; and the row-scaled
#              kernel (torchao's rowwise forward) against tensorwise, --fp8-recipe rowwise's rate;
#   mamba      a hybrid's Mamba-2 scan (torch_ssd.py: Nemotron 3 Nano's mixer at 8192 tokens, a
#              PyTorch chunked scan forward and backward beside its four batched products alone;
#              mamba-ssd.csv and .txt, with the planner's price of the products): what the
#              planner's hybrid pricing has not measured; a figure, not a target;
#   moe        one rank's MoE block, forward and backward, in PyTorch eager beside its GEMMs alone
#              (torch_moe_block.py: Qwen3-30B-A3B on EP 16 and GPT-OSS-120B on EP 8, 4096 and
#              16384 tokens; moe-block.csv and .txt): what of the block is not its GEMMs and
#              whether it grows with the tokens (issue 36's MoE diagnostic); a figure, not a target;
#   layers     layers timed whole (`wavecrest time --layers`: Pythia-2.8B with unfused
#              attention, as in the paper, Llama-3-8B with fused attention, and Megatron-LM's GPT
#              1.7B of its H100 weak-scaling table, bench/gpu/models/, a small layer the planner
#              prices too fast in published runs) through a cache-less server, twice, with
#              PyTorch's same layers (torch_layers.py) between the runs, compared by
#              compare_layers.py (within 5% of torch; re-run within 1%; and measured against the
#              planner's sum of the layer's parts, a figure for issue 36);
#   sustained  the GEMMs of a Llama-3-8B training layer back to back in a CUDA graph for 30 s after
#              5 s idle, nvidia-smi sampling clocks and power beside them (torch_sustained.py:
#              sustained.csv, sustained-smi.csv, sustained.txt): the first 0.3 s's rate against
#              the last 10 s's, the measurement behind the planner's sustained-load stretch
#              (kH100SustainedGemmStretch, fitted to published runs); a figure, not a target;
#   recommend  measured recommendations for Pythia-2.8B (unfused attention, as in the paper),
#              Llama-3-8B and GPT-2 through a real server with `--workers auto` and default
#              flags, on two fresh caches A and B (a server each): cold on both, then cached on A,
#              timed (recommend-times.txt), the two cold answers compared by recommend_rerun.py
#              (recommend-rerun-NAME.txt: the same verdict? B's speed-ups within A's bands?),
#              beside the predicted ones;
#   summary    bench/gpu/summary.py: PASS / FAIL / NONE against each target, with its figure.
# On an H100 each part takes under 9 minutes, so a device call can run one or a few: results
# accumulate in $WAVECREST_GPU_OUT (default /tmp/wavecrest-gpu, which outlives calls while the
# machine stays warm), and each call packs the whole of it into $OUT/wavecrest-gpu.tar.gz when
# $OUT is set. The summary part (and `all`) prints the verdicts last.
set -uo pipefail
out=${WAVECREST_GPU_OUT:-/tmp/wavecrest-gpu}
mkdir -p "$out"
R=.devbundle/run
parts=("$@")
(( ${#parts[@]} )) || parts=(all)
for p in "${parts[@]}"; do
  case $p in
    all|tests|families|moe|mamba|gemms|sweeps|attention|fp8|layers|sustained|recommend|summary) ;;
    *) echo "run_on_device.sh: unknown part '$p': all, tests, families, moe, mamba, gemms," \
         "sweeps, attention, fp8, layers, sustained, recommend, summary" >&2
       exit 2 ;;
  esac
done
want() { [[ " ${parts[*]} " == *" all "* || " ${parts[*]} " == *" $1 "* ]]; }
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
# cuDNN is not carried: the worker loads the device's own libcudnn.so.9 (PyTorch's wheels carry
# it, under nvidia/cudnn/lib or torch/lib), found here and put on the library path.
cudnn_dir=$(python3 - 2>/dev/null <<'PY'
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
try:
    import torch
    roots.insert(0, os.path.dirname(torch.__file__))
except ImportError:
    pass
for root in roots:
    hits = sorted(glob.glob(os.path.join(root, "**", "libcudnn.so.9*"), recursive=True))
    if hits:
        print(os.path.dirname(hits[0]))
        break
PY
)
[[ -n $cudnn_dir ]] && export LD_LIBRARY_PATH=$cudnn_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
want tests && echo "cudnn from: ${cudnn_dir:-none found}" > "$out/cudnn.txt"
"$R" wavecrest-worker devices > "$out/devices.json" 2>&1
kind=$(sed -nE 's/.*"catalog_name":"([a-z0-9-]+)".*/\1/p' "$out/devices.json" | head -n 1)
kind=${kind:-h100-sxm}

if want tests; then
  "$R" gpu_test --gtest_output=json:"$out/gpu_test.json" > "$out/gpu_test.txt" 2>&1
  echo "gpu_test exit $?" >> "$out/gpu_test.txt"
  "$R" cudnn_sdpa_test >> "$out/cudnn.txt" 2>&1
  echo "cudnn_sdpa_test exit $?" >> "$out/cudnn.txt"
fi

# Starts a server (flags after the port file); sets $server and $port once it measures. The
# port file is removed first: a previous part's file named a server that is gone.
start_server() {
  local ports=$1
  shift
  rm -f "$ports"
  "$R" wavecrest-server --listen=127.0.0.1:0 --metrics_listen=127.0.0.1:0 --port_file="$ports" \
    --workers=auto "$@" 2>> "$out/server.log" &
  server=$!
  for _ in $(seq 600); do
    [[ -s $ports ]] && break
    kill -0 $server 2>/dev/null || { echo "start_server: the server exited (server.log)" >&2; return 1; }
    sleep 0.1
  done
  port=$(sed -E 's/.*"grpc": ([0-9]+).*/\1/' "$ports")
  for _ in $(seq 600); do
    "$R" wavecrest health --server=127.0.0.1:$port 2>/dev/null | grep -q "measure: SERVING" && break
    sleep 0.1
  done
}

# Today's layers first: MoE blocks, local and latent attention, twice each (no cache), then
# torch's MoE block (the moe part) as their reference.
families=("mixtral-8x7b" "mixtral-8x7b --routing zipf:1.2" "qwen3-30b-a3b" "mistral-7b --seq 8192"
          "gemma-3-1b" "deepseek-v2-lite")
if want families; then
start_server "$out/ports-families.json"
for m in "${families[@]}"; do
  name=${m%% *}
  tag=$(echo "$m" | tr -c 'a-zA-Z0-9.\n-' '_')
  for run in 1 2; do
    "$R" wavecrest time --server=127.0.0.1:$port --gpu "$kind" --layers --format json \
      --model "examples/models/hf/$name.json" ${m#"$name"} --deadline 300 \
      > "$out/families-$tag-$run.json" 2> "$out/families-$tag-$run.log"
  done
done
kill -TERM $server; wait $server
python3 bench/gpu/compare_families.py "$out" > "$out/families.txt" 2>&1
fi
if want families || want moe; then
  python3 bench/gpu/torch_moe_block.py "$out/moe-block.csv" > "$out/moe-block.txt" 2>&1
fi
if want mamba; then
  # A hybrid's Mamba-2 scan (Nemotron 3 Nano's mixer): PyTorch's chunked scan and its four
  # batched products, beside the planner's price of the products for one layer.
  python3 bench/gpu/torch_ssd.py "$out/mamba-ssd.csv" > "$out/mamba-ssd.txt" 2>&1
  "$R" wavecrest analyze --model examples/models/hf/nemotron-3-nano-30b-a3b.json \
    --gpu "$kind" --seq 8192 --format json \
    2>/dev/null | python3 -c '
import json, sys
j = json.load(sys.stdin)
t = sum(g["time_s"] * int(g["gemm"]["count"]) for g in j["gemms"]
        if g["gemm"]["name"].startswith("ssd_"))
print(f"planner: the scan products of one layer, forward and backward, {t / 23 * 1e3:.3f} ms")
' >> "$out/mamba-ssd.txt" 2>&1
fi

if want gemms; then
  rm -rf "$out/compare"
  WAVECREST_WORKER="$R wavecrest-worker" bash bench/gpu/compare_torch.sh "$out/compare" \
    > "$out/compare.log" 2>&1
fi
# The whole list in one process, three times: what a sweep (a measured Recommend's GEMMs) costs
# per GEMM with its process, and whether three sweeps agree (each GEMM within 1%). NAME CMD...:
# CMD is run with the run's JSON path appended.
sweeps() {
  local name=$1
  shift
  for run in 1 2 3; do
    local t0 t1
    t0=$(date +%s.%N)
    "$@" "$out/$name-$run.json" > "$out/$name-$run.txt" 2>&1
    t1=$(date +%s.%N)
    python3 - "$out/$name-$run.json" "$t0" "$t1" <<'PY'
import json, sys
path, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
try:
    doc = json.load(open(path))
except (OSError, ValueError):
    sys.exit(0)  # no JSON: compare.py says so
doc["process_wall_s"] = t1 - t0  # the process's whole life: start, device, every GEMM, exit
json.dump(doc, open(path, "w"))
PY
  done
  python3 bench/gpu/compare.py --sweep "$out/$name-1.json" "$out/$name-2.json" \
    "$out/$name-3.json" > "$out/$name.txt" 2>&1
}
bench_sweep() {  # SAMPLES_LOG FLAGS... JSON: one wavecrest-worker sweep of the list
  local log=$1
  shift
  local json=${*: -1}
  "$R" wavecrest-worker bench --device 0 --gemms bench/gpu/shapes.csv --dtype bf16 \
    "${@:1:$#-1}" --json "$json" --samples_log "$log"
}
if want gemms || want sweeps; then
  sweeps sweep bench_sweep "$out/sweep-samples.jsonl"
  sweeps sweep-quick bench_sweep "$out/sweep-quick-samples.jsonl" --max_seconds 0.5
  # The same list by a plain PyTorch loop, three times: the reference for cost and agreement.
  sweeps torch-loop python3 bench/gpu/torch_loop.py bench/gpu/shapes.csv
fi
if want attention; then
  python3 bench/gpu/torch_attention.py --gpu "$kind" --out "$out/attention-device.csv" \
    > "$out/attention-device.log" 2>&1
  "$R" wavecrest calibrate --fit= --attention_check "$out/attention-device.csv" \
    > "$out/attention-check.txt" 2>&1
  python3 bench/gpu/torch_attention.py --gpu "$kind" --out "$out/attention-long.csv" \
    --source device-torch-sdpa-cudnn-long bench/gpu/attention-long.csv \
    > "$out/attention-long.log" 2>&1
  "$R" wavecrest calibrate --fit= --attention_check "$out/attention-long.csv" \
    > "$out/attention-long-check.txt" 2>&1
  # PyTorch's FlashAttention-2 backend at TorchTitan's Llama 3.1 shapes (8k-32k, head dim 128):
  # the rate of the planner's flash2 class, which TorchTitan's published runs are priced at.
  python3 bench/gpu/torch_attention.py --gpu "$kind" --out "$out/attention-flash2.csv" \
    --source device-torch-sdpa-flash2 --backend flash bench/gpu/attention-torchtitan.csv \
    > "$out/attention-flash2.log" 2>&1
fi
if want fp8; then
  python3 bench/gpu/torch_fp8_accum.py bench/gpu/shapes.csv "$out/fp8-accum.csv" \
    > "$out/fp8-accum.txt" 2>&1
fi

# Layers whole, twice, with torch between (no cache: the second run measures again).
if want layers; then
start_server "$out/ports-layers.json"
for m in "pythia-2.8b --attention unfused" "llama-3-8b" "megatron-gpt-1.7b"; do
  name=${m%% *}
  model=examples/models/$name.json
  [[ -f $model ]] || model=bench/gpu/models/$name.json
  for run in 1 2; do
    "$R" wavecrest time --server=127.0.0.1:$port --gpu "$kind" --layers --format json \
      --model "$model" ${m#"$name"} --deadline 600 \
      > "$out/layers-$name-$run.json" 2> "$out/layers-$name-$run.log"
    if [[ $run == 1 ]]; then
      python3 bench/gpu/torch_layers.py "$out/layers-$name-1.json" "$out/torch-layers-$name.json" \
        > "$out/torch-layers-$name.log" 2>&1
    fi
  done
  python3 bench/gpu/compare_layers.py "$out/layers-$name-1.json" "$out/layers-$name-2.json" \
    "$out/torch-layers-$name.json" > "$out/compare-layers-$name.txt" 2>&1
done
kill -TERM $server; wait $server
fi

if want sustained; then
  python3 bench/gpu/torch_sustained.py "$out/sustained" 30 > "$out/sustained.log" 2>&1
fi

# Measured Recommend with the default flags (its 60 s GPU budget, the CLI's deadline from it) on
# two fresh caches, A and B, a server each: cold on both, cached on A. Seconds and exit codes go
# to recommend-times.txt ("NAME cold-a|cold-b|cached-a SECONDS EXIT") for the summary, and the
# two cold answers to recommend_rerun.py (recommend-rerun-NAME.txt).
recommend_models=("pythia-2.8b --attention unfused" "llama-3-8b" "gpt2-small")
time_recommend() {  # NAME MODE FILE ARGS...: one measured Recommend, timed
  local name=$1 mode=$2 file=$3
  shift 3
  local t0 t1 code
  t0=$(date +%s.%N)
  "$R" wavecrest recommend --server=127.0.0.1:$port "$@" --mode measured --format json \
    > "$file" 2>&1
  code=$?
  t1=$(date +%s.%N)
  echo "$name $mode $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') $code" \
    >> "$out/recommend-times.txt"
}
if want recommend; then
rm -f "$out"/cache-*.db "$out/recommend-times.txt"
for cache in a b; do
  start_server "$out/ports-$cache.json" --store="$out/cache-$cache.db"
  [[ $cache == a ]] && "$R" wavecrest devices --server=127.0.0.1:$port \
    > "$out/server-devices.txt" 2>&1
  for m in "${recommend_models[@]}"; do
    name=${m%% *}
    args=(--model "examples/models/$name.json" --gpu "$kind" --top 10 ${m#"$name"})
    time_recommend "$name" "cold-$cache" "$out/recommend-$name-$cache.json" "${args[@]}"
    if [[ $cache == a ]]; then
      time_recommend "$name" cached-a "$out/recommend-$name-cached.json" "${args[@]}"
      "$R" wavecrest recommend "${args[@]}" --mode predicted --format json \
        > "$out/recommend-$name-predicted.json" 2>&1
    fi
  done
  kill -TERM $server; wait $server
done
for m in "${recommend_models[@]}"; do
  name=${m%% *}
  python3 bench/gpu/recommend_rerun.py "$name" "$out/recommend-$name-a.json" \
    "$out/recommend-$name-b.json" > "$out/recommend-rerun-$name.txt" 2>&1
done
fi

pack() {
  [[ -n ${OUT:-} && -d ${OUT:-} ]] || return 0
  tar -czf "$OUT/wavecrest-gpu.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
}
if ! want summary; then
  pack
  echo "parts done: ${parts[*]} (results in $out; the summary part judges them)"
  exit 0
fi
echo "== device"; head -n 12 "$out/nvidia-smi.txt"
echo "== gpu tests"; grep -E "PASSED|FAILED|SKIPPED|exit" "$out/gpu_test.txt" | tail -n 8
echo "== today's layers whole (MoE, local, latent attention)"; cat "$out/families.txt" 2>/dev/null
tail -n 6 "$out/moe-block.txt" 2>/dev/null
echo "== cudnn"; grep -E "cudnn from|PASSED|FAILED|SKIPPED|exit" "$out/cudnn.txt" | tail -n 4
echo "== compare"; tail -n 8 "$out/compare/compare.txt" 2>/dev/null || tail -n 20 "$out/compare.log"
echo "== sweeps (default, a quarter of its budget, a plain torch loop)"
grep -hE "^(sweep|time per|cost per)" "$out/sweep.txt" "$out/sweep-quick.txt" \
  "$out/torch-loop.txt"
echo "== fused attention: the model against this device"
tail -n 1 "$out/attention-device.log"
grep -E "device-torch-sdpa-cudnn" "$out/attention-check.txt" || tail -n 5 "$out/attention-check.txt"
for name in pythia-2.8b llama-3-8b; do
  echo "== layers $name"; cat "$out/compare-layers-$name.txt" 2>/dev/null | cut -c1-220
done
for name in pythia-2.8b llama-3-8b gpt2-small; do
  echo "== recommend $name (measured, fresh caches A and B)"
  head -n 12 "$out/recommend-rerun-$name.txt" 2>/dev/null
done
echo "== targets"
python3 bench/gpu/summary.py "$out"
pack
