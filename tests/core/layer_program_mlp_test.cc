// The mixture-of-experts block as a layer program (core/layer_program_mlp.cc), checked against
// FLOPs and bytes computed by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include "absl/strings/match.h"
#include "core/layer_emulation.h"
#include "core/layer_program.h"

namespace wavecrest {
namespace {

using ::testing::ElementsAre;

// h 512, 8 experts of width f 256 (SwiGLU), top 2, a shared expert of 384, 256 tokens, training.
constexpr int64_t kH = 512, kF = 256, kE = 8, kK = 2, kT = 256, kShared = 384;

ModelSpec MoeModel(int64_t ep = 1) {
  ModelSpec s;
  s.hidden_size = kH;
  s.num_attention_heads = 8;
  s.num_layers = 4;
  s.vocab_size = 1000;
  s.seq_length = kT;
  s.mlp = Mlp::kSwiglu;
  s.norm = Norm::kRmsNorm;
  s.ffn_hidden_size = kF;
  s.num_experts = kE;
  s.experts_per_token = kK;
  s.shared_expert_ffn_hidden_size = kShared;
  s.expert_parallel = ep;
  return *NormalizeSpec(s);
}

LayerProgram Program(const ModelSpec& m, const MoeRouting& routing) {
  absl::StatusOr<LayerKey> key =
      MakeLayerKey(LayerKind::kTransformerLayer, m, DefaultRole(m), routing);
  EXPECT_TRUE(key.ok()) << key.status();
  absl::StatusOr<LayerProgram> p = PlanLayerProgram(*key);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

// FLOPs of the ops whose name starts with `prefix`, each group of a grouped GEMM its own GEMM.
double FlopsOf(const LayerProgram& p, absl::string_view prefix) {
  double flops = 0;
  for (const LayerOp& op : p.ops) {
    if (!absl::StartsWith(op.name, prefix)) continue;
    if (op.kind == LayerOpKind::kGemm) flops += GemmFlops(op.gemm.shape);
    if (op.kind != LayerOpKind::kGroupedGemm) continue;
    for (size_t j = 0; j < op.groups.size(); ++j) flops += GemmFlops(GroupGemm(op, j).shape);
  }
  return flops;
}

const LayerOp& ExpectOp(const LayerProgram& p, absl::string_view name) {
  for (const LayerOp& op : p.ops) {
    if (op.name == name) return op;
  }
  ADD_FAILURE() << "no op " << name;
  return p.ops[0];
}

TEST(MoeBlockProgram, BalancedFlopsByHand) {
  const LayerProgram p = Program(MoeModel(), {});
  // Router: 2·T·E·h per pass; forward, dgrad, wgrad.
  EXPECT_EQ(FlopsOf(p, "moe_router forward"), 2.0 * kT * kE * kH);
  EXPECT_EQ(FlopsOf(p, "moe_router"), 3 * 2.0 * kT * kE * kH);
  // Experts: T·k routed rows through gate|up (2f × h) and down (h × f), three passes each.
  EXPECT_EQ(FlopsOf(p, "moe_gate_up forward"), 2.0 * kT * kK * 2 * kF * kH);
  EXPECT_EQ(FlopsOf(p, "moe_down"), 3 * 2.0 * kT * kK * kH * kF);
  // The shared expert: every token through 2·384 and back.
  EXPECT_EQ(FlopsOf(p, "shared_gate_up forward"), 2.0 * kT * 2 * kShared * kH);
  EXPECT_EQ(FlopsOf(p, "shared_down forward"), 2.0 * kT * kH * kShared);
  // Balanced: 64 rows per expert, the planner's batched GEMM group for group.
  const LayerOp& up = ExpectOp(p, "moe_gate_up forward");
  EXPECT_THAT(up.groups, ElementsAre(64, 64, 64, 64, 64, 64, 64, 64));
  EXPECT_EQ(up.gemm.shape, (GemmShape{64, 2 * kF, kH, kE}));
  // The wgrad groups carry the tokens in K.
  const LayerOp& wgrad = ExpectOp(p, "moe_down wgrad");
  EXPECT_EQ(GroupGemm(wgrad, 3).shape, (GemmShape{kH, kF, 64, 1}));
  EXPECT_EQ(GroupGemm(wgrad, 3).layout, Layout::kNT);
  EXPECT_EQ(p.outputs[1] >= 0, true);
}

TEST(MoeBlockProgram, RoutingOpsMoveTheBytesByHand) {
  const LayerProgram p = Program(MoeModel(), {});
  const double R = kT * kK;  // routed rows
  // Top-k reads the logits (bf16) and writes k probabilities and ids (4 bytes each) per token.
  EXPECT_EQ(LayerOpBytes(p, ExpectOp(p, "router softmax top-k")), kT * kE * 2.0 + kT * kK * 8.0);
  // Dispatch: R rows of h read and written.
  EXPECT_EQ(LayerOpBytes(p, ExpectOp(p, "dispatch permutation")), 2 * R * kH * 2.0);
  // Combine: R rows and the shared output in, T rows out, the weights (FP32).
  EXPECT_EQ(LayerOpBytes(p, ExpectOp(p, "combine")), (R + 2.0 * kT) * kH * 2.0 + kT * kK * 4.0);
  // The experts' activation: SwiGLU over R rows reads 2f and writes f.
  EXPECT_EQ(LayerOpBytes(p, ExpectOp(p, "experts activation")), 3.0 * R * kF * 2.0);
  // The gather back (scatter-add of R rows into T).
  EXPECT_EQ(LayerOpBytes(p, ExpectOp(p, "dispatch permutation backward")), (R + kT) * kH * 2.0);
  // Buffers: every expert's gate|up weights, 8 × 512 × 512.
  bool found = false;
  for (const LayerBuffer& b : p.buffers) {
    if (b.name != "w_experts_gate_up") continue;
    found = true;
    EXPECT_EQ(b.elements, kE * 2 * kF * kH);
  }
  EXPECT_TRUE(found);
}

TEST(MoeBlockProgram, UnevenRoutingMovesRowsNotFlops) {
  const LayerProgram balanced = Program(MoeModel(), {});
  const LayerProgram skewed = Program(MoeModel(), {1.0, {}});
  const LayerOp& up = ExpectOp(skewed, "moe_gate_up forward");
  // 512 copies by 1/(i+1) over 8 experts (H8 = 2.7179): 188.4, 94.2, 62.8, 47.1, 37.7, 31.4,
  // 26.9, 23.5 -> 188, 94, 63, 47, 38, 31, 27, 24 (largest remainders).
  EXPECT_THAT(up.groups, ElementsAre(188, 94, 63, 47, 38, 31, 27, 24));
  EXPECT_EQ(std::accumulate(up.groups.begin(), up.groups.end(), int64_t{0}), kT * kK);
  EXPECT_EQ(up.gemm.shape.m, 188);  // the largest group
  // Same total FLOPs: only the split differs.
  EXPECT_EQ(FlopsOf(skewed, "moe_"), FlopsOf(balanced, "moe_"));
  // Every group is one GEMM of ProgramGemms, its own rows.
  int groups = 0;
  for (const GemmKey& g : ProgramGemms(skewed)) groups += g.shape.m == 188 ? 1 : 0;
  EXPECT_EQ(groups, 4);  // gate|up and down, forward and dgrad (wgrad has the rows in K)
}

// What the GPU engine reads and writes for each group stays inside its buffers, the groups tile
// the token rows without overlap, and each expert's weights are its own.
TEST(MoeBlockProgram, GroupOperandsTileTheirBuffers) {
  const LayerProgram p = Program(MoeModel(2), {1.0, {}});
  int grouped = 0;
  for (const LayerOp& op : p.ops) {
    if (op.kind != LayerOpKind::kGroupedGemm) continue;
    ++grouped;
    int64_t end_a = 0, end_b = 0, end_c = 0;
    for (size_t j = 0; j < op.groups.size(); ++j) {
      const GemmShape g = GroupGemm(op, j).shape;
      const GroupOffsets o = GroupGemmOffsets(op, j);
      // Each operand's extent: rows × cols of the group's matrices as stored.
      const int64_t a = g.m * g.k, b = g.k * g.n, c = g.m * g.n;
      EXPECT_EQ(o.a, end_a) << op.name << " group " << j;  // back to back
      end_a = o.a + a;
      end_b = std::max(end_b, o.b + b);
      end_c = std::max(end_c, o.c + c);
      if (op.gemm.layout == Layout::kNT) {
        EXPECT_EQ(o.c, static_cast<int64_t>(j) * op.gemm.shape.m * op.gemm.shape.n);
      } else {
        EXPECT_EQ(o.b, static_cast<int64_t>(j) * op.gemm.shape.n * op.gemm.shape.k);
      }
    }
    EXPECT_LE(end_a, p.buffers[op.a].elements) << op.name;
    EXPECT_LE(end_b, p.buffers[op.b].elements) << op.name;
    EXPECT_LE(end_c, p.buffers[op.c].elements) << op.name;
  }
  EXPECT_EQ(grouped, 6);  // gate|up and down: forward, dgrad, wgrad
}

TEST(MoeBlockProgram, ExpertParallelRankRunsItsShareOfTheBusiest) {
  // e = 2: the rank holds 4 experts and runs the rows both ranks route to them.
  const LayerProgram balanced = Program(MoeModel(2), {});
  EXPECT_THAT(ExpectOp(balanced, "moe_down forward").groups, ElementsAre(128, 128, 128, 128));
  const LayerProgram skewed = Program(MoeModel(2), {1.0, {}});
  const std::vector<int64_t>& rows = ExpectOp(skewed, "moe_down forward").groups;
  // 1024 copies by 1/(i+1): the busiest four get 376.8, 188.4, 125.6, 94.2 -> 377, 188, 126, 94.
  EXPECT_THAT(rows, ElementsAre(377, 188, 126, 94));
  EXPECT_GT(FlopsOf(skewed, "moe_"), FlopsOf(balanced, "moe_"));
}

}  // namespace
}  // namespace wavecrest
