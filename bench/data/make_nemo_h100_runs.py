#!/usr/bin/env python3
"""Writes bench/data/published-runs-nemo-h100.csv: NVIDIA's published DGX-H100 pre-training
throughput (tokens/s per GPU) from NeMo's and Megatron-Bridge's performance summaries, and the
model TFLOP/s per GPU of NeMo's long-sequence page (Llama 2 7B with context parallelism, 4k to 1M
tokens) and the step times of Megatron-Bridge's MoE overlap and expert-parallel overlap skills
(Qwen3-30B-A3B with the expert all-to-all overlap off and on, HybridEP and alltoall), one CSV row per figure, in the schema of ../shared/reference/published-runs-a100.csv plus the columns these
runs need: vp, ep, fsdp (the table's), config (a model file of examples/models when the model is
more than the h/a/L/ffn/vocab columns say: MoE, MLA, local attention).

  python3 bench/data/make_nemo_h100_runs.py NEMO_GIT_DIR MEGATRON_BRIDGE_GIT_DIR \
      > bench/data/published-runs-nemo-h100.csv

NEMO_GIT_DIR is a clone of github.com/NVIDIA/NeMo, MEGATRON_BRIDGE_GIT_DIR of
github.com/NVIDIA-NeMo/Megatron-Bridge (both Apache-2.0); the pages are read at the commits below.
Every value is copied from a table row (the first figure where a cell holds two, "338 (330)": the
other quantisation granularity); the quote is the row as written. Only DGX-H100 pre-training rows;
model TFLOP/s per GPU is left out (it is the same measurement times the publisher's FLOP count).
Rows of models the planner cannot express would be left out and listed on stderr (LEFT_OUT: none
today; Nemotron 3 Nano's hybrid Mamba-Transformer layers are priced since hybrid_pattern).
"""
import re
import subprocess
import sys

import runs_csv

NEMO = ("8e3d65dcfe3504689bfc5b6e67d502780aacad41", "docs/source/performance/performance_summary.md")
BRIDGE = ("067f987df03b8355b03192d88d70f1709fedf51a", "docs/performance-summary-archive.md")
LONG = ("19fadb67b09ba94c55094d34df119d6f9c565068",
        "docs/source/performance/performance_long_sequence.md")
# Megatron-Bridge's MoE overlap skill: a controlled H100 comparison of Qwen3-30B-A3B with the
# expert all-to-all overlap off and on (its "HybridEP production-shape validation" table, added by
# 7ded17dae, 2026-07-25), read at the archive's commit.
OVERLAP = (BRIDGE[0], "skills/nemo-mbridge-perf-moe-comm-overlap/SKILL.md")
# Megatron-Bridge's expert-parallel overlap skill: the same model's plain A/B of the overlap with
# Megatron-Core's alltoall dispatcher (its "Correctness-First alltoall Benchmark", measured
# 2026-05-18 per docs/training/communication-overlap.md of 750d0d322), read at the same commit.
EP_OVERLAP = (BRIDGE[0], "skills/nemo-mbridge-perf-expert-parallel-overlap/SKILL.md")

# Shapes: NeMo's model configs (nemo/collections/llm/gpt/model/{base,llama,nemotron}.py) and the
# models' Hugging Face config.json files; family picks what bench/published_runs assumes
# (llama: SwiGLU, RMSNorm, no biases; gpt3: GELU, LayerNorm, biases, learned positions; nemotron:
# squared-ReLU MLP (a GELU MLP's GEMMs), LayerNorm, no biases, rotary positions).
LLAMA3 = dict(a_kv=8, vocab=128256, family="llama")
MODELS = {
    "GPT3-5B": dict(h=4096, a=32, a_kv=32, L=24, ffn=16384, vocab=50257, family="gpt3"),
    "GPT3-20B": dict(h=6144, a=48, a_kv=48, L=44, ffn=24576, vocab=50257, family="gpt3"),
    "GPT3-175B": dict(h=12288, a=96, a_kv=96, L=96, ffn=49152, vocab=50257, family="gpt3"),
    "LLAMA2-7B": dict(h=4096, a=32, a_kv=32, L=32, ffn=11008, vocab=32000, family="llama"),
    "LLAMA2-13B": dict(h=5120, a=40, a_kv=40, L=40, ffn=13824, vocab=32000, family="llama"),
    "LLAMA2-70B": dict(h=8192, a=64, a_kv=8, L=80, ffn=28672, vocab=32000, family="llama"),
    "LLAMA3-8B": dict(h=4096, a=32, L=32, ffn=14336, **LLAMA3),
    "LLAMA3-70B": dict(h=8192, a=64, L=80, ffn=28672, **LLAMA3),
    "LLAMA3.1-405B": dict(h=16384, a=128, L=126, ffn=53248, **LLAMA3),
    "NEMOTRON-8B": dict(h=4096, a=32, a_kv=32, L=32, ffn=16384, vocab=256000, family="nemotron"),
    "NEMOTRON-22B": dict(h=6144, a=48, a_kv=48, L=40, ffn=24576, vocab=256000, family="nemotron"),
    "NEMOTRON-340B": dict(h=18432, a=96, a_kv=8, L=96, ffn=73728, vocab=256000, family="nemotron"),
    "GPT-OSS-120B": dict(config="examples/models/hf/gpt-oss-120b.json"),
    "QWEN3-30B-A3B": dict(config="examples/models/hf/qwen3-30b-a3b.json"),
    "QWEN3-235B-A22B": dict(config="examples/models/hf/qwen3-235b-a22b.json"),
    "DEEPSEEKV3": dict(config="examples/models/hf/deepseek-v3.json"),
    # A hybrid: 23 Mamba-2 mixers, 23 MoE MLPs and 6 attention layers (hybrid_override_pattern).
    "NEMOTRON-3-NANO": dict(config="examples/models/hf/nemotron-3-nano-30b-a3b.json"),
}
LEFT_OUT = {}


