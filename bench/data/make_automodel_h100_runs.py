#!/usr/bin/env python3
"""Writes bench/data/published-runs-automodel-h100.csv: the DGX-H100 pre-training step times NVIDIA
published for NeMo AutoModel (PyTorch: FSDP2, Transformer Engine, DeepEP), one CSV row per run, in
the schema of bench/data/published-runs-nemo-h100.csv (../shared/reference/published-runs-a100.csv's
columns plus vp, ep, fsdp and config).

  python3 bench/data/make_automodel_h100_runs.py AUTOMODEL_GIT_DIR \
      > bench/data/published-runs-automodel-h100.csv

AUTOMODEL_GIT_DIR is a clone of github.com/NVIDIA-NeMo/Automodel (Apache-2.0); its
docs/performance-summary.md is read at the commit below (the last one before the page moved to
docs/performance-summary.mdx with the same rows). The figure is the table's "Time per Global Step
(s)"; tokens/s and model TFLOP/s per GPU are the same measurement and are left out. The quote is
the row as written. Left out: the two Nemotron V3 rows (hybrid Mamba-Transformer layers, which the
planner cannot express) and the LoRA fine-tuning table (frozen weights, not modelled).

Where the table leaves a knob out, the benchmark config at the commit that published the row says
it (examples/benchmark/configs/*_te_deepep.yaml at 89e3a9fdd for the MoE rows,
examples/llm_pretrain/custom_llama3_1_70b_pretrain_benchmark_8nodes.yaml at 2013a4dd6 for Llama):
activation_checkpointing (every row but GPT-OSS 120B) and the GPT-OSS rows' expert parallelism,
whose EP cell reads "-" beside "DeepEP": 8 for GPT-OSS 20B (its config's ep_size) and 64 for
GPT-OSS 120B (the FSDP degree; its config at 89e3a9fdd says PP 2 / EP 16 for another batch and
the later one PP 1 / EP 64, which matches the table's layout).
"""
import subprocess
import sys

import runs_csv

PAGE = ("e45812012456b0a6fb6b8d02eb9b29e2b5884d5a", "docs/performance-summary.md")
GPU = "H100-80GB SXM (DGX H100; NVLink 4 + NVSwitch, 8x400Gb/s InfiniBand per node)"

# Table name -> (id stem, release of the row (YYMM of the commit that published it), config file,
# or the h/a/a_kv/L/ffn/vocab of a dense model, EP where the table's cell is "-", recomputation).
MODELS = {
    "DeepSeek V3 671B": ("deepseek-v3", "2510", "examples/models/hf/deepseek-v3.json", None, "full"),
    "Kimi K2": ("kimi-k2", "2510", "examples/models/hf/kimi-k2.json", None, "full"),
    "Qwen3 MoE 30B": ("qwen3-30b-a3b", "2510", "examples/models/hf/qwen3-30b-a3b.json", None, "full"),
    "GPT-OSS 20B": ("gpt-oss-20b", "2510", "examples/models/hf/gpt-oss-20b.json", 8, "full"),
    "GPT-OSS 120B": ("gpt-oss-120b", "2510", "examples/models/hf/gpt-oss-120b.json", 64, ""),
    # Llama 3.1 70B (meta-llama/Llama-3.1-70B config.json).
    "Llama3 70B": ("llama3-70b", "2604", (8192, 64, 8, 80, 28672, 128256), None, "full"),
}


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def main():
    git = ["git", "--git-dir", sys.argv[1]]
    text = subprocess.run(git + ["show", f"{PAGE[0]}:{PAGE[1]}"], check=True,
                          capture_output=True, text=True).stdout
    pretraining = text.split("## Pre-Training Performance")[1].split("## Fine-Tuning")[0]
    out = runs_csv.writer()
    for line in pretraining.splitlines():
        if not line.startswith("| ") or line.startswith("| Model"):
            continue
        c = cells(line)
        name = c[0]
        if name not in MODELS:
            print(f"left out: {name}", file=sys.stderr)
            continue
        stem, release, shape, ep_default, recompute = MODELS[name]
        gpus, gbs, mbs, _lbs, _ga, seq, tp, pp, cp, ep, vp, fsdp = c[1:13]
        kernels, step = c[13], c[14]
        ep = ep if ep != "-" else str(ep_default or 1)
        vp = vp if vp != "-" else "1"
        dp = int(gpus) // (int(tp) * int(pp) * int(cp))
        layout = f"p{pp}" + (f"v{vp}" if vp != "1" else "") + (f"c{cp}" if cp != "1" else "")
        layout += f"e{ep}" if ep != "1" else ""
        attention = "; SDPA attention" if name == "Llama3 70B" else ""
        row = dict(
            id=f"automodel_{release}_{stem}_g{gpus}_{layout}_bf16_step",
            source=f"NeMo AutoModel performance summary (DGX-H100, BF16; {kernels}{attention})",
            model=name, seq=seq, micro_batch=mbs, global_batch=gbs, tp=tp, pp=pp, dp=dp, cp=cp,
            vp=vp, ep=ep, fsdp=fsdp, gpus=gpus, gpu=GPU, dtype="bf16", recompute=recompute,
            seq_parallel="no", metric="step_time_s", value=step, unit="s",
            source_repo_or_url=f"github.com/NVIDIA-NeMo/Automodel {PAGE[1]}",
            commit_or_date=PAGE[0], quote=line.strip())
        if isinstance(shape, str):
            row["config"] = shape
        else:
            row.update(zip(("h", "a", "a_kv", "L", "ffn", "vocab"), shape))
        out.writerow(row)


if __name__ == "__main__":
    main()
