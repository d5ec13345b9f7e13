// Step time of a training run under Megatron-style parallelism, from one micro-batch's analysis
// (core/analysis.h: every GEMM and elementwise kernel of the model on one tensor-parallel rank):
//
//   step = (m + (p-1)/v) · S  +  pipeline sends  +  exposed gradient reduction  +  optimizer
//   S    = one micro-batch through the slowest pipeline stage: its compute (the stage's layers,
//          and the logits and loss on the last), recomputation, and its tensor-parallel
//          collectives, which sit on the critical path
//
// with t, p, c, d the tensor-, pipeline-, context- and data-parallel degrees (t·p·c·d GPUs; c
// ranks split each sequence and hold the same weights, so gradients reduce over d·c), m = global
// batch / (b·d)
// micro-batches per step, v interleaved virtual stages (the 1F1B bubble is (p-1)/v of a stage's
// micro-batch time; Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
// Clusters Using Megatron-LM"). Collectives use the ring cost model (an all-reduce moves
// 2(n-1)/n of the message per GPU, a reduce-scatter or all-gather (n-1)/n, each step paying a
// latency) at kCollectiveEfficiency of the link (NVLink inside the node's domain, the network
// across nodes). Tensor-parallel collectives per layer and micro-batch follow Korthikanti et al.
// 2022 ("Reducing Activation Recomputation in Large Transformer Models"): four all-reduces of
// b·s·h activations (two forward, two backward), or with sequence parallelism four all-gathers and
// four reduce-scatters plus the two all-gathers backward re-does; full recomputation adds the
// forward's. Context parallelism passes each rank's K and V around a ring of c ranks (c - 1
// sends forward; backward K, V and their gradients; Megatron-Core overlaps each send with a block
// of attention), so only what exceeds the attention kernels' time counts. Expert parallelism
// (e ranks of the data- and context-parallel ones splitting each MoE layer's experts) adds its
// all-to-alls per MoE layer (dispatch and combine, forward and backward) and reduces the experts'
// gradients over the d·c/e ranks holding the same ones. Activation offload
// copies what each layer stores to the host during forward and back during backward, over
// PCIe at kHostCopyEfficiency, overlapped with the layers' compute. Everything here is a
// PREDICTION.
#ifndef WAVECREST_CORE_PARALLELISM_H_
#define WAVECREST_CORE_PARALLELISM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/analysis.h"
#include "core/expert_parallel.h"
#include "core/memory.h"
#include "core/planner_bands.h"

