// The model specification wavecrest reasons about, its defaults and its validation. The sizes it
// implies (per rank, per expert, local layers) are core/derived_shape.h's, included here.
//
// This is the proto-free twin of wavecrest.v1.ModelSpec (proto/wavecrest/v1/model.proto); the
// conversion lives in service/convert.cc. Integer fields use 0 for "use the default" where the
// proto documents a default, so that a spec file may omit them.
#ifndef WAVECREST_CORE_MODEL_SPEC_H_
#define WAVECREST_CORE_MODEL_SPEC_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/derived_shape.h"  // Derive and the other sizes a spec implies

namespace wavecrest {

enum class DType { kBf16, kFp16, kFp32, kTf32, kFp8E4M3 };
inline constexpr size_t kDTypeCount = 5;
inline constexpr DType kAllDTypes[kDTypeCount] = {DType::kBf16, DType::kFp16, DType::kFp32,
                                                  DType::kTf32, DType::kFp8E4M3};
enum class Mlp { kGelu, kSwiglu };
// How the attention core runs. kUnfused: two batched GEMMs and a softmax. kFlash: one fused
// kernel of today's class as the worker times it (cuDNN; the calibrated fused-attention model).
// The named kernels are priced from the FlashAttention-2 paper (core/attention_cost.h,
// FusedKernelRateOf): kFlash2 (FlashAttention-2, CUDA) at its published rates per architecture,
// kFlash1 (FlashAttention 1.x, CUDA) and kFlash1Triton (flash-attn 1.0's Triton kernel,
// llm-foundry's `attn_impl: triton`) at the paper's ratios to FlashAttention-2. Only kFlash is
// timed.
enum class Attention { kUnfused, kFlash, kFlash2, kFlash1, kFlash1Triton };
inline bool IsFused(Attention a) { return a != Attention::kUnfused; }
// The named fused kernels: priced from published figures, never timed by the worker.
inline bool IsNamedFusedKernel(Attention a) {
  return a == Attention::kFlash2 || a == Attention::kFlash1 || a == Attention::kFlash1Triton;
}
enum class Workload { kTraining, kPrefill, kDecode };
enum class Norm { kLayerNorm, kRmsNorm };
// Which linear layers carry a bias vector (affects the parameter count only).
enum class Bias { kNone, kQkv, kAll };

// Bytes of one element of the GEMM operands.
int DTypeBytes(DType dtype);
// Bytes of one element of a GEMM's output: FP8 GEMMs write BF16 in training recipes; the others
// write their input type.
int OutputDTypeBytes(DType dtype);
absl::string_view DTypeName(DType dtype);  // "bf16", "fp16", "fp32", "tf32", "fp8_e4m3"
absl::StatusOr<DType> ParseDType(absl::string_view name);
absl::string_view MlpName(Mlp mlp);                    // "gelu", "swiglu"
// "unfused", "flash", "flash2", "flash1", "flash1_triton"
absl::string_view AttentionName(Attention attention);
absl::StatusOr<Attention> ParseAttention(absl::string_view name);
absl::string_view WorkloadName(Workload workload);  // "training", "prefill", "decode"
absl::StatusOr<Workload> ParseWorkload(absl::string_view name);

// Allowed ranges. They keep every derived quantity (M·N·K, parameter and FLOP counts) far inside
// int64 and double precision, and every request's work bounded.
inline constexpr int64_t kMaxHiddenSize = 262'144;
inline constexpr int64_t kMaxHeads = 16'384;
inline constexpr int64_t kMaxHeadDim = 4'096;
inline constexpr int64_t kMaxLayers = 4'096;
inline constexpr int64_t kMaxFfnHiddenSize = 4'194'304;
inline constexpr int64_t kMaxVocabSize = 16'777'216;
inline constexpr int64_t kMaxSeqLength = 1'048'576;
inline constexpr int64_t kMaxMicroBatch = 65'536;
inline constexpr int64_t kMaxTokensPerMicroBatch = 67'108'864;  // b·s
inline constexpr int64_t kMaxTensorParallel = 1'024;
inline constexpr int64_t kMaxPipelineParallel = 1'024;
inline constexpr int64_t kMaxKvCacheLength = 16'777'216;
inline constexpr int64_t kMaxLearnedPositions = 16'777'216;
inline constexpr int64_t kMaxExperts = 1'024;
inline constexpr int64_t kMaxDataParallel = 1'048'576;
inline constexpr int64_t kMaxContextParallel = 1'024;

inline constexpr int64_t kMaxNameLength = 256;  // characters of ModelSpec.name
inline constexpr int64_t kMaxMambaHeads = 65'536;
inline constexpr int64_t kMaxMambaStateDim = 4'096;
inline constexpr int64_t kMaxMambaConvKernel = 64;
inline constexpr int64_t kMaxMambaChunkSize = 4'096;
// The letters of ModelSpec::hybrid_pattern.
inline constexpr char kHybridMamba = 'M';
inline constexpr char kHybridAttention = '*';
inline constexpr char kHybridMlp = '-';
inline constexpr char kHybridMoe = 'E';

inline constexpr int64_t kDefaultSeqLength = 2048;
inline constexpr int64_t kDefaultMicroBatch = 1;

struct ModelSpec {
  std::string name;                 // free text, e.g. "pythia-2.8b"
  int64_t hidden_size = 0;          // h
  int64_t num_attention_heads = 0;  // a
  int64_t num_kv_heads = 0;         // a_kv; 0 = a (multi-head attention)
  int64_t head_dim = 0;             // d; 0 = h / a
  int64_t num_layers = 0;           // L
  int64_t ffn_hidden_size = 0;      // f; 0 = 4h (GELU) or ceil(8h/3) (SwiGLU)
  Mlp mlp = Mlp::kGelu;
  bool fused_gate_up = true;      // SwiGLU: gate and up projections as one GEMM with N = 2f/t
  int64_t vocab_size = 0;         // v
  int64_t seq_length = 0;         // s; 0 = kDefaultSeqLength
  int64_t micro_batch_size = 0;   // b; 0 = kDefaultMicroBatch
  int64_t tensor_parallel = 0;    // t; 0 = 1
  int64_t pipeline_parallel = 0;  // pipeline stages; 0 = 1; must divide num_layers
  // Data-parallel replicas the optimizer state is sharded over (Megatron's distributed
  // optimizer, ZeRO stage 1); 0 = 1 (not sharded). Only the memory estimate uses it.
  int64_t data_parallel = 0;
  // Context parallelism (Megatron-Core's, ring attention): the sequence split over c ranks of
  // each tensor-parallel group's neighbours, each holding 2 of 2c chunks so that causal work
  // balances. Every linear GEMM then has b·s/c rows; attention runs c blocks of (s/c)² per layer
  // (one causal, the others half-masked: the same work), with K and V passed around the ring.
  // Weights are replicated over the c ranks (their gradients reduce with data parallelism's).
  // 0 = 1. Training and prefill only; s must divide by 2c.
  int64_t context_parallel = 0;
  // Expert parallelism (Megatron-Core's --expert-model-parallel-size): the routed experts of every
  // MoE layer split over e ranks of the data- and context-parallel ones (e must divide E and,
  // in a run, d·c), each holding E/e experts whole-width over t (expert tensor parallelism = t).
  // Tokens go to their experts' ranks and back by all-to-all (dispatch and combine); each rank's
  // expert GEMMs take e times the rows of E/e experts. 0 = 1. Needs num_experts > 0.
  int64_t expert_parallel = 0;
  // The tensor-parallel degree of the experts (Megatron-Core's --expert-tensor-parallel-size):
  // 0 = tensor_parallel (each expert's width split over the same t ranks); 1 = whole experts,
  // the t ranks joining the expert-parallel group instead (e must divide t·d·c then), each
  // running its own T/t tokens' share. No other value is modelled.
  int64_t expert_tensor_parallel = 0;
  // The experts' capacity factor C (GShard, Switch Transformer; Megatron-Core's
  // --moe-expert-capacity-factor with --moe-pad-expert-input-to-capacity): every expert runs a
  // fixed C times its balanced share of the routed tokens, padded (or dropped) to it, and the
  // all-to-all carries the padded buffers. 0 = dropless (Megatron-Core's default): each expert
  // runs the tokens routed to it, balanced routing assumed. Range 0 or [0.25, 16].
  double moe_capacity_factor = 0;
  // Dropless routing's imbalance across expert-parallel ranks σ: the busiest rank's routed tokens
  // over the mean. Every rank's expert GEMMs (and the all-to-all it receives) are priced at the
  // busiest rank's, min(σ, e) times the mean: the others wait for it. 0 = 1 (balanced, as
  // NVIDIA's MoE benchmarks force it); with one expert-parallel rank it changes nothing (one
  // grouped GEMM runs all the copies). Range 0 or [1, 16]; needs dropless routing (capacity 0).
  double moe_routing_skew = 0;
  DType dtype = DType::kBf16;
  Attention attention = Attention::kFlash;
  Workload workload = Workload::kTraining;
  bool tied_embeddings = false;  // output projection shares the input embedding matrix
  int64_t kv_cache_length = 0;   // decode: tokens already in the KV cache; 0 = seq_length
  Norm norm = Norm::kLayerNorm;
  Bias bias = Bias::kNone;
  int64_t learned_position_embeddings = 0;  // rows of a learned position table (GPT-2); 0 = none
  // Mixture of experts (Mixtral, Qwen-MoE, DeepSeek-MoE): every layer's MLP is num_experts
  // experts of width ffn_hidden_size, a router (h × E) picks experts_per_token of them per token,
  // plus always-on shared experts of total width shared_expert_ffn_hidden_size (0 = none), with
  // an optional sigmoid gate (h × 1) on them (Qwen2-MoE). num_experts 0 = a dense MLP.
  int64_t num_experts = 0;
  int64_t experts_per_token = 0;  // k; 0 = 1 when num_experts > 0
  int64_t shared_expert_ffn_hidden_size = 0;
  bool shared_expert_gate = false;
  // Group-limited routing (DeepSeek-V2/V3's n_group and topk_group): the routed experts form
  // `expert_groups` groups of E/G consecutive experts and each token's k experts come from at
  // most `expert_groups_per_token` of them; with expert parallelism over whole groups per node it
  // is DeepSeek-V3's node-limited routing (each token to at most M nodes). 0 = no groups (1).
  int64_t expert_groups = 0;
  int64_t expert_groups_per_token = 0;  // M; 0 = every group
  // Models that mix dense and MoE layers. The first `first_dense_layers` layers have a dense MLP
  // (DeepSeek's first_k_dense_replace); after them every `moe_layer_interval`-th layer is MoE and
  // the others dense (Llama 4 Maverick's interleave_moe_layer_step 2, Qwen-MoE's
  // decoder_sparse_step): layer i is MoE when i >= first_dense_layers and (i − first_dense_layers
  // + 1) is a multiple of the interval. 0 = 1 (every layer). Dense layers' MLP width is
  // `dense_ffn_hidden_size` (0 = ffn_hidden_size). All three need num_experts > 0.
  int64_t first_dense_layers = 0;
  int64_t moe_layer_interval = 0;  // 0 = 1
  int64_t dense_ffn_hidden_size = 0;
  // Multi-head latent attention (DeepSeek-V2/V3): keys and values come from a compressed latent
  // of `kv_lora_rank` (0 = no MLA) per token, queries from one of `q_lora_rank` (0 = a full query
  // projection). head_dim is the query/key head dim (nope + rope parts), `qk_rope_head_dim` of it
  // the rotary part carried beside the latent, and `v_head_dim` the value head dim (0 = head_dim).
  int64_t kv_lora_rank = 0;
  int64_t q_lora_rank = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  // Local attention: `sliding_window_layers` layers (0 = all, when a window is set) attend only
  // to the last `sliding_window` tokens (0 = none): Mistral, Gemma 2 and 3, GPT-OSS.
  int64_t sliding_window = 0;
  int64_t sliding_window_layers = 0;
  // A clamped gated MLP (GPT-OSS's swiglu_limit): the gate half clamped above at glu_clamp and the
  // linear half to ±glu_clamp before the activation; 0 = none. No GEMM changes; the clamp is
  // elementwise work (RunConfig::moe_unfused_ops prices it as Megatron-Core runs it). Range 0 or
  // (0, 1e6]; needs a gated MLP (swiglu).
  double glu_clamp = 0;
  // Hybrid models (NVIDIA's Nemotron-H and Nemotron 3, Megatron-Core's MambaModel): the layers in
  // order as Megatron-Core's hybrid_override_pattern spells them, one letter a layer, each layer
  // one block with its own pre-norm and residual: 'M' a Mamba-2 mixer, '*' self-attention, '-' a
  // dense MLP, 'E' a mixture-of-experts MLP. Empty = a transformer (every layer attention and an
  // MLP). With a pattern, num_layers is its length (0 = take it), the MoE layers are its 'E's
  // (first_dense_layers and moe_layer_interval stay 0) and the attention fields describe the '*'
  // layers.
  std::string hybrid_pattern;
  // The Mamba-2 mixer (Dao and Gu 2024, "Transformers are SSMs", arXiv 2405.21060; Megatron-Core's
  // MambaMixer): in_proj h -> 2·d_inner + 2·G·N + H (z, x, B, C and dt), a depthwise causal conv1d
  // of `mamba_conv_kernel` taps over x, B and C, the chunked state-space scan (SSD, chunks of
  // `mamba_chunk_size` tokens) of H heads of `mamba_head_dim` (d_inner = H·P) with G groups of
  // B and C of `mamba_state_dim` N, a gated RMSNorm, out_proj d_inner -> h. Tensor parallelism
  // splits the heads and groups. 0 = Megatron-Core's default: H = 2h/P, P 64, N 128, G 8, 4
  // taps, chunks of 128.
  int64_t mamba_heads = 0;
  int64_t mamba_head_dim = 0;
  int64_t mamba_state_dim = 0;
  int64_t mamba_groups = 0;
  int64_t mamba_conv_kernel = 0;
  int64_t mamba_chunk_size = 0;
  // Multi-token prediction modules the model's checkpoint carries beside it (DeepSeek-V3's
  // num_nextn_predict_layers: 1). The architecture's, not the run's: a step trains them only with
  // RunConfig::mtp_layers, and the answer says so. Range [0, 8].
  int64_t mtp_modules = 0;

