// Unit tests of gpu_worker/backend.h without a GPU: timing options from the request, and the
// analytic backend that predicts what the GPU engine would measure (and refuses what it would).
#include "gpu_worker/backend.h"

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/cost_model.h"
#include "core/layer_emulation.h"
#include "core/layer_program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

TEST(ParamsFromProto, DefaultsAndRanges) {
  absl::StatusOr<TimingParams> p = ParamsFromProto(v1::TimingOptions());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->top_k, 8);
  EXPECT_DOUBLE_EQ(p->target_spread, 0.01);
  EXPECT_DOUBLE_EQ(p->max_seconds, 2.0);
  EXPECT_FALSE(p->warm_l2);
  v1::TimingOptions o;
  o.set_autotune_top_k(65);
  EXPECT_THAT(std::string(ParamsFromProto(o).status().message()), HasSubstr("autotune_top_k"));
  o = {};
  o.set_target_relative_spread(-0.1);
  EXPECT_THAT(std::string(ParamsFromProto(o).status().message()),
              HasSubstr("target_relative_spread"));
  o = {};
  o.set_max_seconds_per_gemm(1e9);
  EXPECT_THAT(std::string(ParamsFromProto(o).status().message()), HasSubstr("max_seconds"));
}

TEST(AnalyticBackend, PredictsLabelsAndChecksDtypeAndMemory) {
  auto b = MakeAnalyticBackend("a100-sxm-80gb");
  ASSERT_TRUE(b.ok());
  const v1::DeviceFingerprint fp = (*b)->Fingerprint();
  EXPECT_EQ(fp.backend(), "analytic");
  EXPECT_EQ(fp.catalog_name(), "a100-sxm-80gb");
  EXPECT_THAT(fp.name(), HasSubstr("emulated"));
  const GemmKey key{{4096, 4096, 4096, 1}, Layout::kNN, DType::kBf16};
  absl::StatusOr<v1::GemmTiming> t = (*b)->Time(key, {});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->provenance().source(), v1::SOURCE_PREDICTED);
  EXPECT_EQ(t->provenance().method(), TimingMethod("analytic", false, false));
  EXPECT_EQ(t->layout(), v1::LAYOUT_NN);
  EXPECT_GT(t->time_s(), 0);
  // A100 has no FP8 tensor cores.
  EXPECT_EQ((*b)->Time({{64, 64, 64, 1}, Layout::kTN, DType::kFp8E4M3}, {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // 3 × 2^34 elements of BF16 do not fit in 80 GB.
  EXPECT_EQ((*b)->Time({{int64_t{1} << 17, int64_t{1} << 17, int64_t{1} << 17, 1},
                        Layout::kTN,
                        DType::kBf16},
                       {})
                .status()
                .code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(MakeAnalyticBackend("h900").status().code(), absl::StatusCode::kNotFound);
}

// The emulating worker refuses what the cuBLASLt engine would (core/gemm_plan.h), so that CI sees
// the GPU worker's answers: FP8 backward layouts run (as TN on transposed copies), FP8 dimensions
// off the 16-byte rule and GEMMs longer than the watchdog allows are refused with the reason.
TEST(AnalyticBackend, RefusesWhatTheGpuEngineWouldRefuse) {
  auto b = MakeAnalyticBackend("h100-sxm");
  ASSERT_TRUE(b.ok()) << b.status();
  TimingParams params;
  EXPECT_TRUE((*b)->Time({{4096, 4096, 4096, 1}, Layout::kNN, DType::kFp8E4M3}, params).ok());
  absl::StatusOr<v1::GemmTiming> odd =
      (*b)->Time({{4096, 4096, 4100, 1}, Layout::kTN, DType::kFp8E4M3}, params);
  EXPECT_EQ(odd.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(odd.status().message()), HasSubstr("not a multiple of 16"));
  params.watchdog_s = 1;
  absl::StatusOr<v1::GemmTiming> slow =
      (*b)->Time({{40000, 40000, 40000, 1}, Layout::kTN, DType::kFp32}, params);
  EXPECT_EQ(slow.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(slow.status().message()), HasSubstr("watchdog"));
  params.watchdog_s = 0;
  EXPECT_TRUE((*b)->Time({{40000, 40000, 40000, 1}, Layout::kTN, DType::kFp32}, params).ok());
}

TEST(AnalyticBackend, TimesLayersAsTheirProgramAndRefusesWhatCannotFit) {
  auto b = MakeAnalyticBackend("h100-sxm");
  ASSERT_TRUE(b.ok());
  ModelSpec m;
  m.hidden_size = 4096;
  m.num_attention_heads = 32;
  m.num_layers = 32;
  m.vocab_size = 50304;
  m.attention = Attention::kUnfused;
  auto key = MakeLayerKey(LayerKind::kUnfusedAttention, *NormalizeSpec(m));
  ASSERT_TRUE(key.ok());
  TimingParams params;
  absl::StatusOr<v1::LayerTiming> t = (*b)->TimeLayer(*key, params);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->provenance().source(), v1::SOURCE_PREDICTED);
  EXPECT_EQ(t->provenance().method(),
            absl::StrCat(kCostModelName, " emulated layer program cold-L2"));
  // The program priced kernel by kernel, beside the planner's sum of parts.
  const GpuSpec& h100 = **FindGpu("h100-sxm");
  EXPECT_DOUBLE_EQ(t->time_s(), EmulateLayerProgram(h100, *key, *PlanLayerProgram(*key)).time_s);
  EXPECT_DOUBLE_EQ(t->predicted_program_s(), t->time_s());
  EXPECT_DOUBLE_EQ(t->predicted_sum_s(), PredictLayer(h100, *key).time_s);
  EXPECT_GT(t->predicted_elementwise_s(), 0);  // the softmax
  EXPECT_TRUE(t->sum_of_parts_reason().empty());
  EXPECT_EQ(t->key(), LayerKeyString(*key));
  // Unfused attention at s = 65536 holds b·a·s² scores: far beyond 80 GB.
  m.seq_length = 65536;
  key = MakeLayerKey(LayerKind::kUnfusedAttention, *NormalizeSpec(m));
  ASSERT_TRUE(key.ok());
  EXPECT_GT(PlanLayerProgram(*key)->bytes, int64_t{80} << 30);
  t = (*b)->TimeLayer(*key, params);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(t.status().message(), ::testing::HasSubstr("MiB of device memory"));
  // FP8 on an A100: refused as the GPU engine would.
  auto a100 = MakeAnalyticBackend("a100-sxm4-80gb");
  m.seq_length = 2048;
  m.dtype = DType::kFp8E4M3;
  key = MakeLayerKey(LayerKind::kTransformerLayer, *NormalizeSpec(m));
  EXPECT_EQ((*a100)->TimeLayer(*key, params).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // A mixture of experts runs whole: its program, grouped experts included; slower than the
  // planner's batched experts under a skewed routing.
  m.dtype = DType::kBf16;
  m.num_experts = 8;
  m.experts_per_token = 2;
  const ModelSpec moe = *NormalizeSpec(m);
  key = MakeLayerKey(LayerKind::kTransformerLayer, moe, DefaultRole(moe), MoeRouting{1.5, {}});
  t = (*b)->TimeLayer(*key, params);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->key(), ::testing::HasSubstr("moe8x2 zipf1.5"));
  EXPECT_GT(t->time_s(), t->predicted_sum_s());
}

}  // namespace
}  // namespace wavecrest
