#!/usr/bin/env python3
"""Writes bench/data/published-runs-dgxc-h100.csv: the H100 pre-training step times NVIDIA
published with its DGX Cloud benchmarking recipes (github.com/NVIDIA/dgxc-benchmarking), one CSV
row per figure, in the schema of published-runs-nemo-h100.csv.

  python3 bench/data/make_dgxc_h100_runs.py DGXC_GIT_DIR > bench/data/published-runs-dgxc-h100.csv

DGXC_GIT_DIR is a clone of github.com/NVIDIA/dgxc-benchmarking (Apache-2.0); the READMEs are read
at the release tags below (TAGS). Every figure is a "Training step time (seconds per step)" cell of
an H100 table; the quote holds the table's header cell and the row as written. The layout is the
one the README states beside the figure: in the table's header ("(TP=4, PP=4, CP=2, VP=5, MBS=1,
GA=64)" and each column's "(GBS=...)"), or in the workload's configuration table by GPU count
(Grok-1, and the 25.05 tables). A figure repeated unchanged at a later tag is written once, at the
first. Not read: Llama 3.1 405B's 24.x tables (their 32 to 192 GPU columns cannot hold the
TP 8 × PP 9 × CP 2 the header states, 144 GPUs a replica), the 25.04 tables (no layout beside
their figures), the JAX workloads (MaxText, PaxML: another stack) and fine-tuning. A column the
stated layout cannot fill, or whose batch does not divide, is left out and listed on stderr (none
at these tags).

From v25.07 the READMEs give no tables of figures, only a configuration table per system and, in
the MFU section, one worked example with its step time ("E.g. Deepseek V3 BF16 on 1024x H100 GPUs
(GBS=8192) ... training step time = 52.04 s"). Those examples on H100 are read too (EXAMPLES), the
layout from the H100 configuration table's row of that precision and GPU count, and what the
release's NeMo perf script sets beside them (dispatcher, overlap, token drop; EXAMPLE_NOTES) in
the source column. The READMEs do not say whether the example is a measurement of that release;
each changes with its release's configuration (DeepSeek-V3 52.04 s at v25.07, 36.189 s at
v25.08.02 with another layout and dispatcher), so they are taken as such, the quote beside each.
Nemotron-H 56B's example (a hybrid Mamba model whose layer pattern the README does not give) is
left out.
"""
import re
import subprocess
import sys

import runs_csv

# (tag, README) pairs read; the container each names (setup.sh, the README's "Prepare environment").
TAGS = [
    ("v24.11.1", "24.09", ["grok1/README_314b.md", "llama3.1/README_8b.md", "llama3.1/README_70b.md",
                           "nemotron/README_15b.md", "nemotron/README_340b.md",
                           "nemo_megatron/README_175b.md"]),
    ("v25.02.02", "24.12", ["grok1/README_314b.md", "llama3.1/README_8b.md",
                            "llama3.1/README_70b.md", "nemotron/README_15b.md",
                            "nemotron/README_340b.md", "nemo_megatron/README_175b.md"]),
    ("v25.05.05", "25.04", ["grok1/README.md", "llama3.1/README.md"]),
]

# (tag, NeMo container, README) pairs whose MFU section's H100 example is read (examples()).
EXAMPLES = [
    ("v25.07", "25.04.01", "deepseek_v3/pretrain/README.md"),
    ("v25.07", "25.04.01", "nemotron/README.md"),
    ("v25.08.02", "25.07.01", "deepseek_v3/pretrain/README.md"),
    ("v25.12.02", "25.09", "nemotron4-340b/README.md"),
]

