#include "core/parallelism.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/collectives.h"
#include "core/context_parallel.h"
#include "core/micro_batch.h"
#include "core/expert_parallel.h"
#include "core/network.h"
#include "core/run_check.h"
#include "core/step_assumptions.h"
#include "core/status_macros.h"
#include "core/units.h"

namespace wavecrest {

absl::StatusOr<Fp8Recipe> ParseFp8Recipe(absl::string_view name) {
  if (name.empty() || name == "tensorwise") return Fp8Recipe::kTensorwise;
  if (name == "rowwise") return Fp8Recipe::kRowwise;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown value \"", name, "\"; allowed: tensorwise (the default), rowwise"));
}

absl::string_view Fp8RecipeName(Fp8Recipe r) {
  return r == Fp8Recipe::kRowwise ? "rowwise" : "tensorwise";
}

absl::StatusOr<CpRing> ParseCpRing(absl::string_view name) {
  if (name.empty() || name == "te") return CpRing::kTe;
  if (name == "torch") return CpRing::kTorch;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown value \"", name, "\"; allowed: te (the default), torch"));
}

absl::string_view CpRingName(CpRing r) { return r == CpRing::kTorch ? "torch" : "te"; }

bool Fp8TpGathers(const ModelSpec& s, const RunConfig& run) {
  return s.dtype == DType::kFp8E4M3 && run.fp8_recipe == Fp8Recipe::kTensorwise;
}

