// Internal to core/layer_program*.cc: the builder of a layer program and the planner that writes
// one layer's ops (attention and its projections in layer_program_attention.cc, the MLP or the
// mixture of experts in layer_program_mlp.cc). The public interface is core/layer_program.h.
#ifndef WAVECREST_CORE_LAYER_PLANNER_H_
#define WAVECREST_CORE_LAYER_PLANNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/layer_program.h"
#include "core/layers.h"

namespace wavecrest::layer_program_internal {

// Builds a program: buffers by name, ops in order.
class ProgramBuilder {
 public:
  ProgramBuilder(DType dtype, LayerProgram* p) : dtype_(dtype), p_(p) {}

  int Buffer(const std::string& name, double elements, int element_bytes = 0);
  // c = op(a)·op(b), the row-major GEMM (m, n, k, batch) in `layout`.
  void Gemm(const std::string& name, GemmShape shape, Layout layout, int a, int b, int c);
  // A linear layer's forward Y = X·Wᵀ (TN); backward dX = dY·W (NN), dW = dYᵀ·X (NT).
  void LinearForward(const std::string& name, int64_t tokens, int64_t out, int64_t in, int x, int w,
                     int y);
  void LinearBackward(const std::string& name, int64_t tokens, int64_t out, int64_t in, int x,
                      int w, int dy, int dx, int dw);
  // The same for one linear layer per expert, expert j on rows[j] tokens (a grouped GEMM each).
  void GroupedForward(const std::string& name, const std::vector<int64_t>& rows, int64_t out,
                      int64_t in, int x, int w, int y);
  void GroupedBackward(const std::string& name, const std::vector<int64_t>& rows, int64_t out,
                       int64_t in, int x, int w, int dy, int dx, int dw);
  LayerOp& Op(LayerOpKind kind, const std::string& name);

  bool overflow() const { return overflow_ || total_ > 9e18; }
  double total() const { return total_; }

 private:
  void Grouped(const std::string& name, const std::vector<int64_t>& rows, GemmShape shape,
               Layout layout, int a, int b, int c);

  DType dtype_;
  LayerProgram* p_;
  bool overflow_ = false;
  double total_ = 0;
};

// The sizes one layer's program is built from.
struct LayerDims {
  bool flash = false, training = false, decode = false, mla = false;
  int64_t b = 0, H = 0, Hkv = 0, hd = 0, dv = 0, q_len = 0, kv_len = 0, T = 0, h = 0;
  int64_t ffn = 0, q_width = 0, qkv_out = 0, group = 1, window = 0, ring_steps = 1;
  double Td = 0;
  // Mixture of experts: the rank's experts' rows (busiest first), their sum, the experts' and
  // the shared expert's widths per rank, the router's experts and experts per token.
  std::vector<int64_t> expert_rows;
  int64_t routed_rows = 0, expert_ffn = 0, shared_ffn = 0, experts = 0, top_k = 0;
};
LayerDims DimsOf(const LayerKey& key, bool flash);

// Attention's buffers, between the QKV rows and the attention output rows.
struct AttentionBuffers {
  int qkv = -1, o = -1, dqkv = -1, d_o = -1;
  // unfused
  int qh = -1, kh = -1, vh = -1, probs = -1, oh = -1, k_cache = -1, v_cache = -1;
  int stats = -1;
};

// The buffers of the projections into the QKV rows (fused QKV, or multi-head latent attention's).
struct ProjectionBuffers {
  int w_qkv = -1;
  // MLA: down (or full) query weights and rows, the query latent's norm, up weights and rows;
  // the key/value down projection (latent | rope), its norm, up weights and rows.
  int w_qa = -1, qa = -1, qa_scale = -1, qa_norm = -1, w_qb = -1, q = -1;
  int w_kva = -1, kva = -1, kva_scale = -1, kva_norm = -1, w_kvb = -1, kvb = -1;
};

// The MLP half's buffers of a whole layer (forward): a dense MLP, or the experts (u, g over the
// routed rows) with the router and the shared expert.
struct MlpBuffers {
  bool swiglu = false, split_gate = false;
  int64_t f = 0, up_out = 0, rows = 0;
  int w1 = -1, w1b = -1, u = -1, ub = -1, g = -1, w2 = -1;
  int w_router = -1, logits = -1, probs = -1, ids = -1, xp = -1, yp = -1;
  int ws1 = -1, su = -1, sg = -1, ws2 = -1, sy = -1;
};

// Writes one layer's program: attention alone, or the whole transformer layer.
class LayerPlanner {
 public:
  LayerPlanner(const ModelSpec& s, const LayerDims& d, LayerProgram* p)
      : s_(s), d_(d), p_(p), pb_(s.dtype, p) {}

  void AttentionOnly();
  void WholeLayer();
  const ProgramBuilder& builder() const { return pb_; }

 private:
  // layer_program_attention.cc
  void AttentionCommon(LayerOp& op) const;
  LayerOp& AttentionOp(LayerOpKind kind, const std::string& name);
  double HeadsElements() const;
  double ScoresElements() const;
  void AttentionForward();
  void FusedAttentionForward(const std::string& step);
  void UnfusedAttentionForward(const std::string& step);
  void AttentionBackward();
  void FusedAttentionBackward(const std::string& step);
  void UnfusedAttentionBackward(const std::string& step);
  void ProjectionBuffers();
  void ProjectionsForward();
  void ProjectionsBackward(int dn1);
  void MlaForward();
  void MlaBackward(int dn1);
  void AttentionHalfBuffers();
  void AttentionHalfForward();
  void AttentionHalfBackward(int dout, int dn2);

  // layer_program_mlp.cc
  void Norm(LayerOpKind kind, const std::string& name, int a, int bb, int c, int scale,
            int64_t cols, int64_t x_stride = 0);
  void Add(const std::string& name, int a, int bb, int c, int64_t cols, int64_t rows = -1);
  LayerOp& Activation(LayerOpKind kind, const std::string& name, int a, int bb, int c,
                      int64_t rows);
  void DenseMlpBuffers();
  void DenseMlpForward();
  int DenseMlpBackward(int dout);
  void MoeBuffers();
  void MoeForward();
  int MoeBackward(int dout);
  void SharedExpertForward();
  int SharedExpertBackward(int dout);
  void RoutingOp(LayerOp& op) const;

  const ModelSpec& s_;
  const LayerDims d_;
  LayerProgram* p_;
  ProgramBuilder pb_;
  AttentionBuffers at_;
  struct ProjectionBuffers pr_;
  MlpBuffers mlp_;
  int x_ = -1, gamma1_ = -1, n1_ = -1, w_o_ = -1, y_ = -1, x1_ = -1, gamma2_ = -1;
  int n2_ = -1, y2_ = -1, out_ = -1;
};

}  // namespace wavecrest::layer_program_internal

#endif  // WAVECREST_CORE_LAYER_PLANNER_H_
