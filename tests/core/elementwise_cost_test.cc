// The step's elementwise work (core/elementwise_cost.h): bytes moved at the elementwise bandwidth,
// and what FP8 training's casts add.
#include "core/elementwise_cost.h"

#include "core/gpu_catalog.h"
#include "core/model_spec.h"
#include "tests/core/test_specs.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

// A MoE layer's experts cast their own inputs (after the permutation and the activation) and
// each token's k copies pass the up projection's input and the down projection's output
// gradient: Qwen3-30B-A3B-like, 128 experts of 768, top 8, whole experts over EP 8 on t = 1.
TEST(ElementwiseCostTest, Fp8MoeLayersCastEachTokensExpertCopies) {
  ModelSpec s = testing::LlamaLike(2048, 32, 4, 48, 768, 151936);
  s.num_experts = 128;
  s.experts_per_token = 8;
  s.dtype = DType::kFp8E4M3;
  s.seq_length = 4096;
  s.head_dim = 128;
  s = *NormalizeSpec(s);
  const double h = 2048, q = 32 * 128, qkv = (32 + 8) * 128, f = 8 * 768, copies = 8 * h;
  EXPECT_DOUBLE_EQ(Fp8CastBytesPerToken(s),
                   3 * q + (h + q) + 4 * (copies + f) + 4 * (qkv + h + 2 * f + copies));
  // More than the same widths priced as a dense MLP, whose input comes out of the norm in FP8.
  EXPECT_GT(Fp8CastBytesPerToken(s), 3 * q + (2 * h + q + f) + 4 * (qkv + h + 2 * f + h));
  // Shared experts add their own input and output gradient.
  ModelSpec shared = s;
  shared.shared_expert_ffn_hidden_size = 768;
  shared = *NormalizeSpec(shared);
  const double fs = 8 * 768 + 768;
  EXPECT_DOUBLE_EQ(Fp8CastBytesPerToken(shared), 3 * q + (h + q) + 4 * (copies + h + fs) +
                                                     4 * (qkv + h + 2 * fs + copies + h));
}

// FP8 training adds Transformer Engine's casts to the step's memory traffic, per token and layer
// on one rank: the projection's input cast alone (3 bytes per element), every linear input
// transposed for wgrad (1), every output gradient cast and transposed (4). BF16 and FP8
// inference add nothing.
TEST(ElementwiseCostTest, Fp8TrainingPaysItsCastsAsMemoryTraffic) {
  ModelSpec s = testing::LlamaLike(8192, 64, 8, 80, 28672, 128256);
  s.tensor_parallel = 8;
  s.seq_length = 4096;
  s.dtype = DType::kFp8E4M3;
  s = *NormalizeSpec(s);
  // q = 64·128/8, qkv = (64 + 16)·128/8, f = 28672/8, SwiGLU up = 2f.
  const double q = 1024, qkv = 1280, f = 3584, h = 8192;
  EXPECT_DOUBLE_EQ(Fp8CastBytesPerToken(s), 3 * q + (2 * h + q + f) + 4 * (qkv + h + 2 * f + h));
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  ModelSpec bf16 = s;
  bf16.dtype = DType::kBf16;
  const ElementwiseEstimate e8 = EstimateElementwise(s, gpu), e16 = EstimateElementwise(bf16, gpu);
  const double bw = gpu.memory_bandwidth_bytes_per_s *
                    gpu.Model(DType::kFp8E4M3).elementwise_memory_efficiency;
  const double tokens = static_cast<double>(Derive(s).tokens);
  EXPECT_NEAR(e8.layer_time_s - e16.layer_time_s, Fp8CastBytesPerToken(s) * tokens / bw, 1e-12);
  EXPECT_GT(e8.time_s, e16.time_s);
  ModelSpec prefill = s;
  prefill.workload = Workload::kPrefill;
  ModelSpec prefill16 = prefill;
  prefill16.dtype = DType::kBf16;
  EXPECT_DOUBLE_EQ(EstimateElementwise(prefill, gpu).layer_time_s,
                   EstimateElementwise(prefill16, gpu).layer_time_s);
}