namespace {

// Activation offload of one micro-batch through one stage's `layers`, what compute does not hide:
// each layer's stored activations go to the host during forward and come back during backward.
double OffloadS(const Analysis& a, const RunConfig& run, double layers, double stored_per_layer,
                double forward_layer_s, double backward_layer_s) {
  if (!run.offload_activations) return 0;
  const double bw = a.gpu->link.host_bytes_per_s * kHostCopyEfficiency;
  if (bw <= 0) return 0;
  const double copy = stored_per_layer / bw;
  return layers * (std::max(0.0, copy - forward_layer_s) + std::max(0.0, copy - backward_layer_s));
}

// Tensor-parallel collectives of one micro-batch through one stage's `layers`.
double TensorParallelS(const Analysis& a, const RunConfig& run, double layers) {
  const ModelSpec& s = a.spec;
  const int64_t t = s.tensor_parallel;
  if (t <= 1) return 0;
  const double bytes = HiddenStatesBytes(s);
  const Path path = PathFor(*a.gpu, run, t);
  const bool full = run.recompute == Recompute::kFull;
  // The op-level policy keeps reduce-scatters' outputs and runs the other collectives again.
  const bool reruns = full || run.recompute == Recompute::kOp;
  double per_layer = 0;
  if (run.sequence_parallel) {
    // Forward: 2 all-gathers and 2 reduce-scatters; backward the same and 2 all-gathers re-done.
    // Under tensorwise FP8 every all-gather moves the FP8 copy (Fp8Recipe).
    const double gathers = 4 + 2 + (reruns ? 2 : 0);
    const double scatters = 4 + (full ? 2 : 0);
    const double gather_bytes = Fp8TpGathers(s, run) ? bytes / 2 : bytes;
    per_layer = gathers * GatherS(gather_bytes, t, path) + scatters * GatherS(bytes, t, path);
  } else {
    per_layer = (4 + (reruns ? 2 : 0)) * AllReduceOver(bytes, t, path);
  }
  return layers * per_layer;
}

// The ranks ZeRO shards over among the `replicas` holding the same weights: all of them, or under
// ZeRO-3 with hybrid sharding (RunConfig::fsdp_shard) a group of them.
int64_t ZeroShardRanks(const RunConfig& run, int64_t replicas) {
  return run.zero_stage >= 3 && run.fsdp_shard > 0 ? std::min(run.fsdp_shard, replicas)
                                                   : replicas;
}

// The memory layout a run implies, for EstimateMemory.
MemoryLayout LayoutOf(const RunConfig& run, const StepBreakdown& r) {
  MemoryLayout layout;
  layout.sequence_parallel = run.sequence_parallel;
  layout.recompute = run.recompute;
  layout.recompute_moe = run.recompute_moe;
  layout.recompute_mla_up_proj = run.recompute_mla_up_proj;
  layout.interleave = run.interleave;
  layout.microbatches = r.microbatches;
  layout.data_parallel = r.data_parallel;
  layout.zero_stage = run.zero_stage;
  layout.offload_activations = run.offload_activations;
  layout.gradient_bytes = run.gradient_bytes;
  layout.fp8_params = run.fp8_param_gather;
  layout.reshard_after_forward = run.reshard_after_forward;
  layout.loss = run.loss;
  layout.torch_cp_ring = run.cp_ring == CpRing::kTorch;
  layout.shard_group = run.zero_stage >= 3 ? run.fsdp_shard : 0;
  layout.mtp_layers = run.mtp_layers;
  return layout;
}

// Activations forward and gradients backward between pipeline stages for one step: per
// micro-batch and virtual stage, b·s·h/(t·c) each (Megatron's scatter-gather optimisation splits
// them over the TP ranks; each context-parallel rank sends its own part of the sequence).
double PipelineSendsS(const Analysis& a, const RunConfig& run, double microbatches) {
  const ModelSpec& s = a.spec;
  if (s.pipeline_parallel <= 1) return 0;
  const Path path =
      PathFor(*a.gpu, run, s.tensor_parallel * s.context_parallel * s.pipeline_parallel);
  const double bytes = HiddenStatesBytes(s) / static_cast<double>(s.tensor_parallel);
  const double send = bytes / path.bw + path.latency;
  if (PipelineSendsOverlapped(run)) {
    // Megatron-LM's overlap_p2p_comm: the steady state's sends run under the next chunk's compute;
    // the warm-up's forward chain and the flush's backward chain (p - 1 sends each) wait on them.
    return 2.0 * static_cast<double>(s.pipeline_parallel - 1) * send;
  }
  return microbatches * static_cast<double>(run.interleave) * 2 * send;
}

// ZeRO-3 (FSDP) with its layer-by-layer overlap, for one step of `microbatches`: per micro-batch
// each layer's 16-bit weights are gathered while the previous layer computes forward, gathered
// again and its gradients reduce-scattered while the next layer computes backward. Exposed: the
// first gather of each pass, the last reduce-scatter, and for the other layers what the
// collectives take beyond a layer's compute (forward_s, backward_s per layer and micro-batch).
double Zero3PrefetchS(double layer_weights, double layer_grads, int64_t layers, int64_t replicas,
                      const Path& path, double forward_s, double backward_s, double microbatches,
                      bool regather) {
  const double gather = GatherS(layer_weights, replicas, path);
  const double scatter = GatherS(layer_grads, replicas, path);
  const double overlapped = static_cast<double>(std::max<int64_t>(0, layers - 1));
  const double forward = gather + overlapped * std::max(0.0, gather - forward_s);
  // Without resharding after forward the backward has no gathers: its reduce-scatters only.
  const double again = regather ? gather : 0;
  const double backward =
      again + overlapped * std::max(0.0, again + scatter - backward_s) + scatter;
  return microbatches * (forward + backward);
}

// The gradient reduction of one step over the `replicas` ranks holding the same weights (data-
// and context-parallel; FP32 main gradients unless the run says 16-bit), and for the distributed
// optimizer the all-gather of the 16-bit weights after the step; what backward does not hide.
// ZeRO-3 with prefetch is Zero3PrefetchS (`layer` is one layer's forward and backward compute of
// one micro-batch, with recomputation).
double DataParallelS(const Analysis& a, const RunConfig& run, int64_t stride, int64_t replicas,
                     double params_per_gpu, double microbatches, double layer_forward_s,
                     double layer_backward_s) {
  if (replicas <= 1) return 0;
  const Path path = GroupPath(*a.gpu, run, replicas, stride);
  const int64_t layers = std::max<int64_t>(1, a.spec.num_layers / a.spec.pipeline_parallel);
  const double n = static_cast<double>(layers);
  const double grads = params_per_gpu * (run.gradient_bytes > 0 ? run.gradient_bytes : 4);
  const double weights = params_per_gpu * (run.fp8_param_gather ? 1 : 2);
  if (ZeroShardRanks(run, replicas) < replicas) {
    // Hybrid sharding: FSDP within each group of fsdp_shard ranks (consecutive: a node's), then
    // each micro-batch's gradient shards all-reduced over the replica groups, layer by layer
    // beside the reduce-scatters (FSDP2 reduces every backward).
    RunConfig within = run;
    within.fsdp_shard = 0;
    const int64_t groups = replicas / run.fsdp_shard;
    const double shard_grads = grads / static_cast<double>(run.fsdp_shard);
    const Path across = GroupPath(*a.gpu, run, groups, stride * run.fsdp_shard);
    return DataParallelS(a, within, stride, run.fsdp_shard, params_per_gpu, microbatches,
                         layer_forward_s, layer_backward_s) +
           microbatches * AllReduceOver(shard_grads, groups, across) * (1 - run.dp_overlap);
  }
  if (run.zero_stage >= 3) {
    // FSDP gathers the weights for every micro-batch's forward and backward and reduce-scatters
    // its gradients, layer by layer: overlapped with the layers' compute (prefetch), or not.
    if (run.zero3_prefetch) {
      // FSDP2's copies on the compute stream (torch/distributed/fsdp/_fully_shard/
      // _fsdp_collectives.py): each gather's output split into the layer's parameters after the
      // wait (foreach_all_gather_copy_out, split_with_sizes_copy: the gathered weights read and
      // written), and each reduce-scatter's input packed from the 16-bit gradients in the reduce
      // dtype before the reduce-scatter stream takes it (foreach_reduce_scatter_copy_in,
      // chunk_cat). Memory traffic, at the elementwise bandwidth.
      const double gathers = run.reshard_after_forward ? 2 : 1;
      const double copies = gathers * 2 * weights / n + (2 * params_per_gpu + grads) / n;
      return Zero3PrefetchS(weights / n, grads / n, layers, replicas, path, layer_forward_s,
                            layer_backward_s, microbatches, run.reshard_after_forward) +
             microbatches * n * copies / ElementwiseBandwidth(a.spec, *a.gpu);
    }
    const double gathers = run.reshard_after_forward ? 2 : 1;
    return microbatches * n *
           (gathers * GatherS(weights / n, replicas, path) + GatherS(grads / n, replicas, path));
  }
  double reduce = 0;
  if (run.zero_stage == 2) {
    // Sharded gradients cannot accumulate whole: every micro-batch's backward reduce-scatters
    // them, layer by layer as it finishes (PyTorch FSDP's SHARD_GRAD_OP; DeepSpeed's buckets),
    // and the weights are gathered layer by layer once a step.
    reduce = microbatches * n * GatherS(grads / n, replicas, path) +
             n * GatherS(weights / n, replicas, path);
  } else {
    reduce = run.zero_stage >= 1
                 ? GatherS(grads, replicas, path) + GatherS(weights, replicas, path)
                 : AllReduceOver(grads, replicas, path);
  }
  return reduce * (1 - run.dp_overlap);
}

// The gradient reduction and the optimizer step of one step (r.dp_comm_s, r.optimizer_s):
// parameters per GPU, the routed experts split over e ranks (and whole under tensor parallelism
// with expert_tensor_parallel 1), whose gradients reduce over the ranks holding the same experts;
// the rest over d·c.
// With overlap_grad_reduce, the reduction hides under one micro-batch's compute of the stage
// (`stage_compute`: its layers' forward and backward, with recomputation).
void ReduceAndUpdate(const Analysis& a, const RunConfig& run, double m, double forward_layer,
                     double layer_backward, double stage_compute, StepBreakdown& r) {
  const ModelSpec& s = a.spec;
  const GpuSpec& gpu = *a.gpu;
  const double model_parallel = static_cast<double>(s.tensor_parallel * s.pipeline_parallel);
  const double e = static_cast<double>(s.expert_parallel);
  const double whole = static_cast<double>(s.tensor_parallel / ExpertTensorParallel(s));
  const double expert_per_gpu =
      static_cast<double>(a.params.expert_params) / model_parallel * whole / e;
  const double dense_per_gpu =
      static_cast<double>(a.params.total_params - a.params.expert_params) / model_parallel;
  const int64_t replicas = r.data_parallel * s.context_parallel;
  const int64_t expert_replicas =
      std::max<int64_t>(1, ExpertPool(s, r.data_parallel) / s.expert_parallel);
  if ((s.expert_parallel <= 1 && whole == 1) || run.zero_stage >= 3) {
    // ZeRO-3's layer-by-layer overlap is priced over all of a GPU's parameters at once.
    r.dp_comm_s = DataParallelS(a, run, s.tensor_parallel, replicas,
                                dense_per_gpu + expert_per_gpu, m, forward_layer, layer_backward);
  } else {
    // The ranks holding the same experts are e expert-parallel groups of stride et apart.
    r.dp_comm_s = DataParallelS(a, run, s.tensor_parallel, replicas, dense_per_gpu, m,
                                forward_layer, layer_backward) +
                  DataParallelS(a, run, ExpertTensorParallel(s) * s.expert_parallel,
                                expert_replicas, expert_per_gpu, m, forward_layer, layer_backward);
  }
  if (run.overlap_grad_reduce && run.zero_stage < 3) {
    r.dp_comm_s = std::max(0.0, r.dp_comm_s - stage_compute);
  }
  const double optimizer_params =
      run.zero_stage >= 1 ? dense_per_gpu / static_cast<double>(ZeroShardRanks(run, replicas)) +
                                expert_per_gpu / static_cast<double>(expert_replicas)
                          : dense_per_gpu + expert_per_gpu;
  r.optimizer_s = optimizer_params * kAdamBytesPerParam /
                  (gpu.memory_bandwidth_bytes_per_s * gpu.Model(s.dtype).memory_efficiency);
}

// The step's layout, totals, assumptions and error band, once its components are priced.
void FinishStep(const Analysis& a, const RunConfig& run, double m, StepBreakdown& r) {
  const ModelSpec& s = a.spec;
  r.sequence_parallel = run.sequence_parallel;
  r.recompute = run.recompute;
  r.recompute_mla_up_proj = RecomputesMlaUpAlone(run);
  r.zero_stage = run.zero_stage;
  r.offload_activations = run.offload_activations;
  r.interleave = std::max<int64_t>(run.interleave, 1);
  r.micro_batch_size = s.micro_batch_size;
  r.step_s = r.compute_s + r.recompute_s + r.tp_comm_s + r.ep_comm_s + r.moe_host_s + r.cp_comm_s +
             r.offload_s + r.pp_bubble_s + r.pp_comm_s + r.dp_comm_s + r.optimizer_s;
  r.flop_count = run.flop_count;
  r.model_flops_per_step =
      a.flops.ModelFlops(run.flop_count) * m * static_cast<double>(r.data_parallel);
  r.tflops_per_gpu = r.model_flops_per_step / (r.step_s * static_cast<double>(r.gpus)) / 1e12;
  r.mfu = r.tflops_per_gpu * 1e12 / a.gpu->PeakFlops(s.dtype);
  const FlopCount other = run.flop_count == FlopCount::kFull ? FlopCount::kCausal : FlopCount::kFull;
  const double counted = a.flops.ModelFlops(run.flop_count);
  r.mfu_other_count = counted > 0 ? r.mfu * a.flops.ModelFlops(other) / counted : 0;
  r.tokens_per_step = r.global_batch * s.seq_length;
  r.tokens_per_s_per_gpu =
      static_cast<double>(r.tokens_per_step) / r.step_s / static_cast<double>(r.gpus);
  r.assumptions = Assumptions(a, run, r);
  if (run.train_tokens > 0) {
    r.train_tokens = run.train_tokens;
    r.time_to_train_s =
        std::ceil(run.train_tokens / static_cast<double>(r.tokens_per_step)) * r.step_s;
    r.gpu_hours = r.time_to_train_s * static_cast<double>(r.gpus) / 3600;
  }
  const PlannerBand& band = PlannerBandFor(s, run);
  r.band_p10 = band.p10;
  r.band_p90 = band.p90;
  r.band_kind = band.kind;
  r.band_runs = band.runs;
  r.band_gpus = PlannerBandGpus();
  r.band_gpu_checked = std::find(r.band_gpus.begin(), r.band_gpus.end(), a.gpu->name) !=
                       r.band_gpus.end();
}

// One micro-batch through the slowest pipeline stage, by part (what PlanStep multiplies by the
// micro-batches), and the stage's layers it took them from.
struct StageTimes {
  double layers = 0;         // the stage's layers
  double moe_layers = 0;     // of them, MoE layers (a share of the stage's, as of the model's)
  double per_layer = 0;      // one layer, forward and backward
  double forward_layer = 0;  // one layer's forward
  double compute = 0, recompute = 0, tp_comm = 0, ep_comm = 0, cp_comm = 0, offload = 0,
         host_wait = 0;
  double Total() const {
    return compute + recompute + tp_comm + ep_comm + cp_comm + offload + host_wait;
  }
};

// The MoE layers among layers [begin, end) of a model whose dense layers come first
// (first_dense_layers) and then every moe_layer_interval-th is MoE; a hybrid's share of them.
double MoeLayersIn(const ModelSpec& s, int64_t begin, int64_t end) {
  const DerivedShape d = Derive(s);
  if (IsHybrid(s) || s.num_experts == 0) {
    return static_cast<double>(d.moe_layers) / static_cast<double>(s.num_layers) *
           static_cast<double>(end - begin);
  }
  const int64_t k = std::max<int64_t>(1, s.moe_layer_interval);
  int64_t n = 0;
  for (int64_t i = std::max(begin, s.first_dense_layers); i < end; ++i) {
    if ((i - s.first_dense_layers + 1) % k == 0) ++n;
  }
  return static_cast<double>(n);
}

// The slowest stage: the last (its layers, the logits and the loss), or with uneven stages a
// middle one if its extra layers outweigh the head. `stored_bytes_per_layer`: what offloading
// moves (the run's memory estimate).
StageTimes SlowestStage(const Analysis& a, const RunConfig& run, const MicroBatch& mb,
                        double stored_bytes_per_layer) {
  const ModelSpec& s = a.spec;
  const double layers = static_cast<double>(s.num_layers);
  const PipelineSplit split = SplitLayers(s.num_layers, s.pipeline_parallel);
  StageTimes st;
  st.per_layer = mb.layers_s / layers;
  const bool last_slowest = static_cast<double>(split.last) * st.per_layer + mb.head_s >=
                            static_cast<double>(split.middle) * st.per_layer;
  st.layers = static_cast<double>(last_slowest ? split.last : split.middle);
  st.compute = st.layers * st.per_layer + (last_slowest ? mb.head_s : 0);
  const bool flash = s.attention != Attention::kUnfused;
  st.recompute = run.recompute == Recompute::kFull ? mb.layers_forward_s / layers * st.layers
                 : run.recompute == Recompute::kOp ? mb.op_recompute_s / layers * st.layers
                 : run.recompute == Recompute::kSelective && !flash
                     ? mb.attention_forward_s / layers * st.layers
                     : 0;
  if (RecomputesMoeAlone(run)) st.recompute += mb.moe_forward_s / layers * st.layers;
  if (RecomputesMlaUpAlone(run)) st.recompute += mb.mla_up_forward_s / layers * st.layers;
  // Its MoE layers: the last stage's, or the last middle stage's (the middle one with the most
  // where the dense layers come first).
  const int64_t end = s.num_layers - (last_slowest ? 0 : split.last);
  st.moe_layers = MoeLayersIn(s, end - static_cast<int64_t>(st.layers), end);
  // Whole experts under tensor parallelism: a MoE layer's MLP has no tensor-parallel collectives
  // (the tokens go to their experts by the all-to-all instead), half of a layer's.
  const double tp_layers =
      st.layers - (ExpertTensorParallel(s) < s.tensor_parallel ? st.moe_layers / 2 : 0);
  st.tp_comm = TensorParallelS(a, run, tp_layers) * (1 - run.tp_overlap);
  st.cp_comm = ContextParallelS(a, run, st.layers, mb.attention_s / layers,
                               mb.attention_forward_s / layers);
  st.forward_layer = mb.layers_forward_s / layers;
  st.offload = OffloadS(a, run, st.layers, stored_bytes_per_layer, st.forward_layer,
                        mb.layers_s / layers - st.forward_layer);
  st.ep_comm = ExpertParallelS(a, run, st.moe_layers);
  st.host_wait = st.moe_layers * MoeHostWaitS(s, run);
  return st;
}

}  // namespace

