#include "core/model_spec.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::Field;
using ::testing::HasSubstr;

ModelSpec Valid() {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_layers = 32;
  s.vocab_size = 32000;
  return WithDefaults(s);
}

auto Violation(const std::string& field, const std::string& text) {
  return Contains(AllOf(Field(&FieldViolation::field, field),
                        Field(&FieldViolation::description, HasSubstr(text))));
}

TEST(ValidateTest, ValidSpecHasNoViolations) { EXPECT_TRUE(Validate(Valid()).empty()); }

TEST(ValidateTest, DefaultsAreFilled) {
  ModelSpec s = Valid();
  EXPECT_EQ(s.num_kv_heads, 32);
  EXPECT_EQ(s.head_dim, 128);
  EXPECT_EQ(s.ffn_hidden_size, 4 * 4096);
  EXPECT_EQ(s.seq_length, 2048);
  EXPECT_EQ(s.micro_batch_size, 1);
  EXPECT_EQ(s.tensor_parallel, 1);
  EXPECT_EQ(s.kv_cache_length, 2048);
}

struct RangeCase {
  std::string field;
  void (*set)(ModelSpec&, int64_t);
  int64_t bad;
};

class RangeTest : public ::testing::TestWithParam<RangeCase> {};

TEST_P(RangeTest, OutOfRangeNamesFieldAndRange) {
  ModelSpec s = Valid();
  GetParam().set(s, GetParam().bad);
  EXPECT_THAT(Validate(s), Violation(GetParam().field, "must be in ["));
}

