"""The schema of bench/data's published-run CSVs, shared by the make_*_runs.py generators:
../shared/reference/published-runs-a100.csv's columns plus vp, ep, fsdp and config
(bench/published_runs reads them), and a writer of rows in it to standard output."""
import csv
import sys

COLUMNS = ["id", "source", "model", "h", "a", "a_kv", "L", "ffn", "vocab", "seq", "micro_batch",
           "global_batch", "tp", "pp", "dp", "cp", "vp", "ep", "fsdp", "gpus", "gpu", "dtype",
           "recompute", "seq_parallel", "config", "metric", "value", "unit",
           "source_repo_or_url", "commit_or_date", "quote"]


def writer():
    """A csv.DictWriter over COLUMNS to standard output, its header written."""
    out = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")
    out.writeheader()
    return out
