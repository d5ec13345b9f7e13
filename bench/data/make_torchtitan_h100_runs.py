#!/usr/bin/env python3
"""Writes bench/data/published-runs-torchtitan-h100.csv: TorchTitan's published Llama 3.1 8B, 70B
and 405B pre-training throughput on Meta's Grand Teton H100s (96 GB HBM2e, 500 W), and the H200
runs a team submitted to its benchmarks folder, one CSV row per run, the tokens per second per GPU
each measured, in the schema of bench/data/published-runs-nemo-h100.csv.

  python3 bench/data/make_torchtitan_h100_runs.py > bench/data/published-runs-torchtitan-h100.csv

Source (BSD-3-Clause, the repository's LICENSE): github.com/pytorch/torchtitan,
benchmarks/llama3_h100_202412_torchtitan.md at 31a17bfdb70bab6f62a13d21816a5339b911d6e3 (runs of
torchtitan 9dec370, torch 1963fc8, torchao eab345c, 2024-12), Tables 1 to 6, transcribed below;
the script checks the transcription against the page's arithmetic (FSDP x TP x PP x CP = GPUs;
local batch x FSDP = the global batch where the page gives one). What the page leaves unstated
comes from torchtitan's configs at 9dec370 (train_configs/llama3_*.toml: seq_len 8192; the
pipeline's micro-batches default to its degree, two stages per rank for an interleaved schedule,
torchtitan/config_manager.py and parallelisms/pipelining_utils.py). The memory column is not
written (bench/published_runs compares step rates). How bench/published_runs prices the rows is in
published-runs-torchtitan-h100.md.

Two more pages of the same folder (BSD-3-Clause), read at b5bcd76c66d0acb1a08b176d9639425bc55e0b2a:
benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md (the PyTorch team, June 2025, torchtitan
820504e: Llama 3.1 70B on 256 and 8B on 64 of the same H100s, vanilla against async TP, BF16 and
Float8 with tensorwise and rowwise scales) and benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md
(Trainy on WhiteFiber, June 2025, torchtitan e7c0cae: Llama 3.1 8B on 32 and 64 H200s, its
command line quoted there). What those pages leave unstated comes from the configs at the
torchtitan commit each names (torchtitan/models/llama3/train_configs/llama3_{8b,70b}.toml:
seq_len 8192; 8B's selective_ac_option "op"). Their tokens/sec is torchtitan's logged tps, per
GPU (components/metrics.py: the tokens of a data-parallel rank over the time and its
non-data-parallel ranks).

Three runs torchao published (BSD-3-Clause, the repository's LICENSE): github.com/pytorch/ao,
torchao/float8/README.md at 8c81863ba (2025-03-12), "Training benchmarks": Llama3-8b with torchtitan
0.0.2 (torch 2.7.0a0+gitb98af95, torchao 0.10.0+git890e0ac8) on 8 H100s, FSDP2, torch.compile,
per-op SAC, local batch 1, 8,192 tokens, in BF16, float8 tensorwise with float8 all-gather and
float8 rowwise with BF16 all-gather (the page's median tokens/second). The README names the GPU
"H100" only; its authors ran on Meta's machines, priced as the Grand Teton part the December 2024
page describes.
"""
import runs_csv

