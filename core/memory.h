// Memory per GPU of one training (or inference) step: weights, gradients, optimizer state,
// activations with and without recomputation, the KV cache. An ESTIMATE from closed forms, not a
// measurement; the sources of each term are in memory.cc.
#ifndef WAVECREST_CORE_MEMORY_H_
#define WAVECREST_CORE_MEMORY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/gpu_catalog.h"
#include "core/model_spec.h"

namespace wavecrest {

struct MemoryEstimate {
  // The pipeline stage (0-based) whose GPU this is: in training the fullest by total_bytes (the
  // first holds the most micro-batches and the embedding, the last the output layer and the loss,
  // a middle one can hold more layers); 0 with one stage and in inference.
  int64_t stage = 0;
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;                   // FP32 master weights and Adam's two moments
  double activations_bytes = 0;                 // what the step stores for backward (see below)
  double activations_full_recompute_bytes = 0;  // with full activation recomputation
  double kv_cache_bytes = 0;                    // prefill and decode
  // With activation offload: the stored activations kept in host memory instead (per GPU); the
  // GPU keeps two layers' worth (the one computing, the next in transit).
  double offloaded_bytes = 0;
  // The host memory per GPU offload has (GpuSpec link.host_memory_bytes; 0: not known, not
  // checked); with offload, fits also needs offloaded_bytes within kUsableMemoryFraction of it.
  double host_capacity_bytes = 0;
  // What one layer keeps for backward per micro-batch (training): its activations, or under full
  // recomputation its input. Activation offload copies this out and back per layer.
  double stored_bytes_per_layer = 0;
  // ZeRO-3: the weights of the largest unit gathered whole to run it and its gradients before
  // they are reduce-scattered (the larger of a transformer layer and the embedding, per
  // tensor-parallel rank, 16-bit each: DeepSpeed's largest_layer_memory at FSDP's granularity).
  double gathered_bytes = 0;
  double total_bytes = 0;  // weights + gradients + optimizer + gathered + activations + KV cache
  double total_full_recompute_bytes = 0;
  double capacity_bytes = 0;         // the GPU's memory
  bool fits = false;                 // total_bytes <= kUsableFraction of capacity
  bool fits_with_recompute = false;  // total_full_recompute_bytes <= the same
};

// The share of the GPU's memory left to the model after the CUDA context, the framework's
// workspaces and allocator fragmentation: 90%. An ASSUMPTION (not fitted; contexts take about
// 0.5-1 GiB and fragmentation varies by framework), stated in every "does not fit" message.
inline constexpr double kUsableMemoryFraction = 0.90;

// Activation recomputation (Korthikanti et al. 2022): none, attention's core only (selective), or
// every layer's forward (full).
// kSelective: Megatron's selective recomputation (attention's core); kOp: PyTorch's op-level
// selective checkpointing as TorchTitan runs it (core/op_recompute.h).
enum class Recompute { kNone, kSelective, kFull, kOp };
absl::string_view RecomputeName(Recompute r);  // "none", "selective", "full", "op"

// How the loss over the logits runs (RunConfig::loss, MemoryLayout::loss):
// - kFused (the default): the FP32 softmax kept and rewritten in place for backward, 4 bytes a
//   logit: Megatron-Core's vocab-parallel cross entropy (megatron/core/tensor_parallel/
//   cross_entropy.py: the logits cast to FP32, exp and divide in place, the softmax saved), and a
//   torch.compile'd loss (TorchTitan compiles it with the model since 2025-04).
// - kEager: PyTorch's cross_entropy over an FP32 copy of the logits, uncompiled (TorchTitan's
//   `pred.flatten(0, 1).float()` until 2025-04, Hugging Face trainers): at backward's start the
//   log-softmax kept for it, the NLL's gradient and the log-softmax's input gradient, FP32 each,
//   12 bytes a logit; and its passes move more memory (EagerLossExtraBytesPerLogit).
enum class LossKernel { kFused, kEager };
// "fused" or "" (the default) and "eager"; otherwise InvalidArgument naming the allowed values
// (the caller names the field).
absl::StatusOr<LossKernel> ParseLossKernel(absl::string_view name);
absl::string_view LossKernelName(LossKernel k);
// The bytes per logit the loss holds at its peak (4 fused, 12 eager).
double LossBytesPerLogit(LossKernel k);

// How a training run lays a model out, as far as memory is concerned.
struct MemoryLayout {
  bool sequence_parallel = false;  // the activations outside the TP regions split over t too
  Recompute recompute = Recompute::kNone;
  int64_t interleave = 1;     // virtual pipeline stages per rank
  int64_t microbatches = 0;   // per step and data-parallel rank; 0 = enough to fill the pipeline
  int64_t data_parallel = 0;  // 0 = spec.data_parallel
  // ZeRO over the data-parallel (and context-parallel) ranks: 1 shards the optimizer state
  // (Megatron's distributed optimizer), 2 the gradients too, 3 (FSDP) the weights too; -1 = 1.
  int zero_stage = -1;
  // Stored activations copied to host memory after each layer's forward and back before its
  // backward (Megatron-Core's and Transformer Engine's CPU offloading).
  bool offload_activations = false;
  // The MoE layers' forward run again in backward (RunConfig::recompute_moe): their MLP interior
  // (the experts' and shared experts' activations) is not kept, only the layer's input.
  bool recompute_moe = false;
  // MLA's up-projections run again in backward (RunConfig::recompute_mla_up_proj): the full-head
  // Q, K and V they make are not kept, only the latents they are made from.
  bool recompute_mla_up_proj = false;
  // Bytes per gradient: 4 (0) = FP32 main gradients (Megatron, and DeepSpeed's partitions); 2 =
  // 16-bit gradients (the ZeRO paper's accounting, FSDP with a 16-bit reduce dtype).
  int gradient_bytes = 0;
  // FP8 training with the weights kept in FP8 (Megatron-Core's --fp8-param-gather, Transformer
  // Engine's FP8 primary weights; the FP32 master copy stays in the optimizer): 1 byte per
  // weight, gathered in FP8 under ZeRO-3. Ignored for other dtypes.
  bool fp8_params = false;
  // ZeRO-3 (FSDP2's reshard_after_forward): false keeps every layer's gathered weights of the
  // stage from forward to backward instead of the largest unit at a time.
  bool reshard_after_forward = true;
  // Hybrid sharding (HSDP): ZeRO shards over groups of this many of the data- and
  // context-parallel ranks, the groups replicas of each other; 0 = over all of them.
  int64_t shard_group = 0;
  // Multi-token prediction modules (RunConfig::mtp_layers), on the last pipeline stage: each one
  // more layer of the model's mean parameters, its 2h × h projection and two norms, that layer's
  // activations and one more FP32 logits buffer for its loss. Counted with one stage (the GPU
  // estimated holds the last stage then); with a pipeline the module's stage is not this one.
  int64_t mtp_layers = 0;
  // How the loss runs (LossKernel): the bytes per logit the last stage holds for it.
  LossKernel loss = LossKernel::kFused;
  // Context parallelism as PyTorch's ring (CpRing::kTorch): a layer's attention holds the c ranks'
  // all-gathered K and V of its query heads and, in backward, the FP32 gradients of its own K and
  // V three times (accumulated, sent, received): (c + 6) chunks, while the layer runs. Not at
  // once with the loss's logits (the larger of the two is counted).
  bool torch_cp_ring = false;
};

// The fullest GPU of a training run's pipeline (every stage estimated, MemoryEstimate::stage
// says which; inference: the first stage's), per tensor-parallel rank. Activations per
// Korthikanti et al. 2022 (Table 2, with tensor and sequence parallelism and selective
// recomputation), of the micro-batches each stage holds under Megatron-Core's schedules (1F1B:
// p − r on stage r; interleaved: 2(p − r − 1) + (v − 1)·p + 1 model chunks, L·(1 + (p-1)/(p·v))
// layers' worth on the first). With the default layout: no sequence
// parallelism, no recomputation in `activations_bytes`, the optimizer state sharded over
// spec.data_parallel replicas (times context_parallel: Megatron shards over both). Under context
// parallelism every activation term is of the rank's s/c tokens. `spec` must be normalized.
MemoryEstimate EstimateMemory(const ModelSpec& spec, const GpuSpec& gpu,
                              const MemoryLayout& layout = MemoryLayout());

// Decode: the bytes one step reads per tensor-parallel rank (all layers, one pipeline stage):
// every weight the step touches once (the output matrix whole; of the input embedding only b
// rows, so an untied table is not counted; of a mixture of experts the experts the batch's tokens
// route to, E·(1 − (1 − k/E)^b) of E per layer under uniform routing, an ASSUMPTION, rounded as
// the expert GEMMs run them: DerivedShape::experts_run) and the whole KV cache. The figure memory-bandwidth utilisation (MBU) divides by. 0 for other workloads.
double DecodeBytesPerStep(const ModelSpec& spec);

// Bytes of the KV cache on one tensor-parallel rank (16-bit, every pipeline stage together):
// b · cached tokens · per-token elements · 2, where a layer with local attention keeps only its
// window and multi-head latent attention keeps the latent and the rotary key (kv_lora_rank +
// qk_rope_head_dim, whole on every rank) instead of K and V per head.
double KvCacheBytes(const ModelSpec& spec);

// Bytes of KV cache one cached token of one sequence costs, the whole model (every rank, 16-bit),
// averaged over a cache of the spec's length (kv_cache_length, else seq_length): layers with
// local attention keep only their window of it. What the recommender holds a candidate to
// (core/recommend.h, kKvCacheTolerance). `spec` must be normalized.
double KvCacheBytesPerToken(const ModelSpec& spec);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_MEMORY_H_
