#include "core/memory.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/context_parallel.h"
#include "core/model_stats.h"
#include "core/op_recompute.h"

namespace wavecrest {

// Bytes per parameter of mixed-precision training with Adam: 2 (BF16/FP16 weights) + 4 (FP32
// gradient accumulation) + 4 (FP32 master weights) + 8 (Adam's two FP32 moments) = 18, and
// 6 + 12/d with the optimizer state sharded over d data-parallel replicas: the rows of
// Megatron-LM's distributed optimizer guide (docs/source/api-guide/dist_optimizer.md). FP8 training
// keeps the same master state; its weights are counted at 2 bytes too (Transformer Engine keeps a
// BF16 copy). ZeRO-2 shards the gradients as backward produces them (FSDP's SHARD_GRAD_OP):
// 2 + 16/d; DeepSpeed's own estimator counts its ZeRO-2 at 4 + 16/d (it keeps the 16-bit
// gradients whole besides the FP32 partition). ZeRO-3: 18/d plus the gathered unit, as
// DeepSpeed's estimator (docs/code-docs/source/memory.rst). With 16-bit gradients the stages
// are the ZeRO paper's 16, 4 + 12/d, 2 + 14/d and 16/d (Rajbhandari et al. 2020, Figure 1).
namespace {
constexpr double kWeightBytes = 2;
constexpr double kGradBytes = 4;
constexpr double kOptimizerBytes = 12;
}  // namespace

absl::string_view RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
    case Recompute::kOp:
      return "op";
  }
  return "none";
}

absl::StatusOr<LossKernel> ParseLossKernel(absl::string_view name) {
  if (name.empty() || name == "fused") return LossKernel::kFused;
  if (name == "eager") return LossKernel::kEager;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown value \"", name, "\"; allowed: fused, eager"));
}

absl::string_view LossKernelName(LossKernel k) {
  return k == LossKernel::kEager ? "eager" : "fused";
}

double LossBytesPerLogit(LossKernel k) { return k == LossKernel::kEager ? 12 : 4; }

double KvCacheBytes(const ModelSpec& spec) {
  const DerivedShape d = Derive(spec);
  // Elements one cached token keeps per layer: K and V of this rank's KV heads, or under MLA the
  // latent and the rotary key part, which every rank keeps whole.
  const double per_token =
      spec.kv_lora_rank > 0
          ? static_cast<double>(spec.kv_lora_rank + spec.qk_rope_head_dim)
          : 2.0 * static_cast<double>(d.kv_heads_per_rank * d.head_dim);
  const double kv_len = static_cast<double>(spec.kv_cache_length);
  // Layers with local attention keep only the window.
  const double windowed = static_cast<double>(d.window_layers);
  const double tokens_kept =
      (static_cast<double>(d.attention_layers) - windowed) * kv_len +
      windowed * std::min(kv_len, static_cast<double>(spec.sliding_window));
  // A Mamba-2 layer keeps a state instead, whatever the length: each head's N × P state in FP32
  // (Nemotron 3's mamba_ssm_cache_dtype "float32": twice a 16-bit element) and the conv1d's last
  // kernel − 1 inputs (x, B and C), 16-bit.
  const double mamba_state =
      static_cast<double>(d.mamba_layers) *
      (2 * static_cast<double>(d.mamba_inner_per_rank * spec.mamba_state_dim) +
       static_cast<double>((spec.mamba_conv_kernel - 1) * d.mamba_conv_per_rank));
  // Under context parallelism (prefill) each rank keeps its own chunks' keys and values.
  return static_cast<double>(spec.micro_batch_size) *
         (tokens_kept * per_token + mamba_state) * 2 /
         static_cast<double>(std::max<int64_t>(spec.context_parallel, 1));
}