absl::StatusOr<StepBreakdown> PlanStep(const Analysis& a, const RunConfig& run) {
  if (run.plan) return PlanLayout(a, run);
  const ModelSpec& s = a.spec;
  const GpuSpec& gpu = *a.gpu;
  if (s.workload != Workload::kTraining) {
    return absl::InvalidArgumentError("run: a step breakdown is for training workloads");
  }
  StepBreakdown r;
  r.tensor_parallel = s.tensor_parallel;
  r.pipeline_parallel = s.pipeline_parallel;
  r.context_parallel = s.context_parallel;
  r.expert_parallel = s.expert_parallel;
  const int64_t tp = s.tensor_parallel * s.pipeline_parallel * s.context_parallel;
  if (absl::Status st = CheckRun(s, run, tp, &r.data_parallel, &r.microbatches); !st.ok()) {
    return st;
  }
  r.gpus = tp * r.data_parallel;
  r.nodes = (r.gpus + gpu.link.domain_gpus - 1) / gpu.link.domain_gpus;
  r.global_batch = r.microbatches * s.micro_batch_size * r.data_parallel;
  r.memory = EstimateMemory(s, gpu, LayoutOf(run, r));
  const double m = static_cast<double>(r.microbatches);
  const double p = static_cast<double>(s.pipeline_parallel);
  const MicroBatch mb = SplitMicroBatch(a, run);
  const StageTimes st = SlowestStage(a, run, mb, r.memory.stored_bytes_per_layer);
  r.compute_s = m * st.compute;
  r.ep_comm_s = EpOverlapS(a, run, st.ep_comm, st.moe_layers * st.per_layer, m);
  r.moe_host_s = MoeHostStepS(s, run, st.moe_layers, m);
  r.recompute_s = m * st.recompute;
  r.tp_comm_s = m * st.tp_comm;
  r.cp_comm_s = m * st.cp_comm;
  r.offload_s = m * st.offload;
  r.pp_bubble_s = (p - 1) / static_cast<double>(run.interleave) * st.Total();
  r.pp_comm_s = PipelineSendsS(a, run, m);

  const double layers = static_cast<double>(s.num_layers);
  const double layer_backward =
      mb.layers_s / layers - st.forward_layer + st.recompute / st.layers;
  ReduceAndUpdate(a, run, m, st.forward_layer, layer_backward, st.compute + st.recompute, r);
  FinishStep(a, run, m, r);
  return r;
}