MODELS = {  # Llama 3.1 (Meta's config.json): h, a, a_kv, L, ffn, vocab
    "8b": (4096, 32, 8, 32, 14336, 128256),
    "70b": (8192, 64, 8, 80, 28672, 128256),
    "405b": (16384, 128, 8, 126, 53248, 128256),
}
# table, model, GPUs, FSDP, TP, PP, CP, sequence, local batch, global batch (0: not given),
# techniques, activation checkpointing, TPS/GPU, the row as written
TABLE = [
    (1, "8b", 8, 8, 1, 1, 1, 8192, 2, 16, "FSDP", "selective", 5762, "| FSDP | 5,762 | 82.4 |"),
    (1, "8b", 8, 8, 1, 1, 1, 8192, 2, 16, "FSDP + torch.compile", "selective", 6667,
     "| FSDP + torch.compile | 6,667 | 77.0 |"),
    (1, "8b", 8, 8, 1, 1, 1, 8192, 2, 16, "FSDP + torch.compile + Float8", "selective", 8532,
     "| FSDP + torch.compile + Float8 | 8,532 | 76.8 |"),
    (2, "8b", 8, 8, 1, 1, 1, 32768, 1, 0, "FSDP + CP + torch.compile + Float8", "full", 3890,
     "| FSDP 8, CP 1 | 32768 | 3,890 | 83.9 |"),
    (2, "8b", 8, 4, 1, 1, 2, 65536, 1, 0, "FSDP + CP + torch.compile + Float8", "full", 2540,
     "| FSDP 4, CP 2 | 65536 | 2,540 | 84.2 |"),
    (2, "8b", 8, 2, 1, 1, 4, 131072, 1, 0, "FSDP + CP + torch.compile + Float8", "full", 1071,
     "| FSDP 2, CP 4 | 131072 | 1,071 | 84.0 |"),
    (2, "8b", 8, 1, 1, 1, 8, 262144, 1, 0, "FSDP + CP + torch.compile + Float8", "full", 548,
     "| FSDP 1, CP 8 | 262144 | 548 | 84.5 |"),
    (3, "8b", 128, 128, 1, 1, 1, 8192, 2, 256, "FSDP", "selective", 5605,
     "| FSDP | 5,605 | 67.0 |"),
    (3, "8b", 128, 128, 1, 1, 1, 8192, 2, 256, "FSDP + torch.compile", "selective", 6514,
     "| FSDP + torch.compile | 6,514 | 62.0 |"),
    (3, "8b", 128, 128, 1, 1, 1, 8192, 2, 256, "FSDP + torch.compile + Float8", "selective", 8380,
     "| FSDP + torch.compile + Float8 | 8,380 | 61.8 |"),
    (4, "70b", 256, 32, 8, 1, 1, 8192, 16, 512, "2D + torch.compile + Float8", "full", 829,
     "| 2D | 829 | 71.9 |"),
    (4, "70b", 256, 32, 8, 1, 1, 8192, 16, 512, "2D + AsyncTP + torch.compile + Float8", "full",
     876, "| 2D + AsyncTP | 876 | 67.6 |"),
    (5, "405b", 512, 8, 8, 8, 1, 8192, 32, 256,
     "3D 1F1B + torch.compile + Float8 + AsyncTP", "full", 100, "| 1F1B | 100 | 82.5 |"),
    (5, "405b", 512, 8, 8, 8, 1, 8192, 32, 256,
     "3D Interleaved 1F1B + torch.compile + Float8 + AsyncTP", "full", 128,
     "| Interleaved 1F1B | 128 | 72.7 |"),
    (6, "405b", 512, 8, 8, 8, 1, 32768, 8, 0, "4D 1F1B + torch.compile + Float8 + AsyncTP", "full",
     76, "| FSDP 8, CP 1 | 32768 | 76 | 75.3 |"),
    (6, "405b", 512, 4, 8, 8, 2, 65536, 8, 0, "4D 1F1B + torch.compile + Float8 + AsyncTP", "full",
     47, "| FSDP 4, CP 2 | 65536 | 47 | 75.9 |"),
    (6, "405b", 512, 2, 8, 8, 4, 131072, 8, 0, "4D 1F1B + torch.compile + Float8 + AsyncTP", "full",
     31, "| FSDP 2, CP 4 | 131072 | 31 | 77.1 |"),
    (6, "405b", 512, 1, 8, 8, 8, 262144, 8, 0, "4D 1F1B + torch.compile + Float8 + AsyncTP", "full",
     16, "| FSDP 1, CP 8 | 262144 | 16 | 84.9 |"),
]


