#include "service/assumed.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

ModelSpec Spec(Workload w) {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_layers = 32;
  s.vocab_size = 32000;
  s.workload = w;
  s.seq_length = 4096;
  s.micro_batch_size = 4;
  s.tensor_parallel = 2;
  return WithDefaults(s);
}

TEST(AssumedTest, EachWorkloadSaysItsBatchSequenceAndKvLength) {
  EXPECT_EQ(AssumedSummary(Spec(Workload::kTraining)),
            "training: micro-batch 4 of 4096-token sequences; TP 2, bf16, flash attention");
  EXPECT_EQ(AssumedSummary(Spec(Workload::kPrefill)),
            "prefill: batch 4 of 4096-token prompts; TP 2, bf16, flash attention");
  ModelSpec decode = Spec(Workload::kDecode);
  decode.kv_cache_length = 32768;
  decode.dtype = DType::kFp8E4M3;
  EXPECT_EQ(AssumedSummary(decode),
            "decode: batch 4, 32768 tokens of KV cache per sequence, one new token each per "
            "step; TP 2, fp8_e4m3, flash attention");
  const v1::Assumed a = AssumedOf(decode);
  EXPECT_EQ(a.workload(), v1::WORKLOAD_DECODE);
  EXPECT_EQ(a.kv_cache_length(), 32768);
  EXPECT_EQ(a.micro_batch_size(), 4);
  EXPECT_EQ(a.seq_length(), 4096);
  EXPECT_EQ(a.tensor_parallel(), 2);
  EXPECT_EQ(a.dtype(), v1::DTYPE_FP8_E4M3);
  EXPECT_EQ(a.summary(), AssumedSummary(decode));
  // Training has no KV cache to state.
  EXPECT_EQ(AssumedOf(Spec(Workload::kTraining)).kv_cache_length(), 0);
}

}  // namespace
}  // namespace wavecrest
