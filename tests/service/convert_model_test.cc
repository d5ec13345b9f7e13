// The model spec between its proto and the core (service/convert_model.cc): every field round
// trips, UNSPECIFIED enums take their defaults, unknown enum numbers are violations in field order.
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/convert.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

TEST(ConvertModelTest, FieldsRoundTrip) {
  ModelSpec s;
  s.name = "m";
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_kv_heads = 8;
  s.head_dim = 128;
  s.num_layers = 32;
  s.ffn_hidden_size = 14336;
  s.mlp = Mlp::kSwiglu;
  s.fused_gate_up = false;
  s.vocab_size = 128256;
  s.expert_parallel = 4;
  s.num_experts = 8;
  s.experts_per_token = 2;
  s.moe_layer_interval = 2;
  s.kv_lora_rank = 512;
  s.sliding_window = 4096;
  s.attention = Attention::kFlash2;
  s.workload = Workload::kDecode;
  s.norm = Norm::kRmsNorm;
  s.bias = Bias::kQkv;
  std::vector<FieldViolation> v;
  const ModelSpec back = FromProto(ToProto(s), &v);
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(back.name, "m");
  EXPECT_EQ(back.num_kv_heads, 8);
  EXPECT_EQ(back.mlp, Mlp::kSwiglu);
  EXPECT_FALSE(back.fused_gate_up);
  EXPECT_EQ(back.expert_parallel, 4);
  EXPECT_EQ(back.num_experts, 8);
  EXPECT_EQ(back.moe_layer_interval, 2);
  EXPECT_EQ(back.kv_lora_rank, 512);
  EXPECT_EQ(back.sliding_window, 4096);
  EXPECT_EQ(back.attention, Attention::kFlash2);
  EXPECT_EQ(back.workload, Workload::kDecode);
  EXPECT_EQ(back.norm, Norm::kRmsNorm);
  EXPECT_EQ(back.bias, Bias::kQkv);
}

TEST(ConvertModelTest, UnspecifiedEnumsTakeTheDefaults) {
  std::vector<FieldViolation> v;
  const ModelSpec s = FromProto(v1::ModelSpec(), &v);
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(s.mlp, Mlp::kGelu);
  EXPECT_TRUE(s.fused_gate_up);  // unset: fused
  EXPECT_EQ(s.attention, Attention::kFlash);
  EXPECT_EQ(s.workload, Workload::kTraining);
  EXPECT_EQ(s.norm, Norm::kLayerNorm);
  EXPECT_EQ(s.bias, Bias::kNone);
}

TEST(ConvertModelTest, UnknownEnumNumbersAreViolationsInFieldOrder) {
  v1::ModelSpec p;
  p.set_mlp(static_cast<v1::Mlp>(77));
  p.set_attention(static_cast<v1::Attention>(77));
  p.set_workload(static_cast<v1::Workload>(77));
  p.set_norm(static_cast<v1::Norm>(77));
  p.set_bias(static_cast<v1::Bias>(77));
  std::vector<FieldViolation> v;
  FromProto(p, &v);
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v[0].field, "mlp");
  EXPECT_EQ(v[0].description, "unknown value 77; allowed: MLP_GELU, MLP_SWIGLU");
  EXPECT_EQ(v[1].field, "attention");
  EXPECT_THAT(v[1].description, HasSubstr("ATTENTION_FLASH1_TRITON"));
  EXPECT_EQ(v[2].field, "workload");
  EXPECT_EQ(v[3].field, "norm");
  EXPECT_EQ(v[4].field, "bias");
  EXPECT_EQ(v[4].description, "unknown value 77; allowed: BIAS_NONE, BIAS_QKV, BIAS_ALL");
}

}  // namespace
}  // namespace wavecrest
