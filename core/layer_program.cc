#include "core/layer_program.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/layer_planner.h"
#include "core/moe_routing.h"

namespace wavecrest {

absl::string_view LayerOpKindName(LayerOpKind kind) {
  switch (kind) {
    case LayerOpKind::kGemm:
      return "gemm";
    case LayerOpKind::kNorm:
      return "norm";
    case LayerOpKind::kNormBackward:
      return "norm_backward";
    case LayerOpKind::kActivation:
      return "activation";
    case LayerOpKind::kActivationBackward:
      return "activation_backward";
    case LayerOpKind::kAdd:
      return "add";
    case LayerOpKind::kSplitHeads:
      return "split_heads";
    case LayerOpKind::kMergeHeads:
      return "merge_heads";
    case LayerOpKind::kSoftmax:
      return "softmax";
    case LayerOpKind::kSoftmaxBackward:
      return "softmax_backward";
    case LayerOpKind::kFusedAttention:
      return "fused_attention";
    case LayerOpKind::kFusedAttentionBackward:
      return "fused_attention_backward";
    case LayerOpKind::kGroupedGemm:
      return "grouped_gemm";
    case LayerOpKind::kRouterTopK:
      return "router_topk";
    case LayerOpKind::kRouterTopKBackward:
      return "router_topk_backward";
    case LayerOpKind::kPermute:
      return "permute";
    case LayerOpKind::kPermuteBackward:
      return "permute_backward";
    case LayerOpKind::kCombine:
      return "combine";
    case LayerOpKind::kCombineBackward:
      return "combine_backward";
    case LayerOpKind::kMlaAssemble:
      return "mla_assemble";
    case LayerOpKind::kMlaAssembleBackward:
      return "mla_assemble_backward";
  }
  return "unknown";
}

namespace layer_program_internal {

int ProgramBuilder::Buffer(const std::string& name, double elements, int element_bytes) {
  if (!(elements >= 1) || elements > 9e15) overflow_ = true;
  const int bytes = element_bytes > 0 ? element_bytes : DTypeBytes(dtype_);
  p_->buffers.push_back({name, overflow_ ? 1 : static_cast<int64_t>(elements), bytes});
  total_ += elements * bytes;
  return static_cast<int>(p_->buffers.size()) - 1;
}

void ProgramBuilder::Gemm(const std::string& name, GemmShape shape, Layout layout, int a, int b,
                          int c) {
  LayerOp op;
  op.kind = LayerOpKind::kGemm;
  op.name = name;
  op.gemm = {shape, layout, dtype_};
  op.a = a;
  op.b = b;
  op.c = c;
  p_->ops.push_back(std::move(op));
}

void ProgramBuilder::LinearForward(const std::string& name, int64_t tokens, int64_t out,
                                   int64_t in, int x, int w, int y) {
  Gemm(name + " forward", {tokens, out, in, 1}, Layout::kTN, x, w, y);
}

void ProgramBuilder::LinearBackward(const std::string& name, int64_t tokens, int64_t out,
                                    int64_t in, int x, int w, int dy, int dx, int dw) {
  Gemm(name + " dgrad", {tokens, in, out, 1}, Layout::kNN, dy, w, dx);
  Gemm(name + " wgrad", {out, in, tokens, 1}, Layout::kNT, dy, x, dw);
}

void ProgramBuilder::Grouped(const std::string& name, const std::vector<int64_t>& rows,
                             GemmShape shape, Layout layout, int a, int b, int c) {
  LayerOp op;
  op.kind = LayerOpKind::kGroupedGemm;
  op.name = name;
  op.gemm = {shape, layout, dtype_};
  op.groups = rows;
  op.a = a;
  op.b = b;
  op.c = c;
  p_->ops.push_back(std::move(op));
}

void ProgramBuilder::GroupedForward(const std::string& name, const std::vector<int64_t>& rows,
                                    int64_t out, int64_t in, int x, int w, int y) {
  const int64_t most = rows.empty() ? 0 : *std::max_element(rows.begin(), rows.end());
  const int64_t n = static_cast<int64_t>(rows.size());
  Grouped(name + " forward", rows, {most, out, in, n}, Layout::kTN, x, w, y);
}

void ProgramBuilder::GroupedBackward(const std::string& name, const std::vector<int64_t>& rows,
                                     int64_t out, int64_t in, int x, int w, int dy, int dx,
                                     int dw) {
  const int64_t most = rows.empty() ? 0 : *std::max_element(rows.begin(), rows.end());
  const int64_t n = static_cast<int64_t>(rows.size());
  Grouped(name + " dgrad", rows, {most, in, out, n}, Layout::kNN, dy, w, dx);
  Grouped(name + " wgrad", rows, {out, in, most, n}, Layout::kNT, dy, x, dw);
}

LayerOp& ProgramBuilder::Op(LayerOpKind kind, const std::string& name) {
  LayerOp op;
  op.kind = kind;
  op.name = name;
  p_->ops.push_back(std::move(op));
  return p_->ops.back();
}

LayerDims DimsOf(const LayerKey& key, bool flash) {
  const ModelSpec& s = key.layer;
  const DerivedShape d = Derive(s);
  LayerDims L;
  L.flash = flash;
  L.training = s.workload == Workload::kTraining;
  L.decode = s.workload == Workload::kDecode;
  L.mla = s.kv_lora_rank > 0;
  L.b = s.micro_batch_size;
  L.H = d.heads_per_rank;
  L.Hkv = L.mla ? L.H : d.kv_heads_per_rank;
  L.hd = d.head_dim;
  L.dv = d.v_head_dim;
  L.q_len = L.decode ? 1 : d.seq_per_rank;
  L.kv_len = L.decode ? s.kv_cache_length : d.seq_per_rank;
  if (s.sliding_window > 0 && L.decode) {
    L.kv_len = std::min(L.kv_len, s.sliding_window);  // the cache holds the window
  } else if (s.sliding_window > 0 && s.sliding_window < L.kv_len) {
    L.window = s.sliding_window;
  }
  L.ring_steps = L.decode ? 1 : std::max<int64_t>(1, s.context_parallel);
  L.T = d.tokens;
  L.h = s.hidden_size;
  L.ffn = d.ffn_per_rank;
  L.q_width = L.H * L.dv;
  L.qkv_out = L.mla ? L.H * (2 * L.hd + L.dv) : (L.H + 2 * L.Hkv) * L.hd;
  L.group = std::max<int64_t>(1, L.H / std::max<int64_t>(L.Hkv, 1));
  L.Td = static_cast<double>(L.T);
  if (s.num_experts > 0) {
    L.expert_rows = ExpertTokenCounts(s, key.routing);
    for (int64_t r : L.expert_rows) L.routed_rows += r;
    L.expert_ffn = d.expert_ffn_per_rank;
    L.shared_ffn = d.shared_ffn_per_rank;
    L.experts = s.num_experts;
    L.top_k = s.experts_per_token;
  }
  return L;
}

}  // namespace layer_program_internal

namespace {

using layer_program_internal::DimsOf;
using layer_program_internal::LayerPlanner;

// Why this layer cannot be timed whole; OK when it can.
absl::Status CheckTimedWhole(const ModelSpec& s, bool flash) {
  if (s.dtype == DType::kFp8E4M3) {
    return absl::FailedPreconditionError(
        "FP8 layers are not timed whole yet (they need a scaling recipe around every GEMM); their "
        "GEMMs are timed one by one");
  }
  if (flash && (s.dtype == DType::kFp32 || s.dtype == DType::kTf32)) {
    return absl::FailedPreconditionError(
        "fused attention (cuDNN scaled-dot-product attention) runs in BF16 and FP16 only");
  }
  if (!flash && s.kv_lora_rank > 0) {
    return absl::FailedPreconditionError(
        "unfused multi-head latent attention is not built (its value head dim differs from the "
        "query's): set attention to flash to time it whole");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LayerProgram> PlanLayerProgram(const LayerKey& key) {
  const ModelSpec& s = key.layer;
  const bool flash = key.kind == LayerKind::kFusedAttention ||
                     (key.kind == LayerKind::kTransformerLayer && s.attention == Attention::kFlash);
  if (absl::Status why = CheckTimedWhole(s, flash); !why.ok()) return why;
  LayerProgram p;
  p.training = s.workload == Workload::kTraining;
  LayerPlanner planner(s, DimsOf(key, flash), &p);
  if (key.kind == LayerKind::kTransformerLayer) {
    planner.WholeLayer();
  } else {
    planner.AttentionOnly();
  }
  if (planner.builder().overflow()) {
    return absl::InvalidArgumentError(absl::StrCat(LayerKeyString(key), ": buffer sizes overflow"));
  }
  p.bytes = static_cast<int64_t>(planner.builder().total());
  return p;
}

GemmKey GroupGemm(const LayerOp& op, size_t j) {
  GemmKey g = op.gemm;
  g.shape.batch = 1;
  const int64_t rows = j < op.groups.size() ? op.groups[j] : 0;
  if (op.gemm.layout == Layout::kNT) {
    g.shape.k = rows;
  } else {
    g.shape.m = rows;
  }
  if (rows == 0) g.shape = {0, 0, 0, 1};
  return g;
}

GroupOffsets GroupGemmOffsets(const LayerOp& op, size_t j) {
  int64_t before = 0;  // the token rows of the groups before j
  for (size_t i = 0; i < j && i < op.groups.size(); ++i) before += op.groups[i];
  const GemmShape& s = op.gemm.shape;
  const int64_t jj = static_cast<int64_t>(j);
  switch (op.gemm.layout) {
    case Layout::kTN:
      return {before * s.k, jj * s.n * s.k, before * s.n};
    case Layout::kNN:
      return {before * s.k, jj * s.k * s.n, before * s.n};
    case Layout::kNT:
      return {before * s.m, before * s.n, jj * s.m * s.n};
  }
  return {};
}

std::vector<GemmKey> ProgramGemms(const LayerProgram& program) {
  std::vector<GemmKey> out;
  for (const LayerOp& op : program.ops) {
    if (op.kind == LayerOpKind::kGemm) out.push_back(op.gemm);
    if (op.kind != LayerOpKind::kGroupedGemm) continue;
    for (size_t j = 0; j < op.groups.size(); ++j) {
      if (op.groups[j] > 0) out.push_back(GroupGemm(op, j));
    }
  }
  return out;
}

}  // namespace wavecrest
