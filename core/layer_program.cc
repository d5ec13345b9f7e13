#include "core/layer_program.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

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
  }
  return "unknown";
}

namespace {

// Builds a program: buffers by name, ops in order.
class ProgramBuilder {
 public:
  ProgramBuilder(DType dtype, LayerProgram* p) : dtype_(dtype), p_(p) {}

  int Buffer(const std::string& name, double elements, int element_bytes = 0) {
    if (!(elements >= 1) || elements > 9e15) overflow_ = true;
    const int bytes = element_bytes > 0 ? element_bytes : DTypeBytes(dtype_);
    p_->buffers.push_back({name, overflow_ ? 1 : static_cast<int64_t>(elements), bytes});
    total_ += elements * bytes;
    return static_cast<int>(p_->buffers.size()) - 1;
  }

  // c = op(a)·op(b), the row-major GEMM (m, n, k, batch) in `layout`.
  void Gemm(const std::string& name, GemmShape shape, Layout layout, int a, int b, int c) {
    LayerOp op;
    op.kind = LayerOpKind::kGemm;
    op.name = name;
    op.gemm = {shape, layout, dtype_};
    op.a = a;
    op.b = b;
    op.c = c;
    p_->ops.push_back(std::move(op));
  }

  // A linear layer's forward Y = X·Wᵀ (TN); backward dX = dY·W (NN), dW = dYᵀ·X (NT).
  void LinearForward(const std::string& name, int64_t tokens, int64_t out, int64_t in, int x, int w,
                     int y) {
    Gemm(name + " forward", {tokens, out, in, 1}, Layout::kTN, x, w, y);
  }
  void LinearBackward(const std::string& name, int64_t tokens, int64_t out, int64_t in, int x,
                      int w, int dy, int dx, int dw) {
    Gemm(name + " dgrad", {tokens, in, out, 1}, Layout::kNN, dy, w, dx);
    Gemm(name + " wgrad", {out, in, tokens, 1}, Layout::kNT, dy, x, dw);
  }

  LayerOp& Op(LayerOpKind kind, const std::string& name) {
    LayerOp op;
    op.kind = kind;
    op.name = name;
    p_->ops.push_back(std::move(op));
    return p_->ops.back();
  }

  bool overflow() const { return overflow_ || total_ > 9e18; }
  double total() const { return total_; }

 private:
  DType dtype_;
  LayerProgram* p_;
  bool overflow_ = false;
  double total_ = 0;
};

// The sizes one layer's program is built from.
struct LayerDims {
  bool flash = false, training = false, decode = false;
  int64_t b = 0, H = 0, Hkv = 0, hd = 0, q_len = 0, kv_len = 0, T = 0, h = 0;
  int64_t ffn = 0, q_width = 0, qkv_out = 0, group = 1;
  double Td = 0;
};

// Attention's buffers, between the QKV rows and the attention output rows.
struct AttentionBuffers {
  int qkv = -1, o = -1, dqkv = -1, d_o = -1;
  // unfused
  int qh = -1, kh = -1, vh = -1, probs = -1, oh = -1, k_cache = -1, v_cache = -1;
  int stats = -1;
};

// The MLP half's buffers of a whole layer (forward).
struct MlpBuffers {
  bool swiglu = false, split_gate = false;
  int64_t f = 0, up_out = 0;
  int w1 = -1, w1b = -1, u = -1, ub = -1, g = -1, w2 = -1;
};

// Writes one layer's program: attention alone, or the whole transformer layer.
class LayerPlanner {
 public:
  LayerPlanner(const ModelSpec& s, const LayerDims& d, LayerProgram* p)
      : s_(s), d_(d), p_(p), pb_(s.dtype, p) {}

  // Attention alone: from the QKV rows to the output rows (and back).
  void AttentionOnly() {
    at_.qkv = pb_.Buffer("qkv", d_.Td * d_.qkv_out);
    at_.o = pb_.Buffer("attn_out", d_.Td * d_.q_width);
    AttentionForward();
    p_->outputs[0] = at_.o;
    if (!d_.training) return;
    at_.d_o = pb_.Buffer("d_attn_out", d_.Td * d_.q_width);
    at_.dqkv = pb_.Buffer("d_qkv", d_.Td * d_.qkv_out);
    AttentionBackward();
    p_->outputs[1] = at_.dqkv;
  }

  void WholeLayer() {
    WholeLayerForward();
    if (d_.training) WholeLayerBackward();
  }