double KvCacheBytesPerToken(const ModelSpec& spec) {
  const double per_layer =
      spec.kv_lora_rank > 0
          ? static_cast<double>(spec.kv_lora_rank + spec.qk_rope_head_dim)
          : 2.0 * static_cast<double>(spec.num_kv_heads) * static_cast<double>(spec.head_dim);
  const double len =
      static_cast<double>(spec.kv_cache_length > 0 ? spec.kv_cache_length : spec.seq_length);
  if (!(len > 0)) return 0;
  const int64_t windowed = spec.sliding_window == 0            ? 0
                           : spec.sliding_window_layers == 0 ? spec.num_layers
                                                             : spec.sliding_window_layers;
  const double layers =
      static_cast<double>(AttentionLayers(spec) - windowed) +
      static_cast<double>(windowed) * std::min(len, static_cast<double>(spec.sliding_window)) / len;
  return layers * per_layer * 2;
}

namespace {

// Bytes per weight: 4 for FP32/TF32 training, else 2 (FP8 keeps a 16-bit copy).
double WeightBytes(const ModelSpec& spec) {
  return spec.dtype == DType::kFp32 || spec.dtype == DType::kTf32 ? 4 : kWeightBytes;
}

// A hybrid model's layer on average (each layer one block: attention, a Mamba-2 mixer, or an
// MLP), per token, as LayerActivationBytes counts a transformer's: the block's half of the 10·h
// outside the tensor-parallel regions (its norm and residual), then attention's Q, K, V and the
// projection's input, the MLP's interior, or the mixer's in_proj output (z, x, B, C, dt), conv1d
// output (x, B, C), scan output and gated norm output (the out_proj's input, its FP8 cast in FP8).
double HybridLayerActivationBytesPerToken(const ModelSpec& spec, const MemoryLayout& layout,
                                          const DerivedShape& d) {
  const double t = static_cast<double>(spec.tensor_parallel);
  const double h = static_cast<double>(spec.hidden_size);
  const bool fp8 = spec.dtype == DType::kFp8E4M3;
  const double outside = (fp8 ? 4 : 5) * h / (layout.sequence_parallel ? t : 1);
  const double q_w = static_cast<double>(d.q_width), kv_w = static_cast<double>(d.kv_width);
  const double attention = outside + (2 * q_w + 4 * kv_w + (fp8 ? 3 : 2) * q_w) / t;
  const double f_active = static_cast<double>(d.active_ffn_per_rank) * t;
  const double interior = ((spec.mlp == Mlp::kGelu ? 4 : 6) - (fp8 ? 1 : 0)) * f_active / t;
  const double dense = outside + interior;
  const double moe = outside + (layout.recompute_moe ? 0 : interior);  // recompute_moe keeps none
  const double inner = static_cast<double>(d.mamba_inner_per_rank);
  const double mamba = outside + 2 * static_cast<double>(d.mamba_in_proj_per_rank) +
                       2 * static_cast<double>(d.mamba_conv_per_rank) + 2 * inner +
                       (fp8 ? 1 : 2) * inner;
  return (static_cast<double>(d.attention_layers) * attention +
          static_cast<double>(d.dense_layers) * dense + static_cast<double>(d.moe_layers) * moe +
          static_cast<double>(d.mamba_layers) * mamba) /
         static_cast<double>(std::max<int64_t>(spec.num_layers, 1));
}

// What multi-latent attention keeps of its latents per token and layer, whole on every
// tensor-parallel rank (the down-projections are not split): the query's and the key-value
// latent's, each as its norm's input and the up-projection's, and the rotary key part, 16-bit.
// 0 without MLA.
double MlaLatentBytesPerToken(const ModelSpec& spec) {
  if (spec.kv_lora_rank == 0) return 0;
  return 2 * (2 * static_cast<double>(spec.q_lora_rank + spec.kv_lora_rank) +
              static_cast<double>(spec.qk_rope_head_dim));
}

// Activations one layer stores for backward on one GPU, 16-bit, for one micro-batch
// (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", arXiv
// 2205.05198, eq. 2 with tensor parallelism: s·b·h·(10 + 24/t + 5·a·s/(h·t)) for a GPT layer).
// The 24/t term is written out per tensor so that GQA and SwiGLU widths count: Q and K for the
// scores, V, the projection's input (2 bytes each), and the MLP's interior (GELU: up output and
// activation, 4 bytes per unit of width; SwiGLU: gate+up output and activation, 6), over the
// active width of an MoE. The 5·a·s/(h·t) attention-score term is kept only for unfused
// attention: FlashAttention stores no score matrix. With sequence parallelism the part outside
// the tensor-parallel regions (the 10·h) splits over t too; selective recomputation drops the
// score term.
double LayerActivationBytes(const ModelSpec& spec, const MemoryLayout& layout,
                            const DerivedShape& d) {
  const double t = static_cast<double>(spec.tensor_parallel);
  const double s = static_cast<double>(d.seq_per_rank);  // s/c under context parallelism
  const double b = static_cast<double>(spec.micro_batch_size);
  const double h = static_cast<double>(spec.hidden_size);
  if (layout.recompute == Recompute::kOp) {
    return s * b * OpRecomputeStoredBytesPerToken(spec, d, layout.sequence_parallel);
  }
  const double q_w = static_cast<double>(d.q_width);
  const double kv_w = static_cast<double>(d.kv_width);
  const double f_active = static_cast<double>(d.active_ffn_per_rank) * t;  // whole width
  // FP8 (Transformer Engine's recipe): a linear layer keeps its input for the weight gradient as
  // its FP8 cast, 1 byte: the QKV's and the MLP's (the norms' outputs, part of the 10·h) and the
  // second MLP GEMM's (the activation's output) instead of their 16-bit copies; the projection's
  // FP8 cast is kept beside the attention kernel's 16-bit output, which the kernel keeps for its
  // own backward: 1.5 times that tensor (Megatron-LM's DeepSeek-V3 GB200 guide,
  // docs/discussions/deepseek-v3-gb200-optimization, sec. 2.2.2: "SDPA saves a BF16 output tensor,
  // while Projection Linear saves an FP8 tensor quantized from the input tensor").
  const bool fp8 = spec.dtype == DType::kFp8E4M3;
  // Recomputed MoE layers keep no MLP interior: the layers' share that is dense keeps it.
  const double kept = layout.recompute_moe && d.moe_layers > 0
                          ? static_cast<double>(d.dense_layers) /
                                static_cast<double>(std::max<int64_t>(spec.num_layers, 1))
                          : 1.0;
  const double mlp_interior = ((spec.mlp == Mlp::kGelu ? 4 : 6) - (fp8 ? 1 : 0)) * f_active * kept;
  const double outside_h = fp8 ? 8 : 10;
  const double outside = layout.sequence_parallel ? outside_h * h / t : outside_h * h;
  const double projection_input = (fp8 ? 3 : 2) * q_w;
  // Recomputing MLA's up-projections (recompute_mla_up_proj, Megatron-Core's
  // CheckpointWithoutOutput around them) frees the full-head Q, K and V they make once attention
  // has run, and makes them again for backward.
  const double qkv = spec.kv_lora_rank > 0 && layout.recompute_mla_up_proj
                         ? 0
                         : 2 * q_w + 2 * kv_w + 2 * kv_w;
  const double latents = MlaLatentBytesPerToken(spec);
  double per_layer =
      IsHybrid(spec)
          ? s * b * HybridLayerActivationBytesPerToken(spec, layout, d)
          : s * b * (outside + latents + (qkv + projection_input + mlp_interior) / t);
  if (spec.attention == Attention::kUnfused && layout.recompute == Recompute::kNone) {
    // (The rank's s/c query rows against all s keys under context parallelism; in a hybrid
    // model the attention layers' share.)
    const double scores = 5 * static_cast<double>(spec.num_attention_heads) * s *
                          static_cast<double>(spec.seq_length) * b / t;
    per_layer += IsHybrid(spec) ? scores * static_cast<double>(d.attention_layers) /
                                      static_cast<double>(spec.num_layers)
                                : scores;
  }
  return per_layer;
}

// A pipeline stage: its index, its layers (SplitLayers: Megatron-Core's uneven split gives the
// first and last fewer) and whether it holds the input embedding (the first) or the output layer,
// the loss and any multi-token prediction modules (the last); with one stage, both.
struct Stage {
  int64_t index = 0;
  double layers = 0;
  bool first = true, last = true;
};

Stage StageAt(const ModelSpec& spec, int64_t r) {
  const int64_t p = spec.pipeline_parallel;
  const PipelineSplit split = SplitLayers(spec.num_layers, p);
  Stage st;
  st.index = r;
  st.first = r == 0;
  st.last = r == p - 1;
  st.layers = static_cast<double>(st.first  ? split.first
                                  : st.last ? split.last
                                            : split.middle);
  return st;
}

// The layers whose activations a stage holds at once under the pipeline's schedule, as
// Megatron-Core's schedules run them (pipeline_parallel/schedules.py): under 1F1B rank r runs
// p − r − 1 warm-up forwards and holds one more in the steady state, p − r micro-batches of its
// layers (fewer when a step has fewer micro-batches); under the interleaved schedule
// 2(p − r − 1) + (v − 1)·p warm-up model chunks and one more, of layers/v each, at most the
// step's m·v chunks (all of them when m = p). The first stage holds the most.
double InFlightLayers(const ModelSpec& spec, const MemoryLayout& layout, const Stage& stage) {
  const double p = static_cast<double>(spec.pipeline_parallel);
  const double r = static_cast<double>(stage.index);
  const double mb = layout.microbatches > 0 ? static_cast<double>(layout.microbatches) : p;
  const double v = static_cast<double>(std::max<int64_t>(layout.interleave, 1));
  if (v == 1) return stage.layers * std::min(p - r, mb);
  const double chunks = std::min(2 * (p - r - 1) + (v - 1) * p + 1, mb * v);
  return stage.layers / v * chunks;
}

// What training stores for backward on a stage's GPU (activations_bytes and the rest of the
// activation fields of `m`).
void TrainingActivations(const ModelSpec& spec, const MemoryLayout& layout, const Stage& stage,
                         MemoryEstimate& m) {
  const DerivedShape d = Derive(spec);
  const double t = static_cast<double>(spec.tensor_parallel);
  const double s = static_cast<double>(d.seq_per_rank);  // s/c under context parallelism
  const double b = static_cast<double>(spec.micro_batch_size);
  const double h = static_cast<double>(spec.hidden_size);
  const double per_layer = LayerActivationBytes(spec, layout, d);
  const double in_flight_layers = InFlightLayers(spec, layout, stage);
  // The last stage's: what the loss holds of the logits (LossBytesPerLogit: 4·s·b·v/t bytes fused,
  // 12 eager); each multi-token prediction module another, and its layer's activations and input
  // (its norms' outputs concatenated, 2h, into the 2h × h projection).
  const double mtp = static_cast<double>(layout.mtp_layers);
  const double mtp_activations = mtp * (per_layer + 2 * s * b * 2 * h);
  const double loss = stage.last ? (1 + mtp) * LossBytesPerLogit(layout.loss) * s * b *
                                           static_cast<double>(d.vocab_per_rank) +
                                       mtp_activations
                                 : 0;
  // PyTorch's context-parallel ring's buffers while a layer's attention runs (MemoryLayout::
  // torch_cp_ring): never beside the loss's, so the larger of the two.
  const double c = static_cast<double>(spec.context_parallel);
  const double ring = layout.torch_cp_ring && c > 1 ? (c + 6) * TorchRingChunkBytes(spec) : 0;
  const double head = std::max(loss, ring);
  // Full recomputation keeps each layer's input (2·s·b·h, over t with sequence parallelism)
  // and one layer's activations.
  const double layer_input = 2 * s * b * h / (layout.sequence_parallel ? t : 1);
  const double full = layer_input * in_flight_layers + per_layer + head;
  m.activations_bytes =
      layout.recompute == Recompute::kFull ? full : per_layer * in_flight_layers + head;
  m.activations_full_recompute_bytes = full;
  const double stored = layout.recompute == Recompute::kFull ? layer_input : per_layer;
  m.stored_bytes_per_layer = stored;
  if (layout.offload_activations) {
    // What a layer stores goes to the host; the GPU keeps two layers' worth (the one computing,
    // the next in transit) and, under full recomputation, one layer's recomputed activations.
    m.offloaded_bytes = stored * in_flight_layers;
    m.activations_bytes =
        2 * stored + (layout.recompute == Recompute::kFull ? per_layer : 0) + head;
    m.activations_full_recompute_bytes = 2 * layer_input + per_layer + head;
  }
}

// Whether ZeRO-3 defers its reduce-scatter to the step's last micro-batch, so that the stage's
// gradients build up unsharded, in the reduce dtype, beside the sharded ones: FSDP2 under
// PyTorch's pipelining with the weights kept gathered (reshard_after_forward false, TorchTitan's
// default with pipeline stages). Its stage runs every backward with
// set_requires_gradient_sync(False) and set_reshard_after_backward(False) and reduces once after
// the last (torch/distributed/pipelining/stage.py, backward_maybe_with_nosync, at the torch of
// TorchTitan's December 2024 benchmarks), and FSDP2 keeps the unsharded gradients it accumulates
// in its reduce dtype (FSDPParam.to_accumulated_grad_if_needed). TorchTitan's published peaks bear
// it out (bench/data/published-runs-torchtitan-h100.md). Not taken where the weights are
// resharded after forward: NeMo AutoModel's DeepSeek-V3 on 256 H100s (PP 4) ran in 80 GB, which
// 37 GiB more of unsharded FP32 gradients would not allow.
bool DefersShardedGradients(const ModelSpec& spec, const MemoryLayout& layout, int zero) {
  return zero >= 3 && spec.pipeline_parallel > 1 && !layout.reshard_after_forward;
}

// ZeRO 3's gathered weights on a GPU whose one layer holds `layer` parameters: the layer (or the
// embedding, when larger) being used and the next being gathered; not resharded after forward,
// the stage's layers stay gathered until their backward.
double GatheredBytes(const ModelSpec& spec, const MemoryLayout& layout, const Stage& stage,
                     double layer, double weight_bytes) {
  const double unit =
      std::max(layer, static_cast<double>(spec.vocab_size * spec.hidden_size) /
                          static_cast<double>(spec.tensor_parallel));
  if (layout.reshard_after_forward) return 2 * weight_bytes * unit;
  return weight_bytes * (layer * stage.layers + unit);
}

// The parameters a GPU of a stage holds, per tensor-parallel rank: its layers; on the first the
// input embedding (and a learned position table), on the last the output matrix (untied, or
// Megatron-Core's copy of a tied embedding when there are stages) and any multi-token prediction
// modules (each a mean layer, the 2h × h projection and two norms); with one stage all of them.
// Under expert parallelism a GPU holds 1/e of the routed experts (split over the experts' own
// tensor-parallel degree et, t or 1), whose replicas are the t·d·c/(et·e) GPUs holding the same
// ones (Megatron-Core's expert-data-parallel group): sharded (ZeRO), a GPU keeps the same share of
// them as of the rest.
class ParamsOnGpu {
 public:
  ParamsOnGpu(const ModelSpec& spec, const MemoryLayout& layout, const ParamCounts& params,
              const Stage& stage)
      : per_layer_params_(static_cast<double>(params.per_layer_params)) {
    // The ranks that hold the same weights: data- and context-parallel ones; at least as many as
    // an expert-parallel group needs (e ranks of t·d·c/et) when the layout does not say.
    ep_ = static_cast<double>(std::max<int64_t>(spec.expert_parallel, 1));
    et_ = static_cast<double>(ExpertTensorParallel(spec));
    t_ = static_cast<double>(spec.tensor_parallel);
    dp_ = std::max(
        static_cast<double>(layout.data_parallel > 0 ? layout.data_parallel : spec.data_parallel) *
            static_cast<double>(std::max<int64_t>(spec.context_parallel, 1)),
        layout.data_parallel > 0 ? 1.0 : ep_ * et_ / t_);
    if (layout.shard_group > 0) dp_ = static_cast<double>(layout.shard_group);
    layer_experts_ = static_cast<double>(params.expert_params) /
                     static_cast<double>(std::max<int64_t>(spec.num_layers, 1));
    const double h = static_cast<double>(spec.hidden_size);
    const double mtp = stage.last ? static_cast<double>(layout.mtp_layers) : 0;
    const double layers = stage.layers + mtp;  // an MTP module's layer as a mean one
    const double output = static_cast<double>(spec.vocab_size) * h;
    const double embedding = static_cast<double>(params.embedding_params);
    const double first_embedding = embedding - (spec.tied_embeddings ? 0 : output);
    const double embeddings = stage.first && stage.last ? embedding
                              : stage.first            ? first_embedding
                              : stage.last             ? output
                                                       : 0;
    expert_stage_ = layer_experts_ * layers / et_;
    stage_params_ =
        (per_layer_params_ * layers + mtp * (2 * h * h + 2 * h) + embeddings) / t_ -
        expert_stage_ * et_ / t_ + expert_stage_ / ep_;
    expert_replicas_ = std::max(1.0, dp_ * t_ / et_ / ep_);
  }