// Eager PyTorch's Llama block (TorchTitan's): two RMSNorms in FP32 steps (36 bytes an element
// where a fused norm moves 4), the rotary embedding of queries and keys in complex FP32 (20 an
// element), SwiGLU in two kernels (10 an element of the width where fused moves 6). GELU models
// with learned positions and LayerNorm have none of it.
TEST(ElementwiseCostTest, EagerPytorchMovesWhatItsUnfusedOpsMove) {
  ModelSpec s = testing::LlamaLike(4096, 32, 8, 32, 14336, 128256);
  s.seq_length = 8192;
  s.micro_batch_size = 2;
  s = *NormalizeSpec(s);
  EXPECT_DOUBLE_EQ(EagerExtraBytesPerToken(s),
                   2 * 32 * 4096.0 + 20 * (4096 + 1024.0) + 4 * 14336.0);
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  const double bw =
      gpu.memory_bandwidth_bytes_per_s * gpu.Model(DType::kBf16).elementwise_memory_efficiency;
  EXPECT_DOUBLE_EQ(EagerExtraLayerTimeS(s, gpu), 3 * EagerExtraBytesPerToken(s) * 16384 / bw);
  ModelSpec gpt = testing::SmallGpt(1024, 2, 1024);
  gpt.learned_position_embeddings = 1024;
  gpt = *NormalizeSpec(gpt);
  EXPECT_EQ(EagerExtraBytesPerToken(gpt), 0);
}

// Megatron-Core's TEGroupedMLP without fused MoE kernels (RunConfig::moe_unfused_ops), on a
// GPT-OSS-120B-like layer (128 experts of 2880, top 4, hidden 2880, whole experts over EP 8):
// biased experts' output bias added expert by expert in FP32 (28 bytes an element of each copy's
// output forward, 36 backward) and the clamped GLU's clamp and concatenation (16 an element of
// the expert's width forward, 20 backward); experts with neither move nothing more.
TEST(ElementwiseCostTest, MegatronCoresUnfusedExpertOpsMoveWhatItsCodeMoves) {
  const ModelSpec s = *NormalizeSpec(testing::GptOss120B(8));
  const double copies = 4, h = 2880, f = 2880;
  MoeUnfusedBytes b = MoeUnfusedOpsBytesPerToken(s);
  EXPECT_DOUBLE_EQ(b.forward, 28 * copies * h + 16 * copies * f);
  EXPECT_DOUBLE_EQ(b.total, 64 * copies * h + 36 * copies * f);
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  const double bw =
      gpu.memory_bandwidth_bytes_per_s * gpu.Model(DType::kBf16).elementwise_memory_efficiency;
  const MoeUnfusedTime t = MoeUnfusedOpsLayerTimeS(s, gpu);
  EXPECT_DOUBLE_EQ(t.total_s, b.total * 4096 / bw);
  EXPECT_DOUBLE_EQ(t.forward_s, b.forward * 4096 / bw);
  // The bias alone, the clamp alone, neither.
  ModelSpec unclamped = s;
  unclamped.glu_clamp = 0;
  EXPECT_DOUBLE_EQ(MoeUnfusedOpsBytesPerToken(unclamped).total, 64 * copies * h);
  ModelSpec unbiased = s;
  unbiased.bias = Bias::kNone;
  EXPECT_DOUBLE_EQ(MoeUnfusedOpsBytesPerToken(unbiased).total, 36 * copies * f);
  unbiased.glu_clamp = 0;
  EXPECT_EQ(MoeUnfusedOpsBytesPerToken(unbiased).total, 0);
  // A dense model has no experts to run.
  ModelSpec dense = testing::LlamaLike(4096, 32, 8, 32, 14336, 128256);
  dense.bias = Bias::kAll;
  dense.glu_clamp = 7;
  dense = *NormalizeSpec(dense);
  EXPECT_EQ(MoeUnfusedOpsBytesPerToken(dense).total, 0);
}

}  // namespace
}  // namespace wavecrest
