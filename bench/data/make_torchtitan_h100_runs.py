#!/usr/bin/env python3
"""Writes bench/data/published-runs-torchtitan-h100.csv: TorchTitan's published Llama 3.1 8B, 70B
and 405B pre-training throughput on Meta's Grand Teton H100s (96 GB HBM2e, 500 W), one CSV row per
run, the tokens per second per GPU each measured, in the schema of
bench/data/published-runs-nemo-h100.csv.

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


def main():
    out = runs_csv.writer()
    for n, model, gpus, fsdp, tp, pp, cp, seq, local, glob, tech, ac, tps, quote in TABLE:
        assert fsdp * tp * pp * cp == gpus, quote
        assert glob == 0 or local * fsdp == glob, quote
        h, a, a_kv, L, ffn, vocab = MODELS[model]
        interleaved = "Interleaved" in tech
        fp8 = "Float8" in tech
        # The pipeline splits the local batch into pp micro-batches (torchtitan's default).
        micro = local // pp if pp > 1 else local
        tag = "".join(c for c in tech.lower().replace("torch.compile", "compile")
                      .replace("interleaved 1f1b", "i1f1b") if c.isalnum())
        out.writerow({
            "id": f"torchtitan_2412_llama31-{model}_g{gpus}_t{tp}p{pp}c{cp}f{fsdp}_s{seq // 1024}k_"
                  f"{tag}_tok",
            "source": f"TorchTitan Llama 3.1 H100 benchmarks (Table {n}: {tech}; "
                      f"{ac} activation checkpointing)",
            "model": f"Llama 3.1 {model.upper()}", "h": h, "a": a, "a_kv": a_kv, "L": L,
            "ffn": ffn, "vocab": vocab, "seq": seq, "micro_batch": micro,
            "global_batch": local * fsdp, "tp": tp, "pp": pp, "dp": fsdp, "cp": cp,
            "vp": 2 if interleaved else 1, "ep": 1, "fsdp": fsdp, "gpus": gpus,
            "gpu": "H100 96GB HBM2e at 500 W (Meta's Grand Teton; 400 Gb/s RDMA per GPU)",
            "dtype": "fp8" if fp8 else "bf16", "recompute": ac,
            "seq_parallel": "yes" if tp > 1 else "", "config": "",
            "metric": "tokens_per_s_per_gpu", "value": tps, "unit": "tokens/s/GPU",
            "source_repo_or_url": "github.com/pytorch/torchtitan "
                                  "benchmarks/llama3_h100_202412_torchtitan.md",
            "commit_or_date": "31a17bfdb70bab6f62a13d21816a5339b911d6e3",
            "quote": quote,
        })


if __name__ == "__main__":
    main()