  friend bool operator==(const ModelSpec&, const ModelSpec&) = default;
};

// One problem with one field, e.g. {"num_attention_heads", "must divide hidden_size (4096); got
// 48"}.
struct FieldViolation {
  std::string field;
  std::string description;
  friend bool operator==(const FieldViolation&, const FieldViolation&) = default;
};

// Adds "must be in [lo, hi]; got value" for `field` when value is outside [lo, hi].
void AddRangeViolation(std::vector<FieldViolation>& out, absl::string_view field, int64_t value,
                       int64_t lo, int64_t hi);
inline void CheckRange(std::vector<FieldViolation>& out, absl::string_view field, int64_t value,
                       int64_t lo, int64_t hi) {
  if (value < lo || value > hi) [[unlikely]] {
    AddRangeViolation(out, field, value, lo, hi);
  }
}

inline bool IsHybrid(const ModelSpec& spec) { return !spec.hybrid_pattern.empty(); }
// Layers with attention: a hybrid model's '*' layers, else every layer.
int64_t AttentionLayers(const ModelSpec& spec);

// Returns `spec` with every "0 = default" field filled in. Does not validate.
ModelSpec WithDefaults(const ModelSpec& spec);

// Layers per pipeline stage. Even when the stages divide the layers; otherwise as Megatron-Core
// splits them (--decoder-first/last-pipeline-num-layers): the middle stages take ceil(L/p) each
// and the first and last share the rest, the first taking the smaller half (Llama 3 405B's 126
// layers on 16 stages: 7, 8 × 14, 7). `valid` is false when no such split exists (one stage with
// a remainder, or the first or last left with no layer).
struct PipelineSplit {
  int64_t first = 0, middle = 0, last = 0;
  bool even = true;
  bool valid = true;
};
PipelineSplit SplitLayers(int64_t layers, int64_t stages);

// A hybrid model's checks (core/model_spec_hybrid.cc, part of Validate): the pattern's letters
// against num_layers, num_experts and the fields it decides; its Mamba-2 mixers' ranges and their
// split over tensor_parallel; mamba_* fields only with 'M' layers.
void ValidateHybrid(const ModelSpec& s, std::vector<FieldViolation>& v);

// Checks a spec (after WithDefaults) and returns every violation, not just the first: ranges of
// each field, and the divisibility the GEMM mapping needs (heads divide hidden unless head_dim is
// given, kv heads divide heads, tensor parallel divides heads and the MLP width, ...).
std::vector<FieldViolation> Validate(const ModelSpec& spec);

// INVALID_ARGUMENT listing every violation ("field: description; field: description"), or OK.
// `field_prefix` is prepended to each field name (e.g. "model.").
absl::Status ViolationsToStatus(const std::vector<FieldViolation>& violations,
                                absl::string_view field_prefix = "");

// WithDefaults + Validate, as one status.
absl::StatusOr<ModelSpec> NormalizeSpec(const ModelSpec& spec);

// Largest power of two dividing `x` (x > 0), capped at 2^30.
int64_t LargestPow2Factor(int64_t x);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_MODEL_SPEC_H_