ASYNC_TP_PAGE = "benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md"
H200_PAGE = "benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md"
# The async TP page's rows: its table, model, GPUs, FSDP, local batch, activation checkpointing,
# the quantization column, vanilla and async TP tokens/s per GPU, the row as written (TP 8, 8,192
# tokens: a run each with vanilla and with async TP).
ASYNC_TP_ROWS = [
    ("Llama3 70b on 256 H100s", "70b", 256, 32, 16, "full", "None (bfloat16)", 597.3, 652.4,
     "| None (bfloat16)   | 597.3 | 652.4 | 1.09 |"),
    ("Llama3 70b on 256 H100s", "70b", 256, 32, 16, "full", "float8 tensorwise", 809.8, 942.4,
     "| float8 tensorwise | 809.8 | 942.4 | 1.16 |"),
    ("Llama3 70b on 256 H100s", "70b", 256, 32, 16, "full", "float8 rowwise", 599.6, 624.8,
     "| float8 rowwise    | 599.6 | 624.8 | 1.04 |"),
    ("Llama3 8b on 64 H100s", "8b", 64, 8, 12, "selective", "None (bfloat16)", 4378, 4809.4,
     "| None (bfloat16)   | 4378   | 4809.4 | 1.10 |"),
    ("Llama3 8b on 64 H100s", "8b", 64, 8, 12, "selective", "float8 tensorwise", 5078.1, 5570.1,
     "| float8 tensorwise | 5078.1 | 5570.1 | 1.10 |"),
    ("Llama3 8b on 64 H100s", "8b", 64, 8, 12, "selective", "float8 rowwise", 3708.5, 3914.9,
     "| float8 rowwise    | 3708.5 | 3914.9 | 1.06 |"),
]


def table_2506():
    """(page, its table, model, GPUs, FSDP, TP, sequence, local batch, techniques, activation
    checkpointing, TPS/GPU, the row as written) of the June 2025 pages, a run each."""
    rows = []
    for table, model, gpus, fsdp, local, ac, quant, vanilla, async_tp, quote in ASYNC_TP_ROWS:
        scales = "" if quant.startswith("None") else " + Float8 " + quant.split()[1]
        for tp_kind, tps in (("", vanilla), (" + AsyncTP", async_tp)):
            rows.append((ASYNC_TP_PAGE, table, model, gpus, fsdp, 8, 8192, local,
                         f"2D{tp_kind} + torch.compile{scales}", ac, tps, quote))
    for nodes, tps, quote in ((4, 10938, "| 4 | 10938 | 47.96 |"),
                              (8, 10753, "| 8 | 10753 | 46.97 |")):
        rows.append((H200_PAGE, f"NUM_NODES {nodes}", "8b", 8 * nodes, 8 * nodes, 1, 8192, 2,
                     "FSDP + torch.compile + Float8 all-gather", "selective", tps, quote))
    return rows


AO_README = "torchao/float8/README.md"
# torchao's float8 README: (scaling as written, techniques, median tokens/second, the row)
AO_ROWS = [
    ("none (bfloat16)", "FSDP + torch.compile", 6150,
     "| Llama3-8b     |  none (bfloat16)                   | per op SAC               | 47.65"
     "             |  6150                | -"),
    ("tensorwise with float8 all-gather", "FSDP + torch.compile + Float8 all-gather", 7689.5,
     "| Llama3-8b     |  tensorwise with float8 all-gather | per op SAC               | 47.77"
     "             |  7689.5              | 25.03%"),
    ("rowwise with bfloat16 all-gather", "FSDP + torch.compile + Float8 rowwise", 6768,
     "| Llama3-8b     |  rowwise with bfloat16 all-gather  | per op SAC               | 47.79"
     "             |  6768                | 10.05%"),
]


GRAND_TETON = "H100 96GB HBM2e at 500 W (Meta's Grand Teton; 400 Gb/s RDMA per GPU)"
WHITEFIBER = "H200 (WhiteFiber; 8 per host on NVLink, 400 Gb/s RDMA per GPU, ConnectX-7)"


def tag_of(tech):
    """The techniques as an id's word: lower case, letters and digits only."""
    return "".join(c for c in tech.lower().replace("torch.compile", "compile")
                   .replace("interleaved 1f1b", "i1f1b").replace("float8 all-gather", "float8ag")
                   if c.isalnum())


