#include "core/memory.h"

#include "bench/zero_figures.h"
#include "core/gpu_catalog.h"
#include "core/model_stats.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/test_specs.h"

namespace wavecrest {
namespace {

// A GPT layer (or `layers` of them) at 2k tokens, over `cp` context-parallel ranks.
ModelSpec GptLayer(int64_t layers = 1, int64_t cp = 1) {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_layers = layers;
  s.context_parallel = cp;
  s.vocab_size = 1024;
  s.seq_length = 2048;
  s.micro_batch_size = 2;
  return *NormalizeSpec(s);
}

// Korthikanti et al. 2022 (arXiv 2205.05198), eq. 2: a GPT layer stores s·b·h·(10 + 24/t +
// 5·a·s/(h·t)) bytes; FlashAttention drops the score term (34·s·b·h at t = 1).
TEST(MemoryTest, ActivationsFollowKorthikantiForAGptLayer) {
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  ModelSpec s = GptLayer();
  const double sbh = 2048.0 * 2 * 4096;
  const double logits = 4.0 * 2048 * 2 * 1024;
  EXPECT_DOUBLE_EQ(EstimateMemory(s, gpu).activations_bytes - logits, 34 * sbh);
  s.attention = Attention::kUnfused;
  EXPECT_DOUBLE_EQ(EstimateMemory(s, gpu).activations_bytes - logits,
                   sbh * (34 + 5.0 * 32 * 2048 / 4096));
  s.attention = Attention::kFlash;
  s.tensor_parallel = 4;
  EXPECT_DOUBLE_EQ(EstimateMemory(*NormalizeSpec(s), gpu).activations_bytes - logits / 4,
                   sbh * (10 + 24.0 / 4));
  // Full recomputation keeps the layer input (2·s·b·h) plus one layer's activations.
  s.tensor_parallel = 1;
  const MemoryEstimate m = EstimateMemory(s, gpu);
  EXPECT_DOUBLE_EQ(m.activations_full_recompute_bytes - logits, 2 * sbh + 34 * sbh);
}

// FP8 (Transformer Engine): the QKV's, the MLP's and the second MLP GEMM's inputs kept as 1-byte
// casts, the projection's cast beside the attention kernel's 16-bit output: a GPT layer (4h GELU
// MLP) stores 34 - 1 - 1 - 4 + 1 = 29 s·b·h at t = 1.
TEST(MemoryTest, Fp8KeepsTheLinearInputsAsOneByteCasts) {
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  ModelSpec s = GptLayer();
  s.dtype = DType::kFp8E4M3;
  s = *NormalizeSpec(s);
  const double sbh = 2048.0 * 2 * 4096;
  const double logits = 4.0 * 2048 * 2 * 1024;
  EXPECT_DOUBLE_EQ(EstimateMemory(s, gpu).activations_bytes - logits, 29 * sbh);
  EXPECT_LT(EstimateMemory(s, gpu).activations_bytes,
            EstimateMemory(GptLayer(), gpu).activations_bytes);
}

// 18 bytes per parameter (BF16 weights, FP32 gradients, FP32 master + Adam), 6 + 12/d with the
// optimizer sharded over d replicas (Megatron-LM's distributed optimizer guide).
TEST(MemoryTest, ModelStateIsEighteenBytesAParameterOrShardedOverDataParallel) {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_layers = 32;
  s.vocab_size = 32000;
  s.mlp = Mlp::kSwiglu;
  s.ffn_hidden_size = 11008;
  s.norm = Norm::kRmsNorm;
  s = *NormalizeSpec(s);
  const GpuSpec& a100 = **FindGpu("a100-sxm-80gb");
  const double params = static_cast<double>(CountParams(s).total_params);  // Llama-2-7B, 6.74B
  MemoryEstimate m = EstimateMemory(s, a100);
  // (The final norm, 4096 parameters, sits on the last stage: not in the first stage's state.)
  EXPECT_NEAR((m.weights_bytes + m.gradients_bytes + m.optimizer_bytes) / params, 18.0, 1e-4);
  EXPECT_FALSE(m.fits);  // 121 GB of state on one 80 GB GPU: not without sharding
  s.data_parallel = 8;
  m = EstimateMemory(s, a100);
  EXPECT_NEAR((m.weights_bytes + m.gradients_bytes + m.optimizer_bytes) / params, 6.0 + 12.0 / 8,
              1e-4);
  EXPECT_TRUE(m.fits);
  // Tensor and pipeline parallelism split the state: the first of 4 stages holds 8 layers and
  // the embedding.
  s.pipeline_parallel = 4;
  s.tensor_parallel = 2;
  const MemoryEstimate split = EstimateMemory(s, a100);
  EXPECT_LT(split.weights_bytes, m.weights_bytes / 4);
}

// A multi-token prediction module on one stage: a mean layer's parameters, the 2h × h projection
// and two norms more state (18 bytes a parameter), and its layer's activations, its projection's
// 2h input and another FP32 logits buffer. With a pipeline it is on the last stage.
TEST(MemoryTest, MultiTokenPredictionAddsItsModuleOnTheLastStage) {
  ModelSpec s = GptLayer(4);
  const GpuSpec& gpu = testing::H100();
  MemoryLayout layout;
  const MemoryEstimate base = EstimateMemory(s, gpu, layout);
  layout.mtp_layers = 1;
  const MemoryEstimate mtp = EstimateMemory(s, gpu, layout);
  const double h = 4096, sb = 2048.0 * 2;
  const double module = static_cast<double>(CountParams(s).per_layer_params) + 2 * h * h + 2 * h;
  EXPECT_NEAR((mtp.weights_bytes + mtp.gradients_bytes + mtp.optimizer_bytes) -
                  (base.weights_bytes + base.gradients_bytes + base.optimizer_bytes),
              18 * module, 1.0);
  const double layer = 34 * sb * h;  // GptLayer's per-layer activations (Korthikanti, above)
  EXPECT_DOUBLE_EQ(mtp.activations_bytes - base.activations_bytes,
                   layer + 2 * sb * 2 * h + 4 * sb * 1024);
  // Two stages of two layers: the first holds two micro-batches of its layers, the last one and
  // the logits; the module makes the last the fullest.
  s.pipeline_parallel = 2;
  s = *NormalizeSpec(s);
  EXPECT_EQ(EstimateMemory(s, gpu, MemoryLayout()).stage, 0);
  const MemoryEstimate last = EstimateMemory(s, gpu, layout);
  EXPECT_EQ(last.stage, 1);
  EXPECT_DOUBLE_EQ(last.activations_bytes, 2 * layer + layer + 2 * sb * 2 * h + 2 * 4 * sb * 1024);
}

// PyTorch's eager cross_entropy over an FP32 copy holds 12 bytes a logit at backward's start where
// a fused loss keeps its 4-byte softmax: 8·s·b·V/t more on the last stage; names parse both ways.
TEST(MemoryTest, AnEagerLossHoldsThreeFp32CopiesOfTheLogits) {
  const ModelSpec s = GptLayer();
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  MemoryLayout layout;
  const MemoryEstimate fused = EstimateMemory(s, gpu, layout);
  layout.loss = LossKernel::kEager;
  const MemoryEstimate eager = EstimateMemory(s, gpu, layout);
  EXPECT_DOUBLE_EQ(eager.activations_bytes - fused.activations_bytes, 8 * 2048.0 * 2 * 1024);
  EXPECT_EQ(*ParseLossKernel(""), LossKernel::kFused);
  EXPECT_EQ(*ParseLossKernel("eager"), LossKernel::kEager);
  EXPECT_EQ(LossKernelName(*ParseLossKernel("fused")), "fused");
  EXPECT_THAT(std::string(ParseLossKernel("chunked").status().message()),
              ::testing::HasSubstr("\"chunked\"; allowed: fused, eager"));
}

// PyTorch's context-parallel ring holds, while a layer's attention runs, the c ranks' gathered K
// and V of the query heads and three FP32 copies of its own K and V's gradients: (c + 6) chunks of
// b·(s/c)·heads·(d + d)·2 bytes; not beside the loss's logits, the larger of the two counted.
TEST(MemoryTest, PyTorchsRingHoldsTheGatheredKeysAndValuesOrTheLossWhicheverIsLarger) {
  ModelSpec s = GptLayer(1, 4);
  const GpuSpec& gpu = testing::H100();
  MemoryLayout layout;
  const MemoryEstimate te = EstimateMemory(s, gpu, layout);
  layout.torch_cp_ring = true;
  const MemoryEstimate torch = EstimateMemory(s, gpu, layout);
  const double chunk = 2 * (2048.0 / 4) * 32 * (128 + 128) * 2;  // b · s/c · a · (d + d) · 2 B
  const double loss = 4 * 2 * (2048.0 / 4) * 1024;                // the fused loss's FP32 logits
  EXPECT_DOUBLE_EQ(torch.activations_bytes - te.activations_bytes, (4 + 6) * chunk - loss);
  // A vocabulary whose logits outweigh the ring's buffers: the loss is the peak, as before.
  s.vocab_size = 1 << 20;
  s = *NormalizeSpec(s);
  EXPECT_DOUBLE_EQ(EstimateMemory(s, gpu, layout).activations_bytes,
                   EstimateMemory(s, gpu, MemoryLayout()).activations_bytes);
}

// Every stage is estimated and the fullest kept: under 1F1B stage r holds p − r micro-batches of
// its layers (the first the most), the last holds the output layer and the FP32 logits (a large
// vocabulary makes it the fullest), and an uneven split can make a middle stage the fullest
// (Megatron-Core's: 126 layers on 16 stages, 7, 8 × 14, 7: stage 1 holds 15 micro-batches of 8
// layers, 120 layers' worth, the first 16 of 7, 112).
TEST(MemoryTest, TheFullestPipelineStageIsReported) {
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  ModelSpec s = GptLayer();
  s.num_layers = 8;
  s.pipeline_parallel = 4;
  s = *NormalizeSpec(s);
  const double layer = 34 * 2048.0 * 2 * 4096;
  MemoryEstimate m = EstimateMemory(s, gpu);
  EXPECT_EQ(m.stage, 0);
  EXPECT_DOUBLE_EQ(m.activations_bytes, 4 * 2 * layer);  // p = 4 micro-batches of 2 layers
  s.vocab_size = 262144;  // Gemma 3's: 4 GiB of FP32 logits and 1B parameters on the last stage
  s = *NormalizeSpec(s);
  m = EstimateMemory(s, gpu);
  EXPECT_EQ(m.stage, 3);
  EXPECT_DOUBLE_EQ(m.activations_bytes, 2 * layer + 4.0 * 2048 * 2 * 262144);
  s.vocab_size = 1024;
  s.num_layers = 126;
  s.pipeline_parallel = 16;
  s = *NormalizeSpec(s);
  m = EstimateMemory(s, gpu);
  EXPECT_EQ(m.stage, 1);
  EXPECT_DOUBLE_EQ(m.activations_bytes, 15 * 8 * layer);
  // The interleaved schedule (v = 2, 128 layers: 8 a stage, chunks of 4): the first stage holds
  // 2(p − 1) + (v − 1)p + 1 = 47 chunks, stage 1 45; with as many micro-batches as stages, all
  // m·v = 32 chunks.
  MemoryLayout interleaved;
  interleaved.interleave = 2;
  interleaved.microbatches = 64;
  s.num_layers = 128;
  s = *NormalizeSpec(s);
  m = EstimateMemory(s, gpu, interleaved);
  EXPECT_EQ(m.stage, 0);
  EXPECT_DOUBLE_EQ(m.activations_bytes, 47 * 4 * layer);
  interleaved.microbatches = 16;
  EXPECT_DOUBLE_EQ(EstimateMemory(s, gpu, interleaved).activations_bytes, 32 * 4 * layer);
}

// The published ZeRO figures (bench/zero_figures.h: the ZeRO paper's Figure 1 and DeepSpeed's
// estimator examples) within 10%, each under its publication's gradient accounting. DeepSpeed's
// ZeRO-2 keeps the 16-bit gradients whole, which wavecrest's ZeRO-2 does not: that row differs by
// exactly those 2 bytes per parameter.
TEST(MemoryTest, ZeroStagesMatchThePublishedFigures) {
  const GpuSpec& gpu = **FindGpu("a100-sxm-80gb");
  for (const ZeroFigure& f : kZeroFigures) {
    const ModelSpec s = ZeroFigureSpec(f);
    const double params = static_cast<double>(CountParams(s).total_params);
    EXPECT_NEAR(params, f.zero_paper ? 7.5e9 : 2851e6, (f.zero_paper ? 0.01 : 0.001) *
                                                           (f.zero_paper ? 7.5e9 : 2851e6));
    const double ours = ModelStateBytes(EstimateMemory(s, gpu, ZeroFigureLayout(f)), f);
    const double compared = f.by_design_different ? ours + 2 * params : ours;
    EXPECT_NEAR(compared / f.published_bytes, 1.0, 0.10) << f.source << ": " << ours / 1e9 << " GB";
  }
}

TEST(MemoryTest, DecodeCountsTheKvCacheOfItsKvHeads) {
  ModelSpec s = GptLayer();
  s.num_layers = 32;
  s.workload = Workload::kDecode;
  s.kv_cache_length = 4096;
  s.micro_batch_size = 8;
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  const double mha = EstimateMemory(*NormalizeSpec(s), gpu).kv_cache_bytes;
  EXPECT_DOUBLE_EQ(mha, 2.0 * 32 * 8 * 4096 * 4096 * 2);  // K and V, L, b, tokens, a·d, 2 bytes
  s.num_kv_heads = 8;
  EXPECT_DOUBLE_EQ(EstimateMemory(*NormalizeSpec(s), gpu).kv_cache_bytes, mha / 4);
  EXPECT_EQ(EstimateMemory(*NormalizeSpec(s), gpu).gradients_bytes, 0);
  // Local attention keeps only the window in half the layers.
  s.sliding_window = 1024;
  s.sliding_window_layers = 16;
  EXPECT_DOUBLE_EQ(EstimateMemory(*NormalizeSpec(s), gpu).kv_cache_bytes,
                   mha / 4 * (16 * 4096.0 + 16 * 1024.0) / (32 * 4096.0));
  // Multi-head latent attention keeps the latent and the rotary key per token (512 + 64), whole
  // on every rank, instead of K and V of every head.
  ModelSpec mla = GptLayer();
  mla.num_layers = 32;
  mla.workload = Workload::kDecode;
  mla.kv_cache_length = 4096;
  mla.micro_batch_size = 8;
  mla.head_dim = 192;
  mla.qk_rope_head_dim = 64;
  mla.kv_lora_rank = 512;
  mla.tensor_parallel = 8;
  EXPECT_DOUBLE_EQ(EstimateMemory(*NormalizeSpec(mla), gpu).kv_cache_bytes,
                   32.0 * 8 * 4096 * (512 + 64) * 2);
}

// Multi-latent attention stores its latents (the query's and the key-value latent's, as the
// norm's input and the up-projection's, and the rotary key part), whole on every tensor-parallel
// rank; recomputing the up-projections (Megatron-Core's recompute_modules "mla_up_proj") frees the
// full-head Q, K and V and nothing else.
TEST(MemoryTest, RecomputingMlaUpProjectionsFreesTheFullHeadQkv) {
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  ModelSpec mla = testing::WithMla(GptLayer());
  mla.tensor_parallel = 2;
  mla = *NormalizeSpec(mla);
  MemoryLayout kept;
  MemoryLayout freed;
  freed.recompute_mla_up_proj = true;
  const double tokens = 2048.0 * 2;
  const double qkv = 2.0 * 32 * 192 * 3 / 2;  // Q, K and V of 32 heads of 192, over t = 2
  EXPECT_DOUBLE_EQ(EstimateMemory(mla, gpu, kept).activations_bytes -
                       EstimateMemory(mla, gpu, freed).activations_bytes,
                   tokens * qkv);
  // Without MLA the knob changes nothing, and the latents are MLA's alone.
  ModelSpec gqa = GptLayer();
  EXPECT_DOUBLE_EQ(EstimateMemory(gqa, gpu, kept).activations_bytes,
                   EstimateMemory(gqa, gpu, freed).activations_bytes);
  ModelSpec no_latents = mla;
  no_latents.kv_lora_rank = 0;
  no_latents.q_lora_rank = 0;
  no_latents.qk_rope_head_dim = 0;
  EXPECT_DOUBLE_EQ(EstimateMemory(mla, gpu, kept).activations_bytes -
                       EstimateMemory(*NormalizeSpec(no_latents), gpu, kept).activations_bytes,
                   tokens * 2 * (2 * (1536 + 512) + 64));  // the same Q, K and V both
}

}  // namespace
}  // namespace wavecrest
