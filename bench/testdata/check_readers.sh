#!/usr/bin/env bash
# CTest published_runs_reads_rows: which catalogued GPU and attention bench/published_runs takes
# (and for its MoE rows, which expert dispatch and overlap) for each synthetic row of
# published-runs-readers.csv (bench/testdata/README.md).
# usage: check_readers.sh PUBLISHED_RUNS_BINARY
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$("$1" --components "$here/published-runs-readers.csv" 2>&1)
fail=0
expect() {  # ROW_ID TEXT: the row's line or its components line (the one after it) holds TEXT
  local got
  got=$(printf '%s\n' "$out" | grep -A1 "^$1 " | tr '\n' ' ')
  if [[ "$got" != *"$2"* ]]; then
    echo "FAIL $1: expected \"$2\", got: $got"
    fail=1
  fi
}
expect nemo_2407_board-sxm_tok "on h100-sxm, flash2 attention"      # launcher NVTE_FUSED_ATTN: 0
expect nemo_longseq_board-sxm_tok "on h100-sxm, flash2 attention"   # 24.03.01, the same
expect nemo_2409_board-sxm_tok "on h100-sxm, flash attention"       # 24.09 on: cuDNN's
expect nemo_x_board-nvl_tok "on h100-nvl, flash attention"          # NVL, not NVLink's prefix
expect nemo_2409_board-pcie_tok "on h100-pcie,"
expect nemo_2409_board-h200nvl_tok "on h200-nvl,"
expect nemo_2409_board-h200_tok "on h200,"
expect nemo_2409_board-smi_tok "on h100-sxm,"                       # nvidia-smi's name
expect nemo_2409_board-b200_tok "on b200,"                          # by the catalogue's names
expect nemo_2409_board-gh200_tok "GH200's GPU is not catalogued"    # refused, with the reason
# Megatron-Bridge's Qwen3-30B-A3B configs by release, the patch level read (ReleaseOf)
expect mbridge_2511_release-moe_tok "alltoall dispatch, overlapped;"    # v0.2.0
expect mbridge_2602_release-moe_tok "flex dispatch, overlapped;"        # v0.3.0: DeepEP, overlap
expect mbridge_260201_release-moe_tok "flex dispatch;"                  # v0.3.1: HybridEP, none
expect mbridge_260201_idonly-moe_tok "flex dispatch;"                   # the id's YYMMPP
[[ $fail == 0 ]] && echo "published_runs reads every row's GPU and release as expected"
exit $fail