std::vector<int64_t> CandidateInterleaves(const ModelSpec& s, const RunConfig& run) {
  std::vector<int64_t> out = {std::max<int64_t>(run.interleave, 1)};
  if (run.interleave > 1 || s.pipeline_parallel <= 1) return out;
  const PipelineSplit split = SplitLayers(s.num_layers, s.pipeline_parallel);
  for (int64_t v = 2; v <= std::min<int64_t>(split.middle, kMaxPlannedInterleave); ++v) {
    // An uneven split's first and last stages need not divide by v: Meta's Llama 3 405B ran 7, 8
    // × 14, 7 layers on 16 stages interleaved (its bench/data .md), and Megatron-Core's
    // pipeline_model_parallel_layout places any layers per virtual stage (its
    // num_layers_in_first/last_pipeline_stage alone refuses counts v does not divide).
    if (split.middle % v == 0) out.push_back(v);
  }
  return out;
}

bool OffloadRunsWith(int64_t pipeline_parallel, Recompute recompute, bool recompute_modules) {
  return pipeline_parallel <= 1 && recompute == Recompute::kNone && !recompute_modules;
}

std::vector<RunConfig> CandidateLayouts(const ModelSpec& s, const RunConfig& run) {
  std::vector<RunConfig> out;
  // An MLA model's up-projections recomputed or not (Megatron-Core's recompute_modules
  // "mla_up_proj"), where full recomputation does not already rerun them; as given elsewhere.
  const bool weigh_mla_up = s.kv_lora_rank > 0 && !run.recompute_mla_up_proj;
  for (int64_t v : CandidateInterleaves(s, run)) {
    for (bool sp : {false, true}) {
      for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
        for (bool mla_up : {false, true}) {
          if (mla_up && (!weigh_mla_up || rc == Recompute::kFull)) continue;
          for (int zero = 0; zero <= 3; ++zero) {
            for (bool offload : {false, true}) {
              RunConfig c = run;
              c.plan = false;
              c.sequence_parallel = sp;
              c.recompute = rc;
              c.recompute_mla_up_proj = run.recompute_mla_up_proj || mla_up;
              c.zero_stage = zero;
              c.offload_activations = offload;
              c.interleave = v;
              // FP8 weights are gathered by the distributed optimizer or FSDP: none at ZeRO 0.
              c.fp8_param_gather = run.fp8_param_gather && zero >= 1;
              out.push_back(c);
            }
          }
        }
      }
    }
  }
  return out;
}