def key(name):
    """The table's model name as MODELS spells it: LLAMA3_70B, Qwen3_30B_a3B -> LLAMA3-70B, ..."""
    name = re.sub(r"\s*\((tokendrop|dropless|w/o MTP)\)", "", name.strip())
    name = name.upper().replace("_", "-").replace(" ", "-")
    return {"GPT-OSS-120B": "GPT-OSS-120B", "DEEPSEEKV3": "DEEPSEEKV3"}.get(name, name)


def first(cell):
    m = re.match(r"\s*([0-9.]+)", cell)
    return m.group(1) if m else ""


def read(repo, commit, path):
    return subprocess.run(["git", "-C", repo, "show", f"{commit}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def tables(text):
    """Yields (release, model, system, header cells, row cells, row text) of pre-training tables;
    model and system are the heading's ("#### Model: X" or "#### System: Y"), else None."""
    release, pretraining, model, system, header = "", False, None, None, None
    for line in text.splitlines():
        if line.startswith("## "):
            release = line[3:].strip()
            pretraining = False
        elif "Container: [NeMo" in line:
            release = re.search(r"NeMo ?([0-9.]+)", line).group(1) + " NeMo Container"
        elif line.startswith("### "):
            pretraining = "pre-train" in line.lower() or line[4:].strip() == "Pretraining"
            header = None
        elif line.startswith("#### "):
            title = line[5:].strip()
            model = title.split(":", 1)[1].strip() if title.startswith("Model:") else None
            system = title.split(":", 1)[1].strip() if title.startswith("System:") else None
            header = None
        elif line.startswith("|") and pretraining:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif not set(cells[0]) <= set("-: "):
                yield release, model, system, header, cells, line.strip()


def rows(text, source, repo_url, commit, system_default):
    for release, model, heading_system, header, cells, quote in tables(text):
        r = dict(zip(header, cells))
        system = r.get("System", heading_system or system_default)
        if system != "DGX-H100":
            continue
        name = key(model if model else r["Model"])
        if name in LEFT_OUT:
            print(f"left out: {release} {name}: {LEFT_OUT[name]}", file=sys.stderr)
            continue
        if name not in MODELS:
            sys.exit(f"no shape for {name}")
        shape = dict(MODELS[name])
        gpus, tp, pp, cp = (int(first(r[k])) for k in ("#-GPUs", "TP", "PP", "CP"))
        vp = first(r.get("VP", "")) or "1"
        ep = first(r.get("EP", "")) or "1"
        fsdp = first(r.get("FSDP", "")) or "0"
        precision = r.get("Precision", "FP8")
        tokens = first(r["Tokens / sec / GPU"])
        if not tokens:
            continue
        vocab = shape.get("vocab", "")
        if shape.get("family") == "gpt3":
            # GPT-2's 50257 tokens padded to a multiple of 128 × tp (Megatron's
            # make_vocab_size_divisible_by).
            step = 128 * tp
            vocab = (vocab + step - 1) // step * step
        tag = re.sub(r"[^0-9a-z]+", "", release.split()[0].lower()) or "na"
        out = {
            "id": f"{source}_{tag}_{name.lower().replace('.', '')}_g{gpus}_t{tp}p{pp}c{cp}e{ep}"
                  f"_{precision.lower().replace('-', '')}_tok",
            "source": f"{'NeMo' if source == 'nemo' else 'Megatron-Bridge'} performance summary "
                      f"({release}; DGX-H100; {shape.get('family', 'config')})",
            "model": name, "h": shape.get("h", ""), "a": shape.get("a", ""),
            "a_kv": shape.get("a_kv", ""), "L": shape.get("L", ""), "ffn": shape.get("ffn", ""),
            "vocab": vocab, "seq": r["Sequence Length"], "micro_batch": r["MBS"],
            "global_batch": r["GBS"], "tp": tp, "pp": pp, "dp": gpus // (tp * pp * cp), "cp": cp,
            "vp": vp, "ep": ep, "fsdp": fsdp, "gpus": gpus,
            "gpu": "H100-80GB SXM (DGX H100; NVLink 4 + NVSwitch, 8x400Gb/s InfiniBand per node)",
            "dtype": precision.lower().replace("-", "_"), "recompute": "",
            "seq_parallel": "yes" if tp > 1 else "no", "config": shape.get("config", ""),
            "metric": "tokens_per_s_per_gpu", "value": tokens, "unit": "tokens/s/GPU",
            "source_repo_or_url": repo_url, "commit_or_date": commit, "quote": quote,
        }
        yield out


def long_sequence_rows(text, repo_url, commit):
    """The DGX-H100 section of NeMo's long-sequence page (HTML tables): LLAMA2-7B in FP8 at 4k to
    1M tokens, model TFLOP/s per GPU with context parallelism (the table's "With CP" columns)."""
    section = ""
    for part in re.split(r"(^## .*$)", text, flags=re.M):
        if part.startswith("## "):
            section = part[3:].strip()
            continue
        if "H100" not in section:
            continue
        release = re.search(r"NeMo ?([0-9.]+[0-9])", part).group(1)
        model = section.split()[0]  # "LLAMA2-7B"
        shape = MODELS[model]
        for tr in re.findall(r"<tr>(.*?)</tr>", part, flags=re.S):
            cells = [c.strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, flags=re.S)]
            if len(cells) != 10:
                continue
            seq_k, gpus, gbs, _no_cp, tp, pp, dp, cp, tflops, _speedup = cells
            yield {
                "id": f"nemo_longseq_{model.lower()}_s{seq_k}k_g{gpus}_t{tp}p{pp}c{cp}_fp8_tflops",
                "source": f"NeMo long-sequence performance ({release}; DGX-H100; llama; with CP)",
                "model": model, "h": shape["h"], "a": shape["a"], "a_kv": shape["a_kv"],
                "L": shape["L"], "ffn": shape["ffn"], "vocab": shape["vocab"],
                "seq": int(seq_k) * 1024, "micro_batch": 1, "global_batch": gbs, "tp": tp,
                "pp": pp, "dp": dp, "cp": cp, "vp": 1, "ep": 1, "fsdp": 0, "gpus": gpus,
                "gpu": "H100-80GB SXM (DGX H100; NVLink 4 + NVSwitch, 8x400Gb/s InfiniBand per "
                       "node)",
                "dtype": "fp8", "recompute": "", "seq_parallel": "yes" if int(tp) > 1 else "no",
                "config": "", "metric": "tflops_per_gpu", "value": tflops.replace(",", ""),
                "unit": "TFLOP/s/GPU", "source_repo_or_url": repo_url, "commit_or_date": commit,
                "quote": " | ".join(cells),
            }


def qwen3_30b_ep16_row(run_id, source, gpu, value, repo_url, commit, quote):
    """A step-time row of Qwen3-30B-A3B on 16 H100 GPUs, BF16, 4096 tokens, TP 1, PP 1, CP 1,
    EP 16, MBS 1, GBS 1024: the shape both of Megatron-Bridge's overlap skills measured."""
    return {
        "id": run_id, "source": source,
        "model": "QWEN3-30B-A3B", "h": "", "a": "", "a_kv": "", "L": "", "ffn": "",
        "vocab": "", "seq": 4096, "micro_batch": 1, "global_batch": 1024, "tp": 1, "pp": 1,
        "dp": 16, "cp": 1, "vp": 1, "ep": 16, "fsdp": 0, "gpus": 16,
        "gpu": gpu, "dtype": "bf16", "recompute": "",
        "seq_parallel": "no", "config": MODELS["QWEN3-30B-A3B"]["config"],
        "metric": "step_time_s", "value": value, "unit": "s",
        "source_repo_or_url": repo_url, "commit_or_date": commit, "quote": quote,
    }


def overlap_rows(text, repo_url, commit):
    """The overlap skill's controlled comparison: Qwen3-30B-A3B on 16 H100 GPUs, BF16, 4096 tokens,
    TP 1, PP 1, CP 1, EP 16, MBS 1, GBS 1024, HybridEP, the overlap off and on (the "independent
    validation" run; the "search run" is the same configuration's first measurement). Step time
    in seconds, the figure the table leads with."""
    section = text.split("### HybridEP production-shape validation", 1)[1].split("###", 1)[0]
    setup = " ".join(section.split("|", 1)[0].split())
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[2].endswith("s") or "search run" in cells[0]:
            continue
        on = cells[0].startswith("EP overlap on")
        row = qwen3_30b_ep16_row(
            f"mbridge_skill2607_qwen3-30b-a3b_g16_t1p1c1e16_bf16_a2a{'on' if on else 'off'}_step",
            f"Megatron-Bridge MoE overlap skill (measured 2026-07-25; H100; HybridEP; "
            f"EP overlap {'on' if on else 'off'}; config)",
            "H100 (16 GPUs, 8 per node)", cells[2].rstrip("s"), repo_url, commit,
            f"{setup} | {line.strip()}")
        yield row
        peak = re.search(r"rank-0 peak allocated memory was ([0-9.]+) GiB", section)
        if on and peak:  # logged for the independent validation run, the overlap on
            yield {
                **row,
                "id": row["id"].replace("_step", "_mem"),
                "metric": "memory_peak_gib", "value": peak.group(1), "unit": "GiB",
                "quote": f"{setup} | {' '.join(peak.group(0).split())}",
            }


def alltoall_overlap_rows(text, repo_url, commit):
    """The expert-parallel overlap skill's alltoall A/B: Qwen3-30B-A3B on 16 H100 GPUs, EP 16,
    Megatron-Core's alltoall dispatcher, BF16, GBS 1024, CUDA graphs off, moe_permute_fusion off;
    the overlap off and on (plain overlap, delayed wgrad off). The skill states no sequence length
    or micro-batch: the H100 BF16 pre-training config's of that model, 4096 tokens and MBS 1 (the
    project docs call the run a mock-data rerun). The third row, the overlap plus delay_wgrad_compute
    (31.20 s), is not written: the planner does not price delayed weight gradients."""
    section = text.split("## Correctness-First alltoall Benchmark", 1)[1].split("\n## ", 1)[0]
    setup = " ".join(section.split("Use these overrides", 1)[0].split())
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[1].endswith("s") or cells[0] not in (
                "no EP overlap", "EP overlap"):
            continue
        on = cells[0] == "EP overlap"
        yield qwen3_30b_ep16_row(
            f"mbridge_skill2605_qwen3-30b-a3b_g16_t1p1c1e16_bf16_alltoall_a2a"
            f"{'on' if on else 'off'}_step",
            f"Megatron-Bridge expert-parallel overlap skill (measured 2026-05-18; H100; "
            f"alltoall; EP overlap {'on' if on else 'off'}; config)",
            "H100 (16 GPUs)", cells[1].rstrip("s"), repo_url, commit, f"{setup} | {line.strip()}")


def main():
    nemo_dir, bridge_dir = sys.argv[1], sys.argv[2]
    out = runs_csv.writer()
    seen = set()
    for source, repo, (commit, path), url in (
            ("nemo", nemo_dir, NEMO, f"github.com/NVIDIA/NeMo {NEMO[1]}"),
            ("mbridge", bridge_dir, BRIDGE, f"github.com/NVIDIA-NeMo/Megatron-Bridge {BRIDGE[1]}")):
        for row in rows(read(repo, commit, path), source, url, commit, "DGX-H100"):
            while row["id"] in seen:
                row["id"] += "_2"
            seen.add(row["id"])
            out.writerow(row)
    for row in long_sequence_rows(read(nemo_dir, *LONG), f"github.com/NVIDIA/NeMo {LONG[1]}",
                                  LONG[0]):
        out.writerow(row)
    for row in overlap_rows(read(bridge_dir, *OVERLAP),
                            f"github.com/NVIDIA-NeMo/Megatron-Bridge {OVERLAP[1]}", OVERLAP[0]):
        out.writerow(row)
    for row in alltoall_overlap_rows(read(bridge_dir, *EP_OVERLAP),
                                     f"github.com/NVIDIA-NeMo/Megatron-Bridge {EP_OVERLAP[1]}",
                                     EP_OVERLAP[0]):
        out.writerow(row)


if __name__ == "__main__":
    main()
