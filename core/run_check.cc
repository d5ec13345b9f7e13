// CheckRun (core/run_check.h): a training run's ranks from its GPUs and global batch, and its
// settings checked against the model it runs.
#include "core/run_check.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/expert_parallel.h"
#include "core/network.h"
#include "core/status_macros.h"

namespace wavecrest {
namespace {

// The run's ranks: data-parallel degree `d` (from num_gpus, else the spec's, else the fewest that
// hold the expert-parallel group) and micro-batches per step `m` (from global_batch).
absl::Status ResolveRanks(const ModelSpec& s, const RunConfig& run, int64_t tp, int64_t* d,
                          int64_t* m) {
  const int64_t b = s.micro_batch_size;
  if (run.num_gpus < 0 || run.global_batch < 0) {
    return absl::InvalidArgumentError("run: num_gpus and global_batch must be >= 0");
  }
  if (run.num_gpus > 0 && run.num_gpus % tp != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.num_gpus: must be a multiple of tensor_parallel × pipeline_parallel × "
                     "context_parallel (",
                     tp, "); got ", run.num_gpus));
  }
  *d = run.num_gpus > 0 ? run.num_gpus / tp : std::max<int64_t>(s.data_parallel, 1);
  // No data parallelism stated but expert parallelism: the fewest data-parallel ranks that hold
  // the expert-parallel group (e ranks of d·c).
  if (run.num_gpus == 0 && *d == 1 && s.expert_parallel > 1) {
    *d = s.expert_parallel / std::gcd(s.expert_parallel, ExpertPool(s, 1));
  }
  const int64_t per_step = b * *d;
  const int64_t global = run.global_batch > 0 ? run.global_batch : per_step * s.pipeline_parallel;
  if (global % per_step != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.global_batch: must be a multiple of micro_batch_size × data-parallel "
                     "ranks (",
                     per_step, "); got ", global));
  }
  *m = global / per_step;
  if (s.expert_parallel > 1 && ExpertPool(s, *d) % s.expert_parallel != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.expert_parallel: must divide the data- × context-parallel ranks (", *d, " × ",
        s.context_parallel,
        ExpertTensorParallel(s) == s.tensor_parallel
            ? ""
            : absl::StrCat(" × the ", s.tensor_parallel, " tensor-parallel ranks of whole experts"),
        "), whose ranks it splits the experts over; got ", s.expert_parallel));
  }
  return absl::OkStatus();
}

// FP8's settings: the weights' gathers in FP8 and the scaling recipe.
absl::Status CheckFp8Settings(const ModelSpec& s, const RunConfig& run) {
  // (With --plan the plan picks the ZeRO stage, and gathers in FP8 only where it has one.)
  if (run.fp8_param_gather && (s.dtype != DType::kFp8E4M3 || (run.zero_stage < 1 && !run.plan))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run.fp8_param_gather: needs dtype fp8_e4m3 and zero_stage >= 1 (the weights gathered "
        "in FP8 by the distributed optimizer or FSDP); got dtype ",
        DTypeName(s.dtype), ", zero_stage ", run.zero_stage));
  }
  if (run.fp8_recipe == Fp8Recipe::kRowwise && run.fp8_param_gather) {
    return absl::InvalidArgumentError(
        "run.fp8_recipe: rowwise with fp8_param_gather; FSDP's float8 all-gather is tensorwise "
        "only (torchao), so gather the weights in 16 bits (fp8_param_gather off) or use "
        "fp8_recipe tensorwise");
  }
  return absl::OkStatus();
}

// The run's schedule and communication settings: interleaving, ZeRO, gradient precision, overlaps,
// the network and FP8's (CheckFp8Settings).
absl::Status CheckRunSettings(const ModelSpec& s, const RunConfig& run) {
  // Stages of unequal layers interleave too (Megatron-Core's layouts with the embedding and the
  // loss counted as layers: Llama 3.1 405B's 126 layers on 8 stages of 8 chunks): the chunks
  // of a middle stage must be equal, the end stages' fewer layers sit in their end chunks.
  const PipelineSplit split = SplitLayers(s.num_layers, s.pipeline_parallel);
  const int64_t stage_layers = split.middle;
  if (run.interleave < 1 || stage_layers % run.interleave != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.interleave: must be >= 1 and divide the layers per stage (", stage_layers,
                     "); got ", run.interleave));
  }
  if (run.zero_stage < 0 || run.zero_stage > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.zero_stage: must be 0, 1, 2 or 3; got ", run.zero_stage));
  }
  if (run.gradient_bytes != 0 && run.gradient_bytes != 2 && run.gradient_bytes != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.gradient_bytes: must be 0 (= 4), 2 or 4; got ", run.gradient_bytes));
  }
  if (!(run.tp_overlap >= 0 && run.tp_overlap <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.tp_overlap: must be in [0, 1]; got ", run.tp_overlap));
  }
  if (run.moe_host_s && !(*run.moe_host_s >= 0 && *run.moe_host_s <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.moe_host_s: must be in [0, 1] seconds; got ", *run.moe_host_s));
  }
  if (run.sustained_gemm_stretch &&
      !(*run.sustained_gemm_stretch >= 1 && *run.sustained_gemm_stretch <= 2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run.sustained_gemm_stretch: must be in [1, 2] (1 = the cost model's rates); got ",
        *run.sustained_gemm_stretch));
  }
  if (run.recompute_moe && s.num_experts == 0) {
    return absl::InvalidArgumentError(
        "run.recompute_moe: recomputes the MoE layers: the model needs num_experts > 0");
  }
  if (run.recompute_mla_up_proj && s.kv_lora_rank == 0) {
    return absl::InvalidArgumentError(
        "run.recompute_mla_up_proj: recomputes multi-latent attention's up-projections: the "
        "model needs kv_lora_rank > 0 (MLA)");
  }
  if (run.mtp_layers < 0 || run.mtp_layers > 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.mtp_layers: must be in [0, 8]; got ", run.mtp_layers));
  }
  if (!(run.dp_overlap >= 0 && run.dp_overlap <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.dp_overlap: must be in [0, 1]; got ", run.dp_overlap));
  }
  if (!run.network.empty()) {
    if (absl::StatusOr<const NetworkProfile*> n = FindNetwork(run.network); !n.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("run.network: ", n.status().message()));
    }
  }
  return CheckFp8Settings(s, run);
}

}  // namespace

absl::Status CheckRun(const ModelSpec& s, const RunConfig& run, int64_t tp, int64_t* d,
                      int64_t* m) {
  RETURN_IF_ERROR(ResolveRanks(s, run, tp, d, m));
  RETURN_IF_ERROR(CheckRunSettings(s, run));
  // Hybrid sharding: groups that tile the data- and context-parallel ranks, under ZeRO-3 (the plan
  // picks the stage: it keeps the groups only where it picks 3).
  const int64_t ranks = *d * std::max<int64_t>(s.context_parallel, 1);
  if (run.fsdp_shard < 0 || (run.fsdp_shard > 0 && ranks % run.fsdp_shard != 0) ||
      (run.fsdp_shard > 0 && run.zero_stage != 3 && !run.plan)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run.fsdp_shard: must be 0 (shard over all) or divide the ", ranks,
        " data- and context-parallel ranks, with zero_stage 3; got ", run.fsdp_shard,
        " at zero_stage ", run.zero_stage));
  }
  return absl::OkStatus();
}

}  // namespace wavecrest