// A layout in words, for the plan's assumption line.
std::string LayoutWords(const StepBreakdown& b) {
  return absl::StrCat(b.sequence_parallel ? "sequence parallelism, " : "no sequence parallelism, ",
                      b.recompute == Recompute::kNone ? "no" : RecomputeName(b.recompute),
                      " recomputation",
                      b.recompute_mla_up_proj ? " with MLA's up-projections recomputed" : "",
                      ", ZeRO stage ", b.zero_stage,
                      b.offload_activations ? ", activations offloaded" : "",
                      b.interleave > 1
                          ? absl::StrCat(", ", b.interleave, " interleaved stages per rank")
                          : "");
}

std::string OverMarginNote(const StepBreakdown& given, const StepBreakdown& chosen,
                           std::string_view given_words) {
  if (given.memory.fits || given.step_s >= chosen.step_s ||
      given.memory.total_bytes > given.memory.capacity_bytes) {
    return "";
  }
  return absl::StrFormat(
      "; it takes %.1f%% longer than the layout as given (%s), estimated at %.1f GiB: past the "
      "%.0f%% of the GPU's %.0f GiB the plan leaves to the model but within it, where published "
      "layouts that ran reach, so that one may fit (without --plan its step is shown as given)",
      100 * (chosen.step_s / given.step_s - 1), given_words,
      given.memory.total_bytes / static_cast<double>(kGiB), 100 * kUsableMemoryFraction,
      given.memory.capacity_bytes / static_cast<double>(kGiB));
}