namespace wavecrest {

// Fraction of a link's per-direction bandwidth a large NCCL collective reaches (bus bandwidth).
// PRIOR, not fitted: published nccl-tests all-reduce runs span it, 8 A100 SXM over NVSwitch about
// 200 GB/s of 300 (0.67; NVIDIA/nccl-tests issue 149), 8 H200 475 GB/s of 450 with NVLink SHARP
// (1.06; issue 272), and the Selene step times it reproduces within 6.5%
// (bench/results/megatron_validation.txt) do not pin it further.
inline constexpr double kCollectiveEfficiency = 0.80;
// Bytes per parameter the Adam step reads and writes with mixed precision: FP32 master weights,
// first and second moments (read and written: 24), the FP32 gradient (read: 4) and the 16-bit
// weights (written: 2). Megatron keeps FP32 main gradients (bf16 always; fp16 too).
inline constexpr double kAdamBytesPerParam = 30;
// What a dropless MoE layer waits on the host per micro-batch, forward and backward together: the
// dispatcher reads the layer's tokens per expert back to the CPU (DeepEP: "the CPU will wait for
// GPU's signal", its V1 README; Megatron-Core: "the device-host sync in the MoE model ... to get
// the tokens per expert information"), and the routed experts' kernels, of dynamic shapes, are
// launched one by one outside any CUDA graph (Megatron-Core's DeepSeek-V3 GB200 tuning log,
// docs/discussions/deepseek-v3-gb200-optimization, sec. 2.3 and 3.1). FITTED, 3 ms: the value of
// 0-8 ms in steps of 0.5 that minimises the median |error| of NVIDIA's 19 Megatron-Bridge MoE
// runs (bench/data/published-runs-nemo-h100.csv: 68.1% -> 13.8%), held out on NeMo AutoModel's 6
// PyTorch MoE runs (2.1% -> 10.6% median, 9.6% -> 15.4% p90); fitted on those 6 instead it is 0
// (their misses lie elsewhere: docs/cost-model.md). The tuning log's own figures put what CUDA
// graphs and CPU-side work removed at about 2.1 ms each per layer and micro-batch on GB200.
inline constexpr double kMoeHostWaitS = 3e-3;
// Of that wait, what leaves the GPU idle: the gap while the host waits for the tokens per expert
// before it can launch the rest of the layer, which another micro-batch's kernels, already
// queued, fill under the expert-parallel overlap (RunConfig::ep_overlap). MEASURED, one profile:
// Megatron-Bridge's MoE overlap skill (skills/nemo-mbridge-perf-moe-comm-overlap, 2026-07-25,
// Qwen3-30B-A3B on 16 H100, 48 MoE layers, 64 micro-batches) logs a step of 24.714 s with a
// GPU-active interval union of 22.821 s without the overlap, 1.893 s idle, 0.62 ms per MoE layer
// and micro-batch (an upper bound: every idle gap is counted as the MoE layers'), and with the
// overlap a union of 21.221 s against a 20.992 s step, none idle; its metadata-preprocess range
// falls from 3.109 s to 0.670 s. Held out on the skill's alltoall pair (41.25 s / 31.31 s), which
// has no profile.
inline constexpr double kMoeHostIdleS = 0.6e-3;
// Share of the tensor-parallel collectives TorchTitan's async TP (PyTorch's micro-pipelined
// all-gather and reduce-scatter matmuls) hides under its GEMMs. FITTED, not a default of a
// framework: the median of the four pairs (vanilla and async TP, BF16 and tensorwise float8,
// Llama 3.1 70B on 256 and 8B on 64 H100s) of torchtitan's
// benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md, each the share of the planner's
// collective time its measured speed-up implies (0.34-0.75); held out, its December 2024 pair
// (1.057x measured, 1.085x predicted) and its 405B pipelined rows
// (bench/data/fit_async_tp_share.py, bench/results/async_tp_share.txt). Hiding all of them, as
// Transformer Engine's userbuffers overlap is priced, predicts 1.23-1.36x for those pairs where
// they measured 1.09-1.16x. (0.38 before tensorwise float8's all-gathers were priced in FP8,
// 0.42 before the compiled runs' unfused RoPE was.)
inline constexpr double kAsyncTpHiddenShare = 0.43;
// How an FP8 step scales its linears' operands (RunConfig::fp8_recipe; dtype FP8 only).
// - kTensorwise ("tensorwise", the default): one scale per tensor, as Transformer Engine's delayed
//   and current scaling and torchao's "tensorwise" recipe. The linears' inputs and output
//   gradients are cast before the tensor-parallel all-gathers, which then move 1 byte an element:
//   TE gathers its norm's FP8 output (LayerNormLinear and LayerNormMLP forward, again for wgrad)
//   and casts the output gradient before gathering it (grad_output_preprocess); torchao's
//   Float8ColwiseParallel and PrepareFloat8ModuleInput cast before the all-gather and
//   Float8RowwiseParallel casts the gradient before its backward all-gather (torchtitan's
//   float8 tensor parallelism). The reduce-scatters stay 16-bit.
// - kRowwise ("rowwise"): one scale per row, torchao's "rowwise" recipe (torch._scaled_mm's
//   row-scaled kernel). torchtitan runs its tensor parallelism in 16 bits for it ("float8
//   all-gather with TP is only supported for tensorwise", models/llama3/parallelize_llama.py at
//   820504e) and FSDP's float8 all-gather is tensorwise only.
enum class Fp8Recipe { kTensorwise, kRowwise };
// "tensorwise" or "" (the default) and "rowwise"; otherwise InvalidArgument naming the allowed
// values (the caller names the field).
absl::StatusOr<Fp8Recipe> ParseFp8Recipe(absl::string_view name);
absl::string_view Fp8RecipeName(Fp8Recipe r);

// How context parallelism's ring runs (RunConfig::cp_ring):
// - kTe ("te", the default): Transformer Engine's ring (Megatron-Core's default --cp-comm-type
//   p2p): each step sends the chunk of K and V of the rank's KV heads to the next rank beside the
//   step's attention; backward sends K, V and their 16-bit gradients.
// - kTorch ("torch"): PyTorch's context_parallel (torch.distributed.tensor.experimental.
//   _attention, TorchTitan's CP, its default rotate method "allgather"): torchtitan repeats the
//   KV heads to the query heads before SDPA (repeat_kv, models/llama/model.py at 9dec370), so
//   K and V of every query head travel; they are all-gathered once per layer, the gather waited
//   on after the first step's attention only (_AllGatherRotater), in forward and again in
//   backward; backward rotates the gradients of K and V in FP32 (accum_dtype float32, an
//   all-to-all each step, _templated_ring_attention_backward), the last one waited on after the
//   layer's last step.
enum class CpRing { kTe, kTorch };
// "te" or "" (the default) and "torch"; otherwise InvalidArgument naming the allowed values.
absl::StatusOr<CpRing> ParseCpRing(absl::string_view name);
absl::string_view CpRingName(CpRing r);

// Fraction of the PCIe link a pinned device-host copy reaches. PRIOR, not fitted to our own
// measurements: NVIDIA's nvbandwidth host_to_device_memcpy_ce example reports 55.6 GB/s on a
// PCIe 5.0 x16 GPU (87% of 64), rounded down for copies that share the link with the network.
inline constexpr double kHostCopyEfficiency = 0.80;

struct RunConfig {
  int64_t num_gpus = 0;      // 0: t·p·d, d = the spec's data_parallel (0 = 1)
  int64_t global_batch = 0;  // sequences per step; 0: b·d·p (m = p, the fewest that fill 1F1B)
  int64_t interleave = 1;    // virtual pipeline stages per rank (v)
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  double dp_overlap = 0;  // fraction of the gradient reduction hidden under the backward pass
  // Megatron-Core's overlap_grad_reduce / overlap_param_gather (on in NVIDIA's NeMo and
  // Megatron-Bridge recipes, off in Megatron-LM unless given): the gradient reduction runs beside
  // the last micro-batch's backward and the weights' all-gather beside the first's forward, which
  // hide up to one micro-batch's compute of the stage; the rest is exposed. ZeRO-3 has its own
  // layer-by-layer schedule (zero3_prefetch).
  bool overlap_grad_reduce = false;
  // Megatron-Core's --overlap-moe-expert-parallel-comm (off by default there; on in NVIDIA's
  // DeepSeek-V3 and Qwen3-MoE perf recipes): one micro-batch's expert-parallel all-to-alls run
  // under another's compute (the forward of one beside the backward of the next), so each
  // micro-batch hides up to its MoE layers' compute of the stage; the first forward and the
  // last backward have no partner and stay exposed.
  bool ep_overlap = false;
  // How the expert-parallel tokens travel (Megatron-Core's moe_token_dispatcher_type).
  EpDispatcher ep_dispatcher = EpDispatcher::kAllToAll;
  // Seconds the GPU waits on the host per MoE layer and micro-batch (forward and backward
  // together): unset, kMoeHostWaitS for dropless experts (their token counts are read back to the
  // CPU every layer, and their kernels cannot be captured in CUDA graphs), 0 with a capacity
  // factor (static shapes); set, that.
  std::optional<double> moe_host_s;
  // How much longer the step's GEMMs take under sustained load than the cost model's rates
  // (SplitMicroBatch): unset, the GPU's GpuSpec::sustained_gemm_stretch; set, that, in [1, 2].
  std::optional<double> sustained_gemm_stretch;
  // FP8 training with the weights kept and all-gathered in FP8 (Megatron-Core's
  // --fp8-param-gather, on in Megatron-Bridge's FP8 recipes; torchao's FSDP float8 all-gather):
  // the distributed optimizer's and FSDP's weight all-gathers move 1 byte per weight instead of
  // 2, and the weights take 1 byte of memory. Needs dtype FP8 and ZeRO stage >= 1.
  bool fp8_param_gather = false;
  // How an FP8 step scales its linears' operands (Fp8Recipe; dtype FP8 only).
  Fp8Recipe fp8_recipe = Fp8Recipe::kTensorwise;
  // How context parallelism's ring runs (CpRing: Transformer Engine's, the default, or
  // PyTorch's context_parallel as TorchTitan runs it); nothing without context parallelism.
  CpRing cp_ring = CpRing::kTe;
  // How the loss over the logits runs (LossKernel: fused, the default, or PyTorch's eager
  // cross_entropy over an FP32 copy): its memory and, eager, its extra traffic.
  LossKernel loss = LossKernel::kFused;
  // Fraction of the tensor-parallel collectives hidden under the GEMMs they feed (Megatron-Core's
  // --tp-comm-overlap, off by default there: 0).
  double tp_overlap = 0;
  // ZeRO over the data-parallel ranks: 1 shards the optimizer state (Megatron's distributed
  // optimizer: gradients reduce-scattered and weights all-gathered instead of all-reduced), 2
  // the gradients too, 3 (FSDP) the weights too (all-gathered again for forward and backward).
  int zero_stage = 0;
  // Activations to host memory and back (MemoryLayout::offload_activations); the copies overlap
  // the layers' compute, what does not fit under it is `offload_s`.
  bool offload_activations = false;
  // Bytes per gradient (MemoryLayout::gradient_bytes): 0 or 4 FP32, 2 16-bit.
  int gradient_bytes = 0;
  // ZeRO-3 (FSDP) with its gathers and reduce-scatters hidden layer by layer under the compute
  // (FSDP's prefetch, ideal). Off by default: the published FSDP runs measure as if every one
  // were exposed (MosaicML's llm-foundry tables with forward and backward prefetch on, A100 and
  // H100, and DeepSpeed's ZeRO-3 in Narayanan et al. 2021: bench/results/published_runs_*.txt);
  // NCCL's kernels share the SMs and HBM with the layers they run beside.
  bool zero3_prefetch = false;
  // Hybrid sharding (HSDP, FSDP2's 2-D device mesh, DeepSpeed's hpZ-like groups): ZeRO-3 shards
  // over groups of this many data- and context-parallel ranks (a node's 8, say) and the groups
  // all-reduce their shards' gradients as replicas; 0 = one group of all of them (FSDP).
  int64_t fsdp_shard = 0;
  // Eager PyTorch: the layers' elementwise ops each a kernel of its own (no torch.compile, no
  // fused norm or activation; core/elementwise_cost.h's EagerExtraBytesPerToken), priced on top
  // of the fused kernels the step otherwise assumes.
  bool eager = false;
  // The rotary embedding as its own kernels beside compiled ones (RopeUnfusedBytesPerToken:
  // TorchTitan's complex-number RoPE under torch.compile), priced as eager's; implied by eager.
  bool rope_unfused = false;
  // A MoE layer's expert ops as Megatron-Core's TEGroupedMLP runs them without fused MoE kernels
  // (core/elementwise_cost.h's MoeUnfusedOpsBytesPerToken: biased experts' output bias added
  // expert by expert in FP32, a clamped GLU's clamp outside the fused activation), priced on top
  // of the fused kernels the step otherwise assumes; nothing for experts with neither.
  bool moe_unfused_ops = false;
  // Megatron-Core's recompute_modules "moe" (Megatron-Bridge's Nemotron 3 recipes): each MoE
  // layer's forward (router, dispatch and combine all-to-alls, experts, shared expert) run again
  // in backward instead of keeping its MLP activations (MemoryLayout::recompute_moe). On top of
  // `recompute`.
  bool recompute_moe = false;
  // Megatron-Core's recompute_modules "mla_up_proj" (NVIDIA's DeepSeek-V3 recipes): multi-latent
  // attention's up-projections (the query's and the key-value latent's) and the rotary embedding
  // run again in backward, so that the full-head Q, K and V they make are not kept beside the
  // latents (MemoryLayout::recompute_mla_up_proj). Needs an MLA model; on top of `recompute`.
  bool recompute_mla_up_proj = false;
  // Multi-token prediction modules trained beside the model (DeepSeek-V3's one; Megatron-Core's
  // --mtp-num-layers), on the last pipeline stage: each one more transformer layer (priced as the
  // model's mean layer), its projection of the embedding and hidden states (2h × h), and one more
  // pass through the output layer and the loss. A training choice, not the model's: 0 = none.
  // Range [0, 8]. Their memory is not counted; MFU counts the model's FLOPs without them.
  int64_t mtp_layers = 0;
  // ZeRO-3 (FSDP2's reshard_after_forward): each layer's gathered weights freed after its forward
  // and gathered again for its backward (true, FSDP2's default), or kept from forward to backward
  // (false: one gather per layer and micro-batch, the stage's gathered weights held; TorchTitan's
  // default with pipeline parallelism, its "default" reshard_after_forward_policy = not
  // pp_enabled in torchtitan/models/llama3/infra/parallelize.py).
  bool reshard_after_forward = true;
  // Pipeline sends overlapped with the next chunk's compute where the schedule allows it: the
  // interleaved schedule, as Megatron-LM runs it by default (overlap_p2p_comm, on since 2023-10;
  // --no-overlap-p2p-communication turns it off; the plain 1F1B schedule cannot). The warm-up's
  // and the flush's chains of sends stay exposed. False: every send exposed
  // (RunConfig.no_pp_overlap in the API).
  bool pp_overlap = true;
  // The network across nodes by name (core/network.h: hdr-ib, ndr-ib, ndr-ib-sharp, xdr-ib,
  // roce-100g ... roce-800g); empty: the GPU's reference system's.
  std::string network;
  // Choose sequence_parallel, recompute, zero_stage and offload_activations instead: the fastest
  // layout whose memory fits (PlanLayout).
  bool plan = false;
  // With `plan` and num_gpus: hold the spec's parallel degrees (core/layout_search.h searches
  // those left at 1 otherwise).
  bool keep_degrees = false;
  // Tokens to train on; above 0, the step says how long they take (StepBreakdown::time_to_train_s).
  double train_tokens = 0;
  // How MFU and TFLOP/s count attention's s × s products (core/model_stats.h): the whole product
  // (the default) or the causal half, as the user's framework counts them. Times do not change.
  FlopCount flop_count = FlopCount::kFull;
};

// Whether the step's tensor-parallel all-gathers move FP8 (dtype FP8 under kTensorwise).
bool Fp8TpGathers(const ModelSpec& s, const RunConfig& run);
// Whether layer-level activation offload runs beside these choices as Megatron-Core runs it: its
// cpu_offloading refuses pipeline parallelism ("Currently there is no support for Pipeline
// parallelism with CPU offloading") and any recomputation ("CPU offloading does not work when
// activation recomputation is enabled"; megatron/core/transformer/transformer_config.py at
// d98e8a6). `recompute_modules`: MLA's up-projections or the MoE layers rerun. Other stacks may
// (Meta's Llama 3 405B layout is planned with offload beside 16 stages: bench/data's
// published-runs-llama3-h100.md), so the plan still weighs it; where it picks it, or a run asks
// for it, elsewhere, the answer says Megatron-Core would refuse it.
bool OffloadRunsWith(int64_t pipeline_parallel, Recompute recompute, bool recompute_modules);
// Whether recompute_moe reruns the MoE layers' forward beyond what `recompute` already does (full
// and op-level recomputation rerun every layer's forward).
inline bool RecomputesMoeAlone(const RunConfig& run) {
  return run.recompute_moe && run.recompute != Recompute::kFull && run.recompute != Recompute::kOp;
}
// The same of recompute_mla_up_proj and MLA's up-projections.
inline bool RecomputesMlaUpAlone(const RunConfig& run) {
  return run.recompute_mla_up_proj && run.recompute != Recompute::kFull &&
         run.recompute != Recompute::kOp;
}


struct StepBreakdown {
  int64_t gpus = 0;
  int64_t nodes = 0;  // GPUs / the NVLink domain, rounded up
  int64_t tensor_parallel = 1, pipeline_parallel = 1, data_parallel = 1, context_parallel = 1;
  int64_t expert_parallel = 1;
  int64_t microbatches = 1;  // m, per data-parallel rank
  int64_t global_batch = 0;
  // The components, seconds per step; they add up to step_s.
  double compute_s = 0;    // m × the slowest stage's forward and backward
  double recompute_s = 0;  // m × its activation recomputation
  double tp_comm_s = 0;    // m × its tensor-parallel collectives
  double ep_comm_s = 0;    // m × its expert-parallel all-to-alls (dispatch and combine)
  double moe_host_s = 0;   // m × its MoE layers' waits on the host (RunConfig::moe_host_s)
  double cp_comm_s = 0;    // m × its context-parallel K/V ring sends not hidden under attention
  double offload_s = 0;    // m × its activation copies to and from the host not hidden
  double pp_bubble_s = 0;  // (p-1)/v stage micro-batch times idle
  double pp_comm_s = 0;    // activations and gradients between stages
  double dp_comm_s = 0;    // the gradient reduction not hidden under backward
  double optimizer_s = 0;  // Adam over this GPU's parameters (or its shard)
  double step_s = 0;
  double mfu = 0;  // model FLOPs per step / (step × GPUs × dense peak)
  // The same with attention's s × s products counted the other way (causal when flop_count is
  // full, full when causal): how far the convention moves it.
  double mfu_other_count = 0;
  int64_t tokens_per_step = 0;  // global_batch × the sequence length
  double tokens_per_s_per_gpu = 0;
  double model_flops_per_step = 0;  // counted as flop_count says
  double tflops_per_gpu = 0;        // model FLOPs per step / step / GPUs, in TFLOP/s
  FlopCount flop_count = FlopCount::kFull;
  MemoryEstimate memory;  // per GPU of the fullest stage (memory.stage), under this run's layout
  // The layout (as given, or as PlanLayout chose it).
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  bool recompute_mla_up_proj = false;  // RunConfig::recompute_mla_up_proj, as given or planned
  int zero_stage = 0;
  bool offload_activations = false;
  int64_t interleave = 1;  // virtual pipeline stages per rank
  int64_t micro_batch_size = 1;  // b: sequences per micro-batch (as given, or as planned)
  std::vector<std::string> assumptions;  // what the figures take for granted, in words
  // RunConfig::train_tokens, the steps they take (rounded up) × step_s, and that × gpus / 3600.
  double train_tokens = 0;
  double time_to_train_s = 0;
  double gpu_hours = 0;
  // The planner's error band for a run of this kind (PlannerBands): measured step time /
  // predicted - 1 at p10 and p90 over the published runs it was checked against.
  double band_p10 = 0;
  double band_p90 = 0;
  std::string band_kind;
  int band_runs = 0;
  // The catalogue GPUs those runs ran on (PlannerBandGpus), and whether this step's is one: a
  // step on another GPU carries the band as a prediction beyond what was checked.
  std::vector<std::string> band_gpus;
  bool band_gpu_checked = false;
};

// The planner's error bands by kind of run: core/planner_bands.h.

// The fastest of the layouts (sequence parallelism on or off × no, selective or full
// recomputation × ZeRO 0-3 × activation offload off or on × the interleave, ZeRO only with data
// or context parallelism) whose memory fits, with `run`'s GPUs, batch and overlap; when none
// fits, the one needing the least memory, saying so. An assumption line says what was chosen
// among how many. The interleave is `run`'s when it is above 1; otherwise, with pipeline stages,
// 1 or any divisor of the middle stages' layers up to kMaxPlannedInterleave (Megatron-Core's
// virtual stages), where the micro-batches make whole rounds of p.
absl::StatusOr<StepBreakdown> PlanLayout(const Analysis& analysis, const RunConfig& run);
inline constexpr int64_t kMaxPlannedInterleave = 8;

// What a plan says of the layout as given (`given`, named `given_words`) when the estimate puts it
// past the usable share of the GPU but inside the GPU and it would have been faster than the plan's
// `chosen`: published layouts that ran come out there (bench/published_runs' "memory:" line), so
// the answer names it rather than passing it over. Empty otherwise.
std::string OverMarginNote(const StepBreakdown& given, const StepBreakdown& chosen,
                           std::string_view given_words);
// A layout's memory-side choices in words (sequence parallelism, recomputation, ZeRO stage,
// offload, interleave).
std::string LayoutWords(const StepBreakdown& b);
// The interleaves PlanLayout weighs for `s` and `run`, and the layouts: `run` with each of them,
// each sequence parallelism, recomputation, ZeRO stage and offload (plan off).
std::vector<int64_t> CandidateInterleaves(const ModelSpec& s, const RunConfig& run);
std::vector<RunConfig> CandidateLayouts(const ModelSpec& s, const RunConfig& run);

// With `run.plan`, a training spec whose micro-batch is not given (micro_batch_size 0) and a
// global batch: the micro-batch too. Each of kPlannedMicroBatches that divides the sequences per
// data-parallel rank is analysed anew (its GEMMs are another shape) and its layout planned
// (PlanLayout); the fastest whose memory fits wins, else 1. `micro_batch` is 0 where nothing was
// planned (the spec's own stands), and `assumption` then empty; otherwise `step` is the chosen
// micro-batch's planned step (without the assumption), so that it need not be planned again.
struct PlannedMicroBatch {
  int64_t micro_batch = 0;
  std::string assumption;
  std::optional<StepBreakdown> step;
};
inline constexpr int64_t kPlannedMicroBatches[] = {1, 2, 4, 8, 16};
PlannedMicroBatch PlanMicroBatch(const ModelSpec& spec, const GpuSpec& gpu, const RunConfig& run,
                                 PredictionMemo* memo = nullptr);

// INVALID_ARGUMENT naming the field for a run the spec cannot have (GPUs not a multiple of t·p·c,
// a global batch not a multiple of b·d, an interleave that does not divide the stage's layers).
absl::StatusOr<StepBreakdown> PlanStep(const Analysis& analysis, const RunConfig& run);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_PARALLELISM_H_