  const ProgramBuilder& builder() const { return pb_; }

 private:
  void AttentionCommon(LayerOp& op) const {
    op.batch = d_.b;
    op.heads = d_.H;
    op.kv_heads = d_.Hkv;
    op.q_len = d_.q_len;
    op.kv_len = d_.kv_len;
    op.head_dim = d_.hd;
    op.causal = !d_.decode;
    op.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d_.hd)));
  }
  LayerOp& AttentionOp(LayerOpKind kind, const std::string& name) {
    LayerOp& op = pb_.Op(kind, name);
    AttentionCommon(op);
    return op;
  }
  double HeadsElements() const { return static_cast<double>(d_.b * d_.H) * d_.q_len * d_.hd; }
  double ScoresElements() const { return static_cast<double>(d_.b * d_.H) * d_.q_len * d_.kv_len; }

  void AttentionForward() {
    if (!d_.flash) return UnfusedAttentionForward();
    at_.stats = pb_.Buffer("softmax_stats", static_cast<double>(d_.b * d_.H) * d_.q_len, 4);
    LayerOp& op = AttentionOp(LayerOpKind::kFusedAttention, "attention forward");
    op.a = at_.qkv;
    op.c = at_.o;
    op.d = at_.stats;
  }

  void UnfusedAttentionForward() {
    const int64_t b = d_.b, H = d_.H, Hkv = d_.Hkv, hd = d_.hd;
    const int64_t q_len = d_.q_len, kv_len = d_.kv_len;
    at_.qh = pb_.Buffer("q_heads", HeadsElements());
    if (d_.decode) {
      // The KV cache, one head per KV head: the query heads of a group are one GEMM's rows.
      const double cache = static_cast<double>(b * Hkv) * kv_len * hd;
      at_.k_cache = pb_.Buffer("k_cache", cache);
      at_.v_cache = pb_.Buffer("v_cache", cache);
    } else {
      at_.kh = pb_.Buffer("k_heads", HeadsElements());
      at_.vh = pb_.Buffer("v_heads", HeadsElements());
    }
    at_.probs = pb_.Buffer("scores", ScoresElements());
    at_.oh = pb_.Buffer("o_heads", HeadsElements());
    LayerOp& split = AttentionOp(LayerOpKind::kSplitHeads, "split heads");
    split.a = at_.qkv;
    split.c = at_.qh;
    split.d = at_.kh;
    split.e = at_.vh;
    // Decode: the query heads of a KV group are one GEMM's rows, against the cache.
    const int64_t rows = d_.decode ? d_.group * q_len : q_len;
    const int64_t batch = d_.decode ? b * Hkv : b * H;
    const int keys = d_.decode ? at_.k_cache : at_.kh, values = d_.decode ? at_.v_cache : at_.vh;
    pb_.Gemm("attn_score forward", {rows, kv_len, hd, batch}, Layout::kTN, at_.qh, keys, at_.probs);
    LayerOp& sm = AttentionOp(LayerOpKind::kSoftmax, "softmax");
    sm.a = at_.probs;
    sm.rows = b * H * q_len;
    sm.cols = kv_len;
    pb_.Gemm("attn_over_value forward", {rows, hd, kv_len, batch}, Layout::kNN, at_.probs, values,
             at_.oh);
    LayerOp& merge = AttentionOp(LayerOpKind::kMergeHeads, "merge heads");
    merge.a = at_.oh;
    merge.c = at_.o;
  }

  void AttentionBackward() {
    if (!d_.flash) return UnfusedAttentionBackward();
    LayerOp& op = AttentionOp(LayerOpKind::kFusedAttentionBackward, "attention backward");
    op.a = at_.d_o;
    op.b = at_.qkv;
    op.c = at_.o;
    op.d = at_.stats;
    op.e = at_.dqkv;
  }

  void UnfusedAttentionBackward() {
    const int64_t bH = d_.b * d_.H, hd = d_.hd, q_len = d_.q_len, kv_len = d_.kv_len;
    const int doh = pb_.Buffer("d_o_heads", HeadsElements());
    const int dvh = pb_.Buffer("d_v_heads", HeadsElements());
    const int dqh = pb_.Buffer("d_q_heads", HeadsElements());
    const int dkh = pb_.Buffer("d_k_heads", HeadsElements());
    const int dp = pb_.Buffer("d_scores", ScoresElements());
    LayerOp& split = AttentionOp(LayerOpKind::kSplitHeads, "split d_o heads");
    split.heads = d_.H;
    split.kv_heads = 0;  // the output gradient has query heads only
    split.a = at_.d_o;
    split.c = doh;
    // dV = Pᵀ·dO, dP = dO·Vᵀ, dS = softmax backward, dQ = dS·K, dK = dSᵀ·Q.
    pb_.Gemm("attn_over_value wgrad", {kv_len, hd, q_len, bH}, Layout::kNT, at_.probs, doh, dvh);
    pb_.Gemm("attn_over_value dgrad", {q_len, kv_len, hd, bH}, Layout::kTN, doh, at_.vh, dp);
    LayerOp& smb = AttentionOp(LayerOpKind::kSoftmaxBackward, "softmax backward");
    smb.a = dp;
    smb.b = at_.probs;
    smb.rows = bH * q_len;
    smb.cols = kv_len;
    pb_.Gemm("attn_score dgrad", {q_len, hd, kv_len, bH}, Layout::kNN, dp, at_.kh, dqh);
    pb_.Gemm("attn_score wgrad", {kv_len, hd, q_len, bH}, Layout::kNT, dp, at_.qh, dkh);
    LayerOp& merge = AttentionOp(LayerOpKind::kMergeHeads, "merge d_qkv heads");
    merge.a = dqh;
    merge.d = dkh;
    merge.e = dvh;
    merge.c = at_.dqkv;
  }

  // Forward: a = x, b = scale, c = y. Backward: a = dy, b = x, c = dx, d = scale.
  void Norm(LayerOpKind kind, const std::string& name, int a, int bb, int c, int scale) {
    LayerOp& op = pb_.Op(kind, name);
    op.a = a;
    op.b = bb;
    op.c = c;
    if (kind == LayerOpKind::kNormBackward) op.d = scale;
    op.rows = d_.T;
    op.cols = d_.h;
    op.rms = s_.norm == Norm::kRmsNorm;
  }
  void Add(const std::string& name, int a, int bb, int c, int64_t cols) {
    LayerOp& op = pb_.Op(LayerOpKind::kAdd, name);
    op.a = a;
    op.b = bb;
    op.c = c;
    op.rows = d_.T;
    op.cols = cols;
  }
  // Forward: a = the gate (or gate|up), b = the up half when split, c = out. Backward: a = d_out,
  // b = the gate, c = d_gate, d = the up half, e = d_up.
  LayerOp& Activation(LayerOpKind kind, const std::string& name, int a, int bb, int c) {
    LayerOp& op = pb_.Op(kind, name);
    op.a = a;
    op.b = bb;
    op.c = c;
    op.rows = d_.T;
    op.cols = mlp_.f;
    op.swiglu = mlp_.swiglu;
    op.a_stride = mlp_.split_gate ? mlp_.f : mlp_.up_out;
    return op;
  }

  void WholeLayerBuffers() {
    const double Td = d_.Td, h = static_cast<double>(d_.h);
    mlp_.swiglu = s_.mlp == Mlp::kSwiglu;
    mlp_.split_gate = mlp_.swiglu && !s_.fused_gate_up;
    mlp_.f = d_.ffn;
    mlp_.up_out = mlp_.swiglu && !mlp_.split_gate ? 2 * mlp_.f : mlp_.f;
    const double f = static_cast<double>(mlp_.f), up_out = static_cast<double>(mlp_.up_out);
    x_ = pb_.Buffer("x", Td * h);
    gamma1_ = pb_.Buffer("norm1_scale", h);
    n1_ = pb_.Buffer("norm1_out", Td * h);
    w_qkv_ = pb_.Buffer("w_qkv", static_cast<double>(d_.qkv_out) * h);
    at_.qkv = pb_.Buffer("qkv", Td * d_.qkv_out);
    at_.o = pb_.Buffer("attn_out", Td * d_.q_width);
    w_o_ = pb_.Buffer("w_proj", h * d_.q_width);
    y_ = pb_.Buffer("proj_out", Td * h);
    x1_ = pb_.Buffer("residual1", Td * h);
    gamma2_ = pb_.Buffer("norm2_scale", h);
    n2_ = pb_.Buffer("norm2_out", Td * h);
    mlp_.w1 = pb_.Buffer(mlp_.split_gate ? "w_gate" : "w_up", up_out * h);
    mlp_.w1b = mlp_.split_gate ? pb_.Buffer("w_up", f * h) : -1;
    mlp_.u = pb_.Buffer(mlp_.split_gate ? "gate_out" : "up_out", Td * up_out);
    mlp_.ub = mlp_.split_gate ? pb_.Buffer("up_out", Td * f) : -1;
    mlp_.g = pb_.Buffer("act_out", Td * f);
    mlp_.w2 = pb_.Buffer("w_down", h * f);
    y2_ = pb_.Buffer("down_out", Td * h);
    out_ = pb_.Buffer("y", Td * h);
  }

  void WholeLayerForward() {
    WholeLayerBuffers();
    const int64_t T = d_.T, h = d_.h, f = mlp_.f;
    Norm(LayerOpKind::kNorm, "norm1", x_, gamma1_, n1_, gamma1_);
    pb_.LinearForward("qkv", T, d_.qkv_out, h, n1_, w_qkv_, at_.qkv);
    AttentionForward();
    pb_.LinearForward("attn_proj", T, h, d_.q_width, at_.o, w_o_, y_);
    Add("residual1", x_, y_, x1_, h);
    Norm(LayerOpKind::kNorm, "norm2", x1_, gamma2_, n2_, gamma2_);
    if (mlp_.split_gate) {
      pb_.LinearForward("mlp_gate", T, f, h, n2_, mlp_.w1, mlp_.u);
      pb_.LinearForward("mlp_up", T, f, h, n2_, mlp_.w1b, mlp_.ub);
    } else {
      pb_.LinearForward(mlp_.swiglu ? "mlp_gate_up" : "mlp_up", T, mlp_.up_out, h, n2_, mlp_.w1,
                        mlp_.u);
    }
    // SwiGLU with split GEMMs reads the gate from u and the up half from ub.
    Activation(LayerOpKind::kActivation, "activation", mlp_.u, mlp_.ub, mlp_.g);
    pb_.LinearForward("mlp_down", T, h, f, mlp_.g, mlp_.w2, y2_);
    Add("residual2", x1_, y2_, out_, h);
    p_->outputs[0] = out_;
  }

  void WholeLayerBackward() {
    const double Td = d_.Td, hh = static_cast<double>(d_.h);
    const int64_t T = d_.T, h = d_.h, f = mlp_.f, up_out = mlp_.up_out;
    const bool split = mlp_.split_gate;
    const double ff = static_cast<double>(f), up = static_cast<double>(up_out);
    const int dout = pb_.Buffer("d_y", Td * hh);
    const int dg = pb_.Buffer("d_act_out", Td * ff);
    const int dw2 = pb_.Buffer("d_w_down", hh * ff);
    const int du = pb_.Buffer(split ? "d_gate_out" : "d_up_out", Td * up);
    const int dub = split ? pb_.Buffer("d_up_out", Td * ff) : -1;
    const int dw1 = pb_.Buffer(split ? "d_w_gate" : "d_w_up", up * hh);
    const int dw1b = split ? pb_.Buffer("d_w_up", ff * hh) : -1;
    const int dn2 = pb_.Buffer("d_norm2_out", Td * hh);
    const int dn2b = split ? pb_.Buffer("d_norm2_out_up", Td * hh) : -1;
    const int dx1p = pb_.Buffer("d_residual1_norm", Td * hh);
    const int dx1 = pb_.Buffer("d_residual1", Td * hh);
    at_.d_o = pb_.Buffer("d_attn_out", Td * d_.q_width);
    const int dw_o = pb_.Buffer("d_w_proj", hh * d_.q_width);
    at_.dqkv = pb_.Buffer("d_qkv", Td * d_.qkv_out);
    const int dn1 = pb_.Buffer("d_norm1_out", Td * hh);
    const int dw_qkv = pb_.Buffer("d_w_qkv", static_cast<double>(d_.qkv_out) * hh);
    const int dxp = pb_.Buffer("d_x_norm", Td * hh);
    const int dx = pb_.Buffer("d_x", Td * hh);
    // The output gradient flows straight into both residual branches.
    pb_.LinearBackward("mlp_down", T, h, f, mlp_.g, mlp_.w2, dout, dg, dw2);
    // Activation backward: d act / d input, writing the gate and up halves (or both buffers).
    LayerOp& act = Activation(LayerOpKind::kActivationBackward, "activation backward", dg, mlp_.u,
                              du);
    act.d = mlp_.ub;
    act.e = dub;
    if (split) {
      pb_.LinearBackward("mlp_gate", T, f, h, n2_, mlp_.w1, du, dn2, dw1);
      pb_.LinearBackward("mlp_up", T, f, h, n2_, mlp_.w1b, dub, dn2b, dw1b);
      Add("d_norm2 sum", dn2, dn2b, dn2, h);
    } else {
      pb_.LinearBackward(mlp_.swiglu ? "mlp_gate_up" : "mlp_up", T, up_out, h, n2_, mlp_.w1, du,
                         dn2, dw1);
    }
    Norm(LayerOpKind::kNormBackward, "norm2 backward", dn2, x1_, dx1p, gamma2_);
    Add("d_residual1", dout, dx1p, dx1, h);
    pb_.LinearBackward("attn_proj", T, h, d_.q_width, at_.o, w_o_, dx1, at_.d_o, dw_o);
    AttentionBackward();
    pb_.LinearBackward("qkv", T, d_.qkv_out, h, n1_, w_qkv_, at_.dqkv, dn1, dw_qkv);
    Norm(LayerOpKind::kNormBackward, "norm1 backward", dn1, x_, dxp, gamma1_);
    Add("d_x", dx1, dxp, dx, h);
    p_->outputs[1] = dx;
  }

  const ModelSpec& s_;
  const LayerDims d_;
  LayerProgram* p_;
  ProgramBuilder pb_;
  AttentionBuffers at_;
  MlpBuffers mlp_;
  int x_ = -1, gamma1_ = -1, n1_ = -1, w_qkv_ = -1, w_o_ = -1, y_ = -1, x1_ = -1, gamma2_ = -1;
  int n2_ = -1, y2_ = -1, out_ = -1;
};