# What each example's NeMo perf script sets that its table does not say (scripts/performance/llm/
# pretrain_deepseek_v3.py and nemo/collections/llm/recipes/deepseek_v3.py at the NeMo commit the
# tag's metadata.yaml pins: 00b778eb for v25.07, 9244b1ec for v25.08.02): both train the
# multi-token prediction module (use_mtp=True), reduce gradients in BF16 (grad_reduce_in_fp32
# False) and leave the TP communication overlap off; at v25.07 the alltoall dispatcher with the
# token drop (MegatronTokenDropCallback: capacity factor 1.0, padded) and no all-to-all overlap; at
# v25.08.02 on H100 DeepEP (flex), routing forced balanced, dropless, no all-to-all overlap. The
# table's RecomputeModule column goes beside them ("recompute mla_up_proj,mlp,moe").
EXAMPLE_NOTES = {
    ("v25.07", "deepseek-v3"): "alltoall; EP overlap off; token drop; TP comm overlap off",
    ("v25.08.02", "deepseek-v3"): "DeepEP; EP overlap off; forced-balanced routing; "
                                  "TP comm overlap off",
}

# Shapes (h, a, a_kv, L, ffn, vocab) and sequence length where the table states none: Llama 3.1
# (Meta's config.json; the README's FLOP example takes 8192 tokens), Nemotron-4 15B and 340B
# (arXiv:2402.16819, arXiv:2406.11704; 4096 tokens, the README's example), GPT-3 175B (the header's
# SEQ), Grok-1 (xai-org/grok-1's model.py: 64 layers of width 6144, 48 query and 8 key-value heads,
# 8 experts, 2 per token, widening factor 8 → 32768, vocabulary 131072).
MODELS = {
    "llama3.1-8b": dict(h=4096, a=32, a_kv=8, L=32, ffn=14336, vocab=128256, seq=8192,
                        name="Llama 3.1 8B"),
    "llama3.1-70b": dict(h=8192, a=64, a_kv=8, L=80, ffn=28672, vocab=128256, seq=8192,
                         name="Llama 3.1 70B"),
    "llama3.1-405b": dict(h=16384, a=128, a_kv=8, L=126, ffn=53248, vocab=128256, seq=8192,
                          name="Llama 3.1 405B"),
    "nemotron4-15b": dict(h=6144, a=48, a_kv=8, L=32, ffn=24576, vocab=256000, seq=4096,
                          name="Nemotron4 15B"),
    "nemotron4-340b": dict(h=18432, a=96, a_kv=8, L=96, ffn=73728, vocab=256000, seq=4096,
                           name="Nemotron4 340B"),
    "gpt3-175b": dict(h=12288, a=96, a_kv=96, L=96, ffn=49152, vocab=50257, seq=2048,
                      name="GPT3 175B"),
    "grok1-314b": dict(h=6144, a=48, a_kv=8, L=64, ffn=32768, vocab=131072, seq=8192,
                       name="Grok-1 314B"),
}


