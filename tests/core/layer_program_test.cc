#include "core/layer_program.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/core/test_specs.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

ModelSpec Spec(Mlp mlp, Attention attention, Workload workload, int64_t tp, bool fused_gate_up) {
  ModelSpec s;
  s.hidden_size = 2048;
  s.num_attention_heads = 16;
  s.num_kv_heads = 4;
  s.num_layers = 8;
  s.vocab_size = 32000;
  s.seq_length = 512;
  s.micro_batch_size = 2;
  s.mlp = mlp;
  s.fused_gate_up = fused_gate_up;
  s.attention = attention;
  s.workload = workload;
  s.tensor_parallel = tp;
  s.kv_cache_length = 1024;
  s.ffn_hidden_size = mlp == Mlp::kSwiglu ? 5632 : 8192;
  return *NormalizeSpec(s);
}

std::vector<GemmKey> Sorted(std::vector<GemmKey> keys) {
  std::sort(keys.begin(), keys.end(), [](const GemmKey& a, const GemmKey& b) {
    return std::tie(a.shape, a.layout, a.dtype) < std::tie(b.shape, b.layout, b.dtype);
  });
  return keys;
}

// The program runs exactly the GEMMs the model counts for the layer, whatever the MLP, attention,
// workload and tensor parallelism: what is timed whole is what the GEMM sum adds up.
TEST(LayerProgramTest, RunsExactlyTheLayersGemms) {
  int programs = 0;
  for (Mlp mlp : {Mlp::kGelu, Mlp::kSwiglu}) {
    for (bool fused_gate_up : {true, false}) {
      for (Attention att : {Attention::kFlash, Attention::kUnfused}) {
        for (Workload w : {Workload::kTraining, Workload::kPrefill, Workload::kDecode}) {
          for (int64_t tp : {1, 2, 8}) {
            const ModelSpec m = Spec(mlp, att, w, tp, fused_gate_up);
            for (const LayerKey& key : LayerKeysOf(m)) {
              absl::StatusOr<LayerProgram> p = PlanLayerProgram(key);
              ASSERT_TRUE(p.ok()) << LayerKeyString(key) << ": " << p.status();
              std::vector<GemmKey> expected;
              for (const Gemm& g : LayerGemms(key)) {
                if (!g.fused_attention) expected.push_back(g.key());
              }
              EXPECT_EQ(Sorted(ProgramGemms(*p)), Sorted(expected)) << LayerKeyString(key);
              EXPECT_EQ(p->training, w == Workload::kTraining);
              EXPECT_GE(p->outputs[0], 0);
              EXPECT_EQ(p->outputs[1] >= 0, w == Workload::kTraining);
              ++programs;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(programs, 2 * 2 * 2 * 3 * 3 * 2);
}

// Every op names buffers that exist and elementwise work that fits in them.
TEST(LayerProgramTest, OpsReferToBuffersLargeEnough) {
  for (Attention att : {Attention::kFlash, Attention::kUnfused}) {
    const ModelSpec m = Spec(Mlp::kSwiglu, att, Workload::kTraining, 2, false);
    for (const LayerKey& key : LayerKeysOf(m)) {
      absl::StatusOr<LayerProgram> p = PlanLayerProgram(key);
      ASSERT_TRUE(p.ok());
      const int n = static_cast<int>(p->buffers.size());
      double bytes = 0;
      for (const LayerBuffer& b : p->buffers)
        bytes += static_cast<double>(b.elements) * b.element_bytes;
      EXPECT_EQ(p->bytes, static_cast<int64_t>(bytes));
      for (const LayerOp& op : p->ops) {
        for (int i : {op.a, op.b, op.c, op.d, op.e}) EXPECT_LT(i, n) << op.name;
        EXPECT_GE(op.c, op.kind == LayerOpKind::kSoftmax || op.kind == LayerOpKind::kSoftmaxBackward
                            ? -1
                            : 0)
            << op.name;
        if (op.kind == LayerOpKind::kGemm) {
          const GemmShape& s = op.gemm.shape;
          EXPECT_GE(p->buffers[op.c].elements, s.m * s.n * s.batch) << op.name;
          EXPECT_GE(p->buffers[op.a].elements, s.m * s.k * s.batch) << op.name;
        }
        if (op.kind == LayerOpKind::kAdd || op.kind == LayerOpKind::kNorm) {
          EXPECT_GE(p->buffers[op.c].elements, op.rows * op.cols) << op.name;
        }
      }
    }
  }
}

TEST(LayerProgramTest, RefusesWhatTheEngineDoesNotRunWhole) {
  ModelSpec mla = Spec(Mlp::kSwiglu, Attention::kUnfused, Workload::kTraining, 1, true);
  mla.num_kv_heads = 16;
  mla.head_dim = 192;
  mla.kv_lora_rank = 512;
  mla.qk_rope_head_dim = 64;
  mla.v_head_dim = 128;
  auto p = PlanLayerProgram(*MakeLayerKey(LayerKind::kTransformerLayer, *NormalizeSpec(mla)));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(p.status().message(), HasSubstr("unfused multi-head latent attention"));
  ModelSpec fp8 = Spec(Mlp::kGelu, Attention::kFlash, Workload::kTraining, 1, true);
  fp8.dtype = DType::kFp8E4M3;
  p = PlanLayerProgram(*MakeLayerKey(LayerKind::kTransformerLayer, fp8));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kFailedPrecondition);
  ModelSpec fp32 = Spec(Mlp::kGelu, Attention::kFlash, Workload::kTraining, 1, true);
  fp32.dtype = DType::kFp32;
  p = PlanLayerProgram(*MakeLayerKey(LayerKind::kFusedAttention, fp32));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(p.status().message(), HasSubstr("BF16 and FP16"));
  // Unfused attention at s = 65536: the scores alone are b·a·s² elements, sized without overflow.
  ModelSpec big = Spec(Mlp::kGelu, Attention::kUnfused, Workload::kTraining, 1, true);
  big.seq_length = 65536;
  p = PlanLayerProgram(*MakeLayerKey(LayerKind::kUnfusedAttention, *NormalizeSpec(big)));
  ASSERT_TRUE(p.ok());
  EXPECT_GT(p->bytes, int64_t{2} * 2 * 16 * 65536 * 65536);
}

}  // namespace
}  // namespace wavecrest