namespace {

// What the plan says of the layout as given (the run's own flags), when that one fits.
std::string GivenLayoutNote(const StepBreakdown& given, const StepBreakdown& chosen) {
  if (given.step_s <= chosen.step_s) return "; the layout as given is that one";
  return absl::StrFormat("; the layout as given (%s) fits too and takes %.1f%% longer",
                         LayoutWords(given), 100 * (given.step_s / chosen.step_s - 1));
}

}  // namespace

absl::StatusOr<StepBreakdown> PlanLayout(const Analysis& a, const RunConfig& run) {
  std::optional<StepBreakdown> best, smallest;
  int fit = 0, tried = 0;
  for (const RunConfig& c : CandidateLayouts(a.spec, run)) {
    absl::StatusOr<StepBreakdown> b = PlanStep(a, c);
    if (!b.ok()) return b.status();
    // Nothing to shard over.
    if (c.zero_stage > 0 && b->data_parallel * b->context_parallel == 1) continue;
    // Megatron-Core's interleaved schedule runs whole rounds of p micro-batches.
    if (c.interleave > 1 && b->microbatches % b->pipeline_parallel != 0) continue;
    ++tried;
    if (!smallest || b->memory.total_bytes < smallest->memory.total_bytes) smallest = *b;
    if (!b->memory.fits) continue;
    ++fit;
    if (!best || b->step_s < best->step_s) best = *b;
  }
  if (!smallest) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run.global_batch: the interleaved schedule (run.interleave ", run.interleave,
        ") runs whole rounds of pipeline_parallel micro-batches; this batch gives a number of "
        "micro-batches per data-parallel rank that is not a multiple of ",
        a.spec.pipeline_parallel));
  }
  // Never worse than the layout as given, when that one fits (issue 50): it is among the
  // candidates, and kept explicitly where a filter above left it out.
  RunConfig as_given = run;
  as_given.plan = false;
  absl::StatusOr<StepBreakdown> given = PlanStep(a, as_given);
  const bool given_fits = given.ok() && given->memory.fits;
  if (given_fits && (!best || given->step_s < best->step_s)) {
    if (!best) ++fit;
    best = *given;
  }
  StepBreakdown out = best ? *best : *smallest;
  const std::string layout = LayoutWords(out);
  out.assumptions.insert(
      out.assumptions.begin(),
      best ? absl::StrCat("planned: ", layout, ", the fastest of the ", fit,
                          " layouts that fit in memory (of ", tried,
                          " knob combinations priced for these degrees)",
                          given_fits   ? GivenLayoutNote(*given, out)
                          : given.ok() ? OverMarginNote(*given, out, LayoutWords(*given))
                                       : "")
           : absl::StrCat("planned: none of the ", tried,
                          " layouts fits in memory; the one needing the least is ", layout,
                          ": more GPUs (pipeline or tensor parallelism) are needed"));
  return out;
}