  // Parameters per GPU under ZeRO stage `zero`, where stage `level` or above shards them.
  double Held(int zero, int level) const {
    return zero >= level ? (stage_params_ - expert_stage_ / ep_) / dp_ +
                               expert_stage_ / ep_ / expert_replicas_
                         : stage_params_;
  }

  // One layer on this GPU (ZeRO-3 gathers a layer at a time): the rest over t, its share of the
  // experts over et·e.
  double Layer() const {
    return (per_layer_params_ - layer_experts_) / t_ + layer_experts_ / (et_ * ep_);
  }

 private:
  double per_layer_params_;
  double ep_ = 1, et_ = 1, t_ = 1, dp_ = 1;
  double layer_experts_ = 0, expert_stage_ = 0, stage_params_ = 0, expert_replicas_ = 1;
};

// Totals and whether they fit, once every part of `m` is set.
void AddUpMemory(MemoryEstimate& m) {
  const double state = m.weights_bytes + m.gradients_bytes + m.optimizer_bytes + m.gathered_bytes +
                       m.kv_cache_bytes;
  m.total_bytes = state + m.activations_bytes;
  m.total_full_recompute_bytes = state + m.activations_full_recompute_bytes;
  const double usable = kUsableMemoryFraction * m.capacity_bytes;
  const bool host_fits = m.offloaded_bytes == 0 || m.host_capacity_bytes == 0 ||
                         m.offloaded_bytes <= kUsableMemoryFraction * m.host_capacity_bytes;
  m.fits = m.total_bytes <= usable && host_fits;
  m.fits_with_recompute = m.total_full_recompute_bytes <= usable;
}

// One stage's GPU (training) or the whole pipeline's share of inference.
MemoryEstimate StageMemory(const ModelSpec& spec, const GpuSpec& gpu, const MemoryLayout& layout,
                           const ParamCounts& counts, const Stage& stage) {
  MemoryEstimate m;
  m.stage = stage.index;
  const int zero = layout.zero_stage >= 0 ? layout.zero_stage : 1;
  const ParamsOnGpu params(spec, layout, counts, stage);
  const double weight_bytes =
      layout.fp8_params && spec.dtype == DType::kFp8E4M3 ? 1 : WeightBytes(spec);
  m.weights_bytes = params.Held(zero, 3) * weight_bytes;
  m.capacity_bytes = static_cast<double>(gpu.memory_bytes);
  m.host_capacity_bytes = gpu.link.host_memory_bytes;
  if (spec.workload == Workload::kTraining) {
    const double grad_bytes = layout.gradient_bytes > 0 ? layout.gradient_bytes : kGradBytes;
    m.gradients_bytes = params.Held(zero, 2) * grad_bytes;
    // Under a pipeline the stage's gradients also build up unsharded over its micro-batches in
    // the reduce dtype (DefersShardedGradients).
    if (DefersShardedGradients(spec, layout, zero)) {
      m.gradients_bytes += params.Held(0, 1) * grad_bytes;
    }
    if (zero >= 3) {
      m.gathered_bytes = GatheredBytes(spec, layout, stage, params.Layer(), weight_bytes);
    }
    m.optimizer_bytes = params.Held(zero, 1) * kOptimizerBytes;
    TrainingActivations(spec, layout, stage, m);
  } else {
    const DerivedShape d = Derive(spec);
    const double s = static_cast<double>(d.seq_per_rank);  // s/c under context parallelism
    const double b = static_cast<double>(spec.micro_batch_size);
    const double h = static_cast<double>(spec.hidden_size);
    // The KV cache, 16-bit, per rank (KvCacheBytes).
    m.kv_cache_bytes = KvCacheBytes(spec) / static_cast<double>(spec.pipeline_parallel);
    // One layer's working activations at a time (prefill: every position; decode: one).
    const double rows = spec.workload == Workload::kDecode ? b : s * b;
    m.activations_bytes = rows * (4 * h + 6 * static_cast<double>(d.active_ffn_per_rank)) * 2;
    m.activations_full_recompute_bytes = m.activations_bytes;
  }
  AddUpMemory(m);
  return m;
}

}  // namespace