// Why this layer cannot be timed whole; OK when it can.
absl::Status CheckTimedWhole(const ModelSpec& s, bool flash) {
  if (s.num_experts > 0) {
    return absl::FailedPreconditionError(
        "mixture-of-experts layers are not timed whole yet: their grouped expert GEMMs are timed "
        "one by one");
  }
  if (s.dtype == DType::kFp8E4M3) {
    return absl::FailedPreconditionError(
        "FP8 layers are not timed whole yet (they need a scaling recipe around every GEMM); their "
        "GEMMs are timed one by one");
  }
  if (flash && (s.dtype == DType::kFp32 || s.dtype == DType::kTf32)) {
    return absl::FailedPreconditionError(
        "fused attention (cuDNN scaled-dot-product attention) runs in BF16 and FP16 only");
  }
  return absl::OkStatus();
}

LayerDims DimsOf(const ModelSpec& s, bool flash) {
  const DerivedShape d = Derive(s);
  LayerDims L;
  L.flash = flash;
  L.training = s.workload == Workload::kTraining;
  L.decode = s.workload == Workload::kDecode;
  L.b = s.micro_batch_size;
  L.H = d.heads_per_rank;
  L.Hkv = d.kv_heads_per_rank;
  L.hd = d.head_dim;
  L.q_len = L.decode ? 1 : s.seq_length;
  L.kv_len = L.decode ? s.kv_cache_length : s.seq_length;
  L.T = d.tokens;
  L.h = s.hidden_size;
  L.ffn = d.ffn_per_rank;
  L.q_width = L.H * L.hd;
  L.qkv_out = (L.H + 2 * L.Hkv) * L.hd;
  L.group = std::max<int64_t>(1, L.H / std::max<int64_t>(L.Hkv, 1));
  L.Td = static_cast<double>(L.T);
  return L;
}

}  // namespace

absl::StatusOr<LayerProgram> PlanLayerProgram(const LayerKey& key) {
  const ModelSpec& s = key.layer;
  const bool flash = key.kind == LayerKind::kFusedAttention ||
                     (key.kind == LayerKind::kTransformerLayer && s.attention == Attention::kFlash);
  if (absl::Status why = CheckTimedWhole(s, flash); !why.ok()) return why;
  LayerProgram p;
  p.training = s.workload == Workload::kTraining;
  LayerPlanner planner(s, DimsOf(s, flash), &p);
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

std::vector<GemmKey> ProgramGemms(const LayerProgram& program) {
  std::vector<GemmKey> out;
  for (const LayerOp& op : program.ops) {
    if (op.kind == LayerOpKind::kGemm) out.push_back(op.gemm);
  }
  return out;
}

}  // namespace wavecrest
