#!/usr/bin/env python3
"""Writes bench/data/published-runs-h100.csv: MosaicML's H100 throughput tables from llm-foundry's
scripts/train/benchmarking/README.md, one CSV row per figure (MFU, tokens/s/GPU, model TFLOP/s/GPU),
in the schema of ../shared/reference/published-runs-a100.csv (its .md explains the columns).

  python3 bench/data/make_mpt_h100_runs.py LLM_FOUNDRY_GIT_DIR > bench/data/published-runs-h100.csv

LLM_FOUNDRY_GIT_DIR is a clone of github.com/mosaicml/llm-foundry (Apache-2.0); the README is read
at COMMIT. Model dimensions come from the A100 file's MPT rows (the same yamls); every value is
copied from the table, the quote is the table's row.

The attention implementation goes in `source` ("attn_impl triton" or "attn_impl flash"), from the
scripts that made each table: the large-scale table (added in 5e85bd62, 2024-01-06) by that
commit's sweep.py, which passes --attn_impl flash for 1b, 3b, 7b and 70b and triton for 13b and
30b, with flash-attn 2 installed (.[gpu-flash2]); the other H100 tables (added in b2a43a147,
2023-10-19) by that commit's sweep.sh, which never sets --attn_impl, so submit_benchmarks.py's
default, triton (flash-attn 1.0.x's Triton kernel), ran.
"""
import csv
import subprocess
import sys

COMMIT = "8c8dd48f72168c5d51e2f7b151595892a8fba43d"
PATH = "scripts/train/benchmarking/README.md"
SECTIONS = {
    "## H100 80GB BF16 (Large Scale, >= 128 GPUs)": "h100_ls",
    "## H100 80GB BF16": "h100",
    "## H100 80GB FP8": "h100_fp8",
}
A100 = "../shared/reference/published-runs-a100.csv"


def main():
    readme = subprocess.run(["git", "-C", sys.argv[1], "show", f"{COMMIT}:{PATH}"], check=True,
                            capture_output=True, text=True).stdout
    dims = {}
    for r in csv.DictReader(open(A100)):
        if r["id"].startswith("mpt_"):
            dims[r["model"]] = {k: r[k] for k in ("h", "a", "a_kv", "L", "ffn", "vocab")}
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["id", "source", "model", "h", "a", "a_kv", "L", "ffn", "vocab", "seq",
                  "micro_batch", "global_batch", "tp", "pp", "dp", "cp", "gpus", "gpu", "dtype",
                  "recompute", "seq_parallel", "metric", "value", "unit", "source_repo_or_url",
                  "commit_or_date", "quote"])
    section, n = None, 0
    for line in readme.splitlines():
        if line.startswith("## "):
            section = SECTIONS.get(line.strip())
            heading = line.strip()
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if section is None or len(cells) != 20 or not cells[1].isdigit():
            continue
        (size, seq, gpus, _gpu, mfu, _hfu, tflop, mb, _accum, gbs, _sps, _tps, tps_gpu, _gbt,
         precision, _mp, sharding, ckpt, _offload, _nparams) = cells
        model = f"MPT-{size}"
        flash = section == "h100_ls" and size in ("1b", "3b", "7b", "70b")
        attn = "attn_impl flash" if flash else "attn_impl triton"
        if model not in dims:
            sys.exit(f"no dimensions for {model}")
        n += 1
        base = f"mpt_{section}_{n:03d}_{size}_s{seq}_g{gpus}_mb{mb}"
        for metric, suffix, value, unit in (("mfu", "mfu", mfu, "percent"),
                                            ("tokens_per_s_per_gpu", "tok", tps_gpu,
                                             "tokens/s/GPU"),
                                            ("tflops_per_gpu", "tflops", tflop,
                                             "model TFLOP/s/GPU")):
            d = dims[model]
            out.writerow([f"{base}_{suffix}", f"llm-foundry MPT benchmarks (FSDP; {sharding}; {attn})",
                          model, d["h"], d["a"], d["a_kv"], d["L"], d["ffn"], d["vocab"], seq, mb,
                          gbs, 1, 1, gpus, 1, gpus, "H100-80GB SXM (MosaicML platform)",
                          precision, "full" if ckpt == "True" else "none", "no", metric, value,
                          unit, f'github.com/mosaicml/llm-foundry {PATH} (section "{heading}")',
                          f"{COMMIT} (tables from b2a43a1477a45f40f4086a1c72f851b0ab42d0ac, "
                          "2023-10-19)", line.strip()])


if __name__ == "__main__":
    main()
