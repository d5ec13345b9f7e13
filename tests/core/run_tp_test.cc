#include "core/run_tp.h"

#include "core/memory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/test_specs.h"

namespace wavecrest {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// GPT-3 2.7B trains on one GPU of a node (the rest data parallel): TP 1 and its neighbour 2, not
// every degree its 32 heads divide (which would refuse the paper's 20 heads of 128).
TEST(RunTpTest, ASmallModelRunsAtTheSmallestDegreeThatFits) {
  ModelSpec s = testing::Pythia28(Attention::kUnfused);
  s.vocab_size = 50257;
  s = *NormalizeSpec(s);
  for (const char* gpu : {"a100-sxm-80gb", "h100-sxm"}) {
    const RunTp r = RunTpDegrees(s, **FindGpu(gpu), {1, 2, 4, 8});
    EXPECT_THAT(r.degrees, ElementsAre(1, 2)) << gpu;
    EXPECT_THAT(r.source, HasSubstr("TP 1 is the smallest")) << gpu;
    EXPECT_THAT(r.source, HasSubstr(gpu));
  }
}

// A model that needs more than one node at any degree keeps every degree it supports.
TEST(RunTpTest, AModelNoNodeHoldsKeepsEveryDegree) {
  ModelSpec s = testing::LlamaLike(8192, 64, 8, 80, 28672, 32000);
  s = *NormalizeSpec(s);
  const RunTp r = RunTpDegrees(s, **FindGpu("h100-sxm"), {1, 2, 4, 8});
  EXPECT_THAT(r.degrees, ElementsAre(1, 2, 4, 8));
  EXPECT_THAT(r.source, HasSubstr("at none of them"));
}

// Serving: the weights and the KV cache at the stated batch and length decide; at half the
// degree chosen they do not fit.
TEST(RunTpTest, DecodeRunsWhereTheWeightsAndTheCacheFit) {
  ModelSpec s = testing::LlamaLike(4096, 32, 32, 32, 11008, 32000);
  s.workload = Workload::kDecode;
  s.micro_batch_size = 16;
  s.kv_cache_length = 32768;
  s = *NormalizeSpec(s);
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  const RunTp r = RunTpDegrees(s, gpu, {1, 2, 4, 8});
  ASSERT_THAT(r.degrees, ElementsAre(2, 4, 8));  // 256 GiB of cache: TP 4
  ModelSpec at = s;
  at.tensor_parallel = 4;
  EXPECT_TRUE(EstimateMemory(*NormalizeSpec(at), gpu).fits);
  at.tensor_parallel = 2;
  EXPECT_FALSE(EstimateMemory(*NormalizeSpec(at), gpu).fits);
}

}  // namespace
}  // namespace wavecrest
