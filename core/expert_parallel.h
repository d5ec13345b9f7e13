// Expert parallelism as the planner prices it (core/parallelism.h): which ranks hold an MoE
// layer's experts, how many copies of a token the dispatchers send where (Megatron-Core's
// alltoall and flex dispatchers, balanced or group-limited routing), and what one micro-batch's
// all-to-alls through a stage's MoE layers cost. PREDICTIONS, as everything of the planner.
#ifndef WAVECREST_CORE_EXPERT_PARALLEL_H_
#define WAVECREST_CORE_EXPERT_PARALLEL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model_spec.h"

namespace wavecrest {

struct Analysis;
struct RunConfig;
struct StepBreakdown;

// Megatron-Core's token dispatchers for expert parallelism. kAllToAll ("alltoall"): NCCL
// all-to-all of one copy per routed expert, as the router's k choices lay them out. kFlex ("flex",
// the DeepEP and HybridEP backends): each token crosses the network once per destination node and
// NVLink once per destination rank, whatever the number of its experts there (DeepEP's
// dispatch and combine: RDMA to the GPU of the same index in the node, which forwards over
// NVLink; arXiv:2412.19437 sec. 3.2.2).
enum class EpDispatcher { kAllToAll, kFlex };
// "alltoall" or "" (the default) and "flex" (also "deepep", "hybridep", its backends); otherwise
// InvalidArgument naming the allowed values (the caller names the field).
absl::StatusOr<EpDispatcher> ParseEpDispatcher(absl::string_view name);

// The ranks an expert-parallel group is drawn from with d data-parallel ranks: d·c, times t with
// whole experts (expert_tensor_parallel 1); e of them form a group, pool/e hold the same experts.
int64_t ExpertPool(const ModelSpec& s, int64_t d);

// One micro-batch's expert-parallel all-to-alls through `moe_layers` MoE layers of one stage
// (dispatch and combine, forward and backward), seconds; 0 without expert parallelism.
double ExpertParallelS(const Analysis& a, const RunConfig& run, double moe_layers);

// The fraction of a link the flex dispatcher's kernels reach (DeepEP's measured normal kernels;
// expert_parallel.cc cites them): NVLink's, or the network's with e ranks.
double FlexLinkEfficiency(bool network, int64_t e);

// The shortest a dispatch and a combine over e ranks across nodes take (DeepEP's low-latency
// kernels of that EP size), at a NIC of `nic_bytes_per_s`.
struct EpCallFloor {
  double dispatch_s = 0, combine_s = 0;
};
EpCallFloor CallFloor(int64_t e, double nic_bytes_per_s);

// SMs the expert-parallel dispatch kernels hold while they run beside compute (Megatron-Core's
// --overlap-moe-expert-parallel-comm): Megatron-Core's default for DeepEP,
// TransformerConfig.moe_deepep_num_sms = 20 (megatron/core/transformer/transformer_config.py;
// DeepEP's own example sets 24 of an H800's 132, its V2 4-6), taken for NCCL's all-to-all too.
inline constexpr double kEpOverlapSms = 20;

// The expert-parallel all-to-alls of a step's `microbatches` (each `ep_comm` seconds through the
// stage, beside `moe_compute` seconds of its MoE layers), exposed: all of them, or with
// RunConfig::ep_overlap all but what another micro-batch's MoE layers hide, plus the slowdown of
// that compute while the dispatch kernels hold kEpOverlapSms of the SMs.
double EpOverlapS(const Analysis& a, const RunConfig& run, double ep_comm, double moe_compute,
                  double microbatches);

// The host wait of one MoE layer and micro-batch (RunConfig::moe_host_s, else kMoeHostWaitS for
// dropless experts, 0 with a capacity factor).
double MoeHostWaitS(const ModelSpec& s, const RunConfig& run);

// The host waits of a step's `microbatches` through a stage of `moe_layers` MoE layers: each
// micro-batch's, or with RunConfig::ep_overlap less the GPU's idle share of them (kMoeHostIdleS,
// at most the whole wait) for every micro-batch but one, whose queued kernels fill the gap
// (the unpaired first forward and last backward wait as without).
double MoeHostStepS(const ModelSpec& s, const RunConfig& run, double moe_layers,
                    double microbatches);

// What a step assumed of expert parallelism, in words.
std::string ExpertParallelAssumption(const ModelSpec& s, const RunConfig& run,
                                     const StepBreakdown& r);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_EXPERT_PARALLEL_H_