MemoryEstimate EstimateMemory(const ModelSpec& spec, const GpuSpec& gpu,
                              const MemoryLayout& layout) {
  const ParamCounts counts = CountParams(spec);
  MemoryEstimate fullest = StageMemory(spec, gpu, layout, counts, StageAt(spec, 0));
  if (spec.workload != Workload::kTraining) return fullest;
  // Training: the fullest stage. The first holds the most micro-batches and the embedding, the
  // last the output layer and the loss; the middle ones hold the same weights and fewer
  // micro-batches the later they are, so of them the second is the fullest (with more layers than
  // the first under an uneven split, it can be the fullest of all).
  const int64_t p = spec.pipeline_parallel;
  for (const int64_t r : {std::min<int64_t>(1, p - 1), p - 1}) {
    if (r == 0) continue;
    MemoryEstimate m = StageMemory(spec, gpu, layout, counts, StageAt(spec, r));
    if (m.total_bytes > fullest.total_bytes) fullest = m;
  }
  return fullest;
}

double DecodeBytesPerStep(const ModelSpec& spec) {
  if (spec.workload != Workload::kDecode) return 0;
  const ParamCounts params = CountParams(spec);
  const double t = static_cast<double>(spec.tensor_parallel);
  double read = static_cast<double>(params.total_params - params.expert_params);
  if (!spec.tied_embeddings) {
    read -= static_cast<double>(spec.vocab_size) * static_cast<double>(spec.hidden_size);
  }
  read /= t;
  if (spec.num_experts > 0) {
    // The experts the step's GEMMs run (Derive: the ones the batch's tokens touch), each whole
    // or split over the experts' tensor-parallel ranks.
    const DerivedShape d = Derive(spec);
    read += static_cast<double>(params.expert_params) * static_cast<double>(d.experts_run) /
            static_cast<double>(spec.num_experts) / static_cast<double>(ExpertTensorParallel(spec));
  }
  return read * WeightBytes(spec) + KvCacheBytes(spec);
}

}  // namespace wavecrest