PlannedMicroBatch PlanMicroBatch(const ModelSpec& spec, const GpuSpec& gpu, const RunConfig& run,
                                 PredictionMemo* memo) {
  if (!run.plan || spec.micro_batch_size != 0 || run.global_batch <= 0 ||
      spec.workload != Workload::kTraining) {
    return {};
  }
  std::optional<StepBreakdown> best, smallest;
  std::vector<std::string> weighed;
  for (const int64_t b : kPlannedMicroBatches) {
    ModelSpec s = spec;
    s.micro_batch_size = b;
    absl::StatusOr<Analysis> a = Analyze(s, gpu, memo);
    if (!a.ok()) continue;
    // A micro-batch that does not divide the sequences per data-parallel rank is refused here
    // (run.global_batch); so is every one where the run itself is wrong, which the caller's own
    // step then reports.
    absl::StatusOr<StepBreakdown> step = PlanLayout(*a, run);
    if (!step.ok()) continue;
    weighed.push_back(absl::StrCat(b));
    if (b == kDefaultMicroBatch) smallest = *step;
    if (!step->memory.fits) continue;
    if (!best || step->step_s < best->step_s) best = *step;
  }
  if (weighed.empty()) return {};
  const int64_t chosen = best ? best->micro_batch_size : kDefaultMicroBatch;
  return {chosen,
          absl::StrCat("planned: micro-batch ", chosen, " of ", absl::StrJoin(weighed, ", "),
                       best ? " (those dividing the sequences per data-parallel rank), the "
                              "fastest whose layout fits"
                            : " (those dividing the sequences per data-parallel rank); none fits, "
                              "so the smallest"),
          best ? best : smallest};
}

}  // namespace wavecrest