#define SETTER(f) [](ModelSpec& s, int64_t v) { s.f = v; }
INSTANTIATE_TEST_SUITE_P(
    Fields, RangeTest,
    ::testing::Values(RangeCase{"hidden_size", SETTER(hidden_size), -1},
                      RangeCase{"hidden_size", SETTER(hidden_size), 1'000'000'000},
                      RangeCase{"num_attention_heads", SETTER(num_attention_heads), -4},
                      RangeCase{"num_kv_heads", SETTER(num_kv_heads), -1},
                      RangeCase{"num_layers", SETTER(num_layers), 0},
                      RangeCase{"num_layers", SETTER(num_layers), 1'000'000},
                      RangeCase{"ffn_hidden_size", SETTER(ffn_hidden_size), -5},
                      RangeCase{"vocab_size", SETTER(vocab_size), 0},
                      RangeCase{"vocab_size", SETTER(vocab_size), int64_t{1} << 40},
                      RangeCase{"seq_length", SETTER(seq_length), -2048},
                      RangeCase{"micro_batch_size", SETTER(micro_batch_size), 100'000},
                      RangeCase{"tensor_parallel", SETTER(tensor_parallel), 4096},
                      RangeCase{"kv_cache_length", SETTER(kv_cache_length), -1},
                      RangeCase{"head_dim", SETTER(head_dim), 100'000},
                      RangeCase{"learned_position_embeddings", SETTER(learned_position_embeddings),
                                -1}),
    [](const auto& i) { return i.param.field + std::to_string(i.index); });
// This file's own (the unity build compiles the next test file after it).
#undef SETTER

TEST(ValidateTest, NamesHoldNoControlCharacters) {
  ModelSpec s = Valid();
  s.name = std::string("llama\0evil", 10);
  EXPECT_THAT(Validate(s), Violation("name", "no control characters"));
  s.name = "llama\x1b[31m";
  EXPECT_THAT(Validate(s), Violation("name", "byte 5 is 27"));
  s.name = "Llama-3 8B (ünïcode ok)";
  EXPECT_TRUE(Validate(s).empty());
}

TEST(ValidateTest, HeadsMustDivideHiddenUnlessHeadDimGiven) {
  ModelSpec s = Valid();
  s.num_attention_heads = 48;
  s.head_dim = 0;
  s = WithDefaults(s);
  EXPECT_THAT(Validate(s), Violation("num_attention_heads", "must divide hidden_size (4096)"));
  s.head_dim = 96;
  s.num_kv_heads = 48;
  EXPECT_TRUE(Validate(s).empty());
}

TEST(ValidateTest, KvHeadsMustDivideHeads) {
  ModelSpec s = Valid();
  s.num_kv_heads = 5;
  EXPECT_THAT(Validate(s), Violation("num_kv_heads", "must divide num_attention_heads (32)"));
}

TEST(ValidateTest, TensorParallelMustDivideHeadsAndWidths) {
  ModelSpec s = Valid();
  s.tensor_parallel = 3;
  const auto v = Validate(s);
  EXPECT_THAT(v, Violation("tensor_parallel", "must divide num_attention_heads (32)"));
  EXPECT_THAT(v, Violation("ffn_hidden_size", "divisible by tensor_parallel (3)"));
  EXPECT_THAT(v, Violation("hidden_size", "divisible by tensor_parallel (3)"));
}

TEST(ValidateTest, TokensPerMicroBatchBounded) {
  ModelSpec s = Valid();
  s.seq_length = 1'048'576;
  s.micro_batch_size = 65'536;
  EXPECT_THAT(Validate(s), Violation("micro_batch_size", "at most 67108864"));
}

// A clamped GLU (GPT-OSS's swiglu_limit) needs a gated MLP and a finite, non-negative clamp.
TEST(ValidateTest, GluClampNeedsAGatedMlpAndARange) {
  ModelSpec s = Valid();  // GELU
  s.glu_clamp = 7;
  EXPECT_THAT(Validate(s), Violation("glu_clamp", "needs mlp swiglu"));
  s.mlp = Mlp::kSwiglu;
  EXPECT_TRUE(Validate(s).empty());
  s.glu_clamp = -1;
  EXPECT_THAT(Validate(s), Violation("glu_clamp", "must be 0 (none) or in (0, 1e6]"));
  s.glu_clamp = std::nan("");
  EXPECT_THAT(Validate(s), Violation("glu_clamp", "must be 0 (none) or in (0, 1e6]"));
}

TEST(ValidateTest, ReportsEveryViolationNotJustTheFirst) {
  ModelSpec s;
  s.hidden_size = -1;
  s.num_attention_heads = -1;
  s.num_layers = -1;
  s.vocab_size = -1;
  const auto v = Validate(WithDefaults(s));
  EXPECT_THAT(v, Violation("hidden_size", "must be in"));
  EXPECT_THAT(v, Violation("num_attention_heads", "must be in"));
  EXPECT_THAT(v, Violation("num_layers", "must be in"));
  EXPECT_THAT(v, Violation("vocab_size", "must be in"));
  EXPECT_GE(v.size(), 4u);
}

TEST(ValidateTest, StatusListsAllFields) {
  ModelSpec s;
  auto st = NormalizeSpec(s).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("hidden_size: must be in [1, 262144]; got 0"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("num_layers"));
}

TEST(ParseTest, NamesRoundTrip) {
  for (DType d : {DType::kBf16, DType::kFp16, DType::kFp32, DType::kTf32, DType::kFp8E4M3}) {
    EXPECT_EQ(*ParseDType(DTypeName(d)), d);
  }
  EXPECT_FALSE(ParseDType("int4").ok());
  EXPECT_EQ(*ParseWorkload("decode"), Workload::kDecode);
  for (Attention a :
       {Attention::kUnfused, Attention::kFlash, Attention::kFlash2, Attention::kFlash1,
        Attention::kFlash1Triton}) {
    EXPECT_EQ(*ParseAttention(AttentionName(a)), a);
  }
  EXPECT_EQ(*ParseAttention("fused"), Attention::kFlash);
  EXPECT_THAT(std::string(ParseAttention("sparse").status().message()),
              HasSubstr("allowed: unfused, flash, flash2, flash1, flash1_triton"));
}

TEST(Pow2Test, LargestFactor) {
  EXPECT_EQ(LargestPow2Factor(80), 16);
  EXPECT_EQ(LargestPow2Factor(50257), 1);
  EXPECT_EQ(LargestPow2Factor(50304), 128);
  EXPECT_EQ(LargestPow2Factor(4096), 4096);
  EXPECT_EQ(LargestPow2Factor(0), 0);
}

}  // namespace
}  // namespace wavecrest