def read(repo, tag, path):
    return subprocess.run(["git", "-C", repo, "show", f"{tag}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def model_of(title):
    t = title.lower().replace(" ", "")
    for key in ("grok", "nemomegatron"):
        if key in t:
            return "grok1-314b" if key == "grok" else "gpt3-175b"
    m = re.search(r"(llama3\.1|nemotron4)(\d+b)", t)
    return f"{m.group(1)}-{m.group(2)}" if m else None


def config_tables(text):
    """{gpus: {column: value}} of the H100 configuration table (the one after "**H100**" where
    the README has one per system, else the only one)."""
    if "**H100**" in text:
        text = text.split("**H100**", 1)[1]
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("| GPUs"):
            head = cells(line)
            table = {}
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                c = dict(zip(head, cells(row)))
                table[int(c["GPUs"])] = c
            return table
    return {}


def layout_of(header_cell):
    return {k: int(v) for k, v in re.findall(r"\b(TP|PP|CP|VP|MBS|GA|SEQ)=(\d+)", header_cell)}


def rows(repo, tag, container, path):
    text = read(repo, tag, path)
    config = config_tables(text)
    lines = text.splitlines()
    for i, line in enumerate(lines):
        head = cells(line)
        if len(head) < 2 or "H100" not in head[1] or not re.search(r"\b(BF16|FP8)\b", head[0]):
            continue
        step = next((l for l in lines[i + 1:i + 4] if "Training step time" in l), None)
        if step is None:
            continue
        model = model_of(head[0])
        if model is None:
            continue
        shape = MODELS[model]
        dtype = re.search(r"\b(BF16|FP8)\b", head[0]).group(1).lower()
        stated = layout_of(head[0])
        for col, value in zip(head[1:], cells(step)[1:]):
            m = re.search(r"(\d+)x? H100", col)
            if not m or not value:
                continue
            gpus = int(m.group(1))
            gbs = re.search(r"GBS=(\d+)", col)
            c = config.get(gpus, {})
            if not stated and not c:
                print(f"left out: {tag} {path} {head[0]} {col}: no layout stated", file=sys.stderr)
                continue

            def num(key, default=1):
                v = stated.get(key, c.get(key, ""))
                return int(v) if str(v).isdigit() else default
            tp, pp, cp, vp, mbs = num("TP"), num("PP"), num("CP"), num("VP"), num("MBS")
            ep = num("EP")
            layers = int(c["Layers"]) if c.get("Layers", "").isdigit() else shape["L"]
            seq = stated.get("SEQ") or (int(c["SeqLen"]) if c.get("SeqLen") else shape["seq"])
            global_batch = int(gbs.group(1)) if gbs else int(c.get("GBS", 0) or 0)
            if gpus % (tp * pp * cp) != 0 or global_batch == 0:
                print(f"left out: {tag} {path} {head[0]} {col}: TP {tp} x PP {pp} x CP {cp} does "
                      f"not divide {gpus} GPUs, or no global batch", file=sys.stderr)
                continue
            dp = gpus // (tp * pp * cp)
            if global_batch % (dp * mbs) != 0:
                print(f"left out: {tag} {path} {head[0]} {col}: GBS {global_batch} over DP {dp} x "
                      f"MBS {mbs}", file=sys.stderr)
                continue
            if "GA" in stated and global_batch != dp * mbs * stated["GA"]:
                print(f"left out: {tag} {path} {head[0]} {col}: GBS {global_batch} is not DP {dp} "
                      f"x MBS {mbs} x GA {stated['GA']}", file=sys.stderr)
                continue
            etp = c.get("ETP", "")
            notes = f"ETP {etp}" if etp.isdigit() else "ETP as TP" if ep > 1 else ""
            yield {
                "id": f"dgxc_{tag.lstrip('v').replace('.', '')}_{model}_L{layers}_g{gpus}"
                      f"_t{tp}p{pp}c{cp}e{ep}_s{seq // 1024}k_{dtype}_step",
                "source": f"DGX Cloud benchmarking recipes ({tag}; NeMo {container}; H100"
                          f"{'; ' + notes if notes else ''})",
                "model": shape["name"], "h": shape["h"], "a": shape["a"], "a_kv": shape["a_kv"],
                "L": layers, "ffn": shape["ffn"], "vocab": shape["vocab"], "seq": seq,
                "micro_batch": mbs, "global_batch": global_batch, "tp": tp, "pp": pp, "dp": dp,
                "cp": cp, "vp": vp, "ep": ep, "fsdp": 0, "gpus": gpus,
                "gpu": "H100 80GB (DGX Cloud)", "dtype": dtype, "recompute": "",
                "seq_parallel": "yes" if tp > 1 else "no", "config": "",
                "metric": "step_time_s", "value": value, "unit": "s",
                "source_repo_or_url": f"github.com/NVIDIA/dgxc-benchmarking {path}",
                "commit_or_date": tag,
                "quote": f"{head[0]} | {col} | {' '.join(step.split())}",
            }


def h100_config_row(text, gpus, dtype):
    """The H100 configuration table's row for `gpus` whose Precision names `dtype` ({column:
    value}), from the section "## H100" up to the next "## "."""
    section = text.split("## H100", 1)[1].split("\n## ", 1)[0] if "## H100" in text else ""
    lines = section.splitlines()
    for i, line in enumerate(lines):
        head = cells(line)
        if "GPUs" not in head or "TP" not in head:
            continue
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            c = dict(zip(head, cells(row)))
            if c.get("GPUs") == str(gpus) and dtype.upper() in c.get("Precision", "").upper():
                return c
    return None


def examples(repo, tag, container, path):
    text = read(repo, tag, path)
    m = re.search(r"E\.g\. (.+?) (BF16|FP8) on (\d+)x H100 GPUs \(GBS=(\d+)\)[^\n]*\n"
                  r"(?:.*\n){0,3}?training step time = ([\d.]+)", text)
    if not m:
        return
    title, dtype, gpus, gbs, value = m.group(1), m.group(2), int(m.group(3)), int(m.group(4)), \
        m.group(5)
    t = title.lower().replace(" ", "").replace("-", "")
    size = re.search(r"(\d+b)", t)
    model = ("deepseek-v3" if "deepseekv3" in t else model_of(title) or
             ("nemotron4-" + size.group(1) if "nemotron4" in t and size else None))
    c = h100_config_row(text, gpus, dtype)
    if model is None or c is None:
        print(f"left out: {tag} {path} {m.group(0).splitlines()[0]}: no model or H100 row",
              file=sys.stderr)
        return

    def num(key, default=1):
        v = c.get(key, "")
        return int(v) if v.isdigit() else default
    tp, pp, cp, vp, mbs, ep = num("TP"), num("PP"), num("CP"), num("VP"), num("MBS"), num("EP")
    dp = gpus // (tp * pp * cp)
    if num("GBS", 0) != gbs or gbs != dp * mbs * num("GA", 0):
        print(f"left out: {tag} {path}: GBS {gbs} is not the table's, or not DP {dp} x MBS {mbs} x "
              f"GA {c.get('GA')}", file=sys.stderr)
        return
    notes = [f"ETP {c['ETP']}"] if c.get("ETP", "").isdigit() else []
    if EXAMPLE_NOTES.get((tag, model)):
        notes.append(EXAMPLE_NOTES[(tag, model)])
    if c.get("RecomputeModule"):
        notes.append("recompute " + c["RecomputeModule"].replace(" ", ""))
    deepseek = model == "deepseek-v3"
    shape = {} if deepseek else MODELS[model]
    layers = num("Layers", shape.get("L", 0))
    seq = num("SeqLen", shape.get("seq", 4096))
    yield {
        "id": f"dgxc_{tag.lstrip('v').replace('.', '')}_{model}_L{layers}_g{gpus}"
              f"_t{tp}p{pp}c{cp}e{ep}_s{seq // 1024}k_{dtype.lower()}_step",
        "source": f"DGX Cloud benchmarking recipes ({tag}; NeMo {container}; H100; MFU example"
                  f"{'; ' + '; '.join(notes) if notes else ''})",
        "model": "DEEPSEEKV3" if deepseek else shape["name"],
        "h": shape.get("h", ""), "a": shape.get("a", ""), "a_kv": shape.get("a_kv", ""),
        "L": "" if deepseek else layers, "ffn": shape.get("ffn", ""),
        "vocab": shape.get("vocab", ""), "seq": seq, "micro_batch": mbs, "global_batch": gbs,
        "tp": tp, "pp": pp, "dp": dp, "cp": cp, "vp": vp, "ep": ep, "fsdp": 0, "gpus": gpus,
        "gpu": "H100 80GB (DGX Cloud)", "dtype": dtype.lower(), "recompute": "",
        "seq_parallel": "yes" if tp > 1 else "no",
        "config": "examples/models/hf/deepseek-v3.json" if deepseek else "",
        "metric": "step_time_s", "value": value, "unit": "s",
        "source_repo_or_url": f"github.com/NVIDIA/dgxc-benchmarking {path}",
        "commit_or_date": tag,
        "quote": f"{m.group(0).splitlines()[0]} | training step time = {value} s | H100 table: "
                 + " ".join(f"{k}={v}" for k, v in c.items()),
    }


def main():
    repo = sys.argv[1]
    out = runs_csv.writer()
    seen = set()
    for tag, container, paths in TAGS:
        for path in paths:
            for row in rows(repo, tag, container, path):
                key = (row["id"].split("_", 2)[2], row["value"])
                if key in seen:
                    continue
                seen.add(key)
                out.writerow(row)
    for tag, container, path in EXAMPLES:
        for row in examples(repo, tag, container, path):
            key = (row["id"].split("_", 2)[2], row["value"])
            if key not in seen:
                seen.add(key)
                out.writerow(row)


if __name__ == "__main__":
    main()
