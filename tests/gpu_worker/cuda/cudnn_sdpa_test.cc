// cuDNN's fused-attention graphs on cuDNN itself, without a GPU: every tensor and operation
// descriptor the worker would build is built and finalized by libcudnn (which checks each
// operation's shapes and types then; only the operation graph and its engines need a device).
// Skips where libcudnn.so.9 cannot be loaded.
#include "gpu_worker/cuda/cudnn_sdpa.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/sdpa_graph.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

class CudnnSdpaOperations : public ::testing::Test {
 protected:
  void SetUp() override {
    bool loaded = false;
    const std::string why = engine::CudnnVersion(&loaded);
    if (!loaded) GTEST_SKIP() << "no cuDNN 9 to load: " << why;
  }
};

TEST_F(CudnnSdpaOperations, EveryGraphAWorkerBuildsIsAcceptedOperationByOperation) {
  int graphs = 0;
  for (DType dtype : {DType::kBf16, DType::kFp16}) {
    for (int64_t d : {64, 128, 256}) {
      for (int64_t kv_heads : {8, 2, 1}) {
        for (bool causal : {true, false}) {
          SdpaShape s;
          s.batch = 2;
          s.heads = 8;
          s.kv_heads = kv_heads;
          s.q_len = s.kv_len = 1024;
          s.head_dim = d;
          s.causal = causal;
          s.scale = 0.1f;
          s.dtype = dtype;
          for (absl::StatusOr<SdpaGraph> g :
               {SdpaForwardGraph(s, true), SdpaForwardGraph(s, false), SdpaBackwardGraph(s)}) {
            ASSERT_TRUE(g.ok()) << g.status();
            const absl::Status st = engine::FinalizeSdpaOperations(*g);
            EXPECT_TRUE(st.ok()) << g->name << " d" << d << " kv" << kv_heads << ": " << st;
            ++graphs;
          }
          if (!causal) {  // decode: one query row against the caches
            s.q_len = 1;
            const absl::Status st = engine::FinalizeSdpaOperations(*SdpaForwardGraph(s, false));
            EXPECT_TRUE(st.ok()) << "decode d" << d << ": " << st;
            ++graphs;
          }
        }
      }
    }
  }
  EXPECT_EQ(graphs, 2 * 3 * 3 * (2 * 3 + 1));
}

// Local attention (a sliding window under the causal mask) and multi-head latent attention's value
// head dim other than the query's: the graphs the layer engine builds for Gemma, Mistral, GPT-OSS
// and DeepSeek, accepted by cuDNN operation by operation.
TEST_F(CudnnSdpaOperations, WindowAndLatentAttentionGraphsAreAccepted) {
  int graphs = 0;
  for (DType dtype : {DType::kBf16, DType::kFp16}) {
    for (auto [d, dv, window] : {std::make_tuple(128, 0, 4096), std::make_tuple(64, 0, 128),
                                 std::make_tuple(192, 128, 0), std::make_tuple(192, 128, 512)}) {
      SdpaShape s;
      s.batch = 1;
      s.heads = 16;
      s.kv_heads = dv > 0 ? 16 : 4;
      s.q_len = s.kv_len = 8192;
      s.head_dim = d;
      s.v_head_dim = dv;
      s.window = window;
      s.scale = 0.1f;
      s.dtype = dtype;
      for (absl::StatusOr<SdpaGraph> g :
           {SdpaForwardGraph(s, true), SdpaForwardGraph(s, false), SdpaBackwardGraph(s)}) {
        ASSERT_TRUE(g.ok()) << g.status();
        ASSERT_TRUE(ValidateSdpaGraph(*g).ok());
        const absl::Status st = engine::FinalizeSdpaOperations(*g);
        EXPECT_TRUE(st.ok()) << g->name << " d" << d << " dv" << dv << " window" << window << ": "
                             << st;
        ++graphs;
      }
      if (window == 0) {  // decode against caches of both head dims
        s.causal = false;
        s.q_len = 1;
        const absl::Status st = engine::FinalizeSdpaOperations(*SdpaForwardGraph(s, false));
        EXPECT_TRUE(st.ok()) << "decode d" << d << " dv" << dv << ": " << st;
        ++graphs;
      }
    }
  }
  EXPECT_EQ(graphs, 2 * (4 * 3 + 1));
}

// cuDNN does check: a matmul whose inner dimensions disagree is refused, with cuDNN's reason.
TEST_F(CudnnSdpaOperations, ABrokenGraphIsRefusedWithCudnnsReason) {
  SdpaShape s;
  s.batch = 1;
  s.heads = s.kv_heads = 4;
  s.q_len = s.kv_len = 256;
  s.head_dim = 64;
  SdpaGraph g = *SdpaForwardGraph(s, true);
  for (SdpaTensor& t : g.tensors) {
    if (t.name == "K") t.dims[2] = 32;  // Kᵀ of head dim 32 against Q's 64
  }
  const absl::Status st = engine::FinalizeSdpaOperations(g);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_THAT(st.message(), HasSubstr("Q·Kᵀ"));
}

}  // namespace
}  // namespace wavecrest