def row(model, gpus, fsdp, tp, pp, cp, seq, micro, local, tech, ac, tps, rid, source, gpu, page,
        commit, quote):
    """One CSV row of the shared schema."""
    h, a, a_kv, L, ffn, vocab = MODELS[model]
    return {
        "id": rid, "source": source,
        "model": f"Llama 3.1 {model.upper()}", "h": h, "a": a, "a_kv": a_kv, "L": L,
        "ffn": ffn, "vocab": vocab, "seq": seq, "micro_batch": micro,
        "global_batch": local * fsdp, "tp": tp, "pp": pp, "dp": fsdp, "cp": cp,
        "vp": 2 if "Interleaved" in tech else 1, "ep": 1, "fsdp": fsdp, "gpus": gpus,
        "gpu": gpu, "dtype": "fp8" if "Float8" in tech else "bf16", "recompute": ac,
        "seq_parallel": "yes" if tp > 1 else "", "config": "",
        "metric": "tokens_per_s_per_gpu", "value": tps, "unit": "tokens/s/GPU",
        "source_repo_or_url": f"github.com/pytorch/torchtitan {page}",
        "commit_or_date": commit, "quote": quote,
    }


def main():
    out = runs_csv.writer()
    for n, model, gpus, fsdp, tp, pp, cp, seq, local, glob, tech, ac, tps, quote in TABLE:
        assert fsdp * tp * pp * cp == gpus, quote
        assert glob == 0 or local * fsdp == glob, quote
        # The pipeline splits the local batch into pp micro-batches (torchtitan's default).
        micro = local // pp if pp > 1 else local
        out.writerow(row(
            model, gpus, fsdp, tp, pp, cp, seq, micro, local, tech, ac, tps,
            f"torchtitan_2412_llama31-{model}_g{gpus}_t{tp}p{pp}c{cp}f{fsdp}_s{seq // 1024}k_"
            f"{tag_of(tech)}_tok",
            f"TorchTitan Llama 3.1 H100 benchmarks (Table {n}: {tech}; "
            f"{ac} activation checkpointing)", GRAND_TETON,
            "benchmarks/llama3_h100_202412_torchtitan.md",
            "31a17bfdb70bab6f62a13d21816a5339b911d6e3", quote))
    for page, table, model, gpus, fsdp, tp, seq, local, tech, ac, tps, quote in table_2506():
        assert fsdp * tp == gpus, quote
        assert str(tps) in quote.replace(",", "") or f"{tps:g}" in quote, quote
        h200 = page == H200_PAGE
        who = "Trainy's H200 benchmark" if h200 else "TorchTitan async TP benchmarks"
        out.writerow(row(
            model, gpus, fsdp, tp, 1, 1, seq, local, local, tech, ac, tps,
            f"torchtitan_2506_llama31-{model}_g{gpus}_t{tp}p1c1f{fsdp}_s{seq // 1024}k_"
            f"{tag_of(tech)}_tok",
            f"{who}, June 2025 ({table}: {tech}; {ac} activation checkpointing"
            f"{'; torchtitan e7c0cae' if h200 else '; torchtitan 820504e'})",
            WHITEFIBER if h200 else GRAND_TETON, page,
            "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a", quote))
    for scaling, tech, tps, quote in AO_ROWS:
        assert f"{tps:g}" in quote and scaling in quote, quote
        r = row("8b", 8, 8, 1, 1, 1, 8192, 1, 1, tech, "selective", tps,
                f"torchtitan_2503ao_llama3-8b_g8_t1p1c1f8_s8k_{tag_of(tech)}_tok",
                f"torchao's float8 training benchmarks, March 2025 (Llama3-8b, {scaling}: "
                f"{tech}; per-op selective activation checkpointing; torchtitan 0.0.2)",
                GRAND_TETON, AO_README, "8c81863ba", quote)
        r["model"] = "Llama 3 8B"
        r["source_repo_or_url"] = f"github.com/pytorch/ao {AO_README}"
        out.writerow(r)


if __name__ == "__main__":
    main()
