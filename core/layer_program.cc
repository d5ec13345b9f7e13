#include "core/layer_program.h"

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

}  // namespace

absl::StatusOr<LayerProgram> PlanLayerProgram(const LayerKey& key) {
  const ModelSpec& s = key.layer;
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
  const bool flash = key.kind == LayerKind::kFusedAttention ||
                     (key.kind == LayerKind::kTransformerLayer && s.attention == Attention::kFlash);
  if (flash && (s.dtype == DType::kFp32 || s.dtype == DType::kTf32)) {
    return absl::FailedPreconditionError(
        "fused attention (cuDNN scaled-dot-product attention) runs in BF16 and FP16 only");
  }
  const DerivedShape d = Derive(s);
  const bool training = s.workload == Workload::kTraining;
  const bool decode = s.workload == Workload::kDecode;
  const bool whole = key.kind == LayerKind::kTransformerLayer;
  const int64_t b = s.micro_batch_size;
  const int64_t H = d.heads_per_rank, Hkv = d.kv_heads_per_rank, hd = d.head_dim;
  const int64_t q_len = decode ? 1 : s.seq_length;
  const int64_t kv_len = decode ? s.kv_cache_length : s.seq_length;
  const int64_t T = d.tokens;
  const int64_t h = s.hidden_size;
  const int64_t q_width = H * hd;
  const int64_t qkv_out = (H + 2 * Hkv) * hd;
  const double Td = static_cast<double>(T);

  LayerProgram p;
  p.training = training;
  ProgramBuilder pb(s.dtype, &p);

  // Attention, forward and backward, between the QKV rows and the attention output rows.
  struct Attn {
    int qkv = -1, o = -1, dqkv = -1, d_o = -1;
    // unfused
    int qh = -1, kh = -1, vh = -1, probs = -1, oh = -1, k_cache = -1, v_cache = -1;
    int stats = -1;
  } at;
  auto attention_common = [&](LayerOp& op) {
    op.batch = b;
    op.heads = H;
    op.kv_heads = Hkv;
    op.q_len = q_len;
    op.kv_len = kv_len;
    op.head_dim = hd;
    op.causal = !decode;
    op.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  };
  const int64_t group = std::max<int64_t>(1, H / Hkv);
  auto attention_forward = [&]() {
    if (flash) {
      at.stats = pb.Buffer("softmax_stats", static_cast<double>(b * H) * q_len, 4);
      LayerOp& op = pb.Op(LayerOpKind::kFusedAttention, "attention forward");
      attention_common(op);
      op.a = at.qkv;
      op.c = at.o;
      op.d = at.stats;
      return;
    }
    const double heads_elems = static_cast<double>(b * H) * q_len * hd;
    at.qh = pb.Buffer("q_heads", heads_elems);
    if (decode) {
      // The KV cache, one head per KV head: the query heads of a group are one GEMM's rows.
      const double cache = static_cast<double>(b * Hkv) * kv_len * hd;
      at.k_cache = pb.Buffer("k_cache", cache);
      at.v_cache = pb.Buffer("v_cache", cache);
    } else {
      at.kh = pb.Buffer("k_heads", heads_elems);
      at.vh = pb.Buffer("v_heads", heads_elems);
    }
    at.probs = pb.Buffer("scores", static_cast<double>(b * H) * q_len * kv_len);
    at.oh = pb.Buffer("o_heads", heads_elems);
    LayerOp& split = pb.Op(LayerOpKind::kSplitHeads, "split heads");
    attention_common(split);
    split.a = at.qkv;
    split.c = at.qh;
    split.d = at.kh;
    split.e = at.vh;
    // Decode: the query heads of a KV group are one GEMM's rows, against the cache.
    const int64_t rows = decode ? group * q_len : q_len;
    const int64_t batch = decode ? b * Hkv : b * H;
    const int keys = decode ? at.k_cache : at.kh, values = decode ? at.v_cache : at.vh;
    pb.Gemm("attn_score forward", {rows, kv_len, hd, batch}, Layout::kTN, at.qh, keys, at.probs);
    LayerOp& sm = pb.Op(LayerOpKind::kSoftmax, "softmax");
    attention_common(sm);
    sm.a = at.probs;
    sm.rows = b * H * q_len;
    sm.cols = kv_len;
    pb.Gemm("attn_over_value forward", {rows, hd, kv_len, batch}, Layout::kNN, at.probs, values,
            at.oh);
    LayerOp& merge = pb.Op(LayerOpKind::kMergeHeads, "merge heads");
    attention_common(merge);
    merge.a = at.oh;
    merge.c = at.o;
  };
  auto attention_backward = [&]() {
    if (flash) {
      LayerOp& op = pb.Op(LayerOpKind::kFusedAttentionBackward, "attention backward");
      attention_common(op);
      op.a = at.d_o;
      op.b = at.qkv;
      op.c = at.o;
      op.d = at.stats;
      op.e = at.dqkv;
      return;
    }
    const double heads_elems = static_cast<double>(b * H) * q_len * hd;
    const int doh = pb.Buffer("d_o_heads", heads_elems);
    const int dvh = pb.Buffer("d_v_heads", heads_elems);
    const int dqh = pb.Buffer("d_q_heads", heads_elems);
    const int dkh = pb.Buffer("d_k_heads", heads_elems);
    const int dp = pb.Buffer("d_scores", static_cast<double>(b * H) * q_len * kv_len);
    LayerOp& split = pb.Op(LayerOpKind::kSplitHeads, "split d_o heads");
    attention_common(split);
    split.heads = H;
    split.kv_heads = 0;  // the output gradient has query heads only
    split.a = at.d_o;
    split.c = doh;
    // dV = Pᵀ·dO, dP = dO·Vᵀ, dS = softmax backward, dQ = dS·K, dK = dSᵀ·Q.
    pb.Gemm("attn_over_value wgrad", {kv_len, hd, q_len, b * H}, Layout::kNT, at.probs, doh, dvh);
    pb.Gemm("attn_over_value dgrad", {q_len, kv_len, hd, b * H}, Layout::kTN, doh, at.vh, dp);
    LayerOp& smb = pb.Op(LayerOpKind::kSoftmaxBackward, "softmax backward");
    attention_common(smb);
    smb.a = dp;
    smb.b = at.probs;
    smb.rows = b * H * q_len;
    smb.cols = kv_len;
    pb.Gemm("attn_score dgrad", {q_len, hd, kv_len, b * H}, Layout::kNN, dp, at.kh, dqh);
    pb.Gemm("attn_score wgrad", {kv_len, hd, q_len, b * H}, Layout::kNT, dp, at.qh, dkh);
    LayerOp& merge = pb.Op(LayerOpKind::kMergeHeads, "merge d_qkv heads");
    attention_common(merge);
    merge.a = dqh;
    merge.d = dkh;
    merge.e = dvh;
    merge.c = at.dqkv;
  };

  if (!whole) {
    // Attention alone: from the QKV rows to the output rows (and back).
    at.qkv = pb.Buffer("qkv", Td * qkv_out);
    at.o = pb.Buffer("attn_out", Td * q_width);
    attention_forward();
    p.outputs[0] = at.o;
    if (training) {
      at.d_o = pb.Buffer("d_attn_out", Td * q_width);
      at.dqkv = pb.Buffer("d_qkv", Td * qkv_out);
      attention_backward();
      p.outputs[1] = at.dqkv;
    }
  } else {
    const bool swiglu = s.mlp == Mlp::kSwiglu;
    const bool split_gate = swiglu && !s.fused_gate_up;
    const int64_t f = d.ffn_per_rank;
    const int64_t up_out = swiglu && !split_gate ? 2 * f : f;
    const int x = pb.Buffer("x", Td * h);
    const int gamma1 = pb.Buffer("norm1_scale", static_cast<double>(h));
    const int n1 = pb.Buffer("norm1_out", Td * h);
    const int w_qkv = pb.Buffer("w_qkv", static_cast<double>(qkv_out) * h);
    at.qkv = pb.Buffer("qkv", Td * qkv_out);
    at.o = pb.Buffer("attn_out", Td * q_width);
    const int w_o = pb.Buffer("w_proj", static_cast<double>(h) * q_width);
    const int y = pb.Buffer("proj_out", Td * h);
    const int x1 = pb.Buffer("residual1", Td * h);
    const int gamma2 = pb.Buffer("norm2_scale", static_cast<double>(h));
    const int n2 = pb.Buffer("norm2_out", Td * h);
    const int w1 = pb.Buffer(split_gate ? "w_gate" : "w_up", static_cast<double>(up_out) * h);
    const int w1b = split_gate ? pb.Buffer("w_up", static_cast<double>(f) * h) : -1;
    const int u = pb.Buffer(split_gate ? "gate_out" : "up_out", Td * up_out);
    const int ub = split_gate ? pb.Buffer("up_out", Td * f) : -1;
    const int g = pb.Buffer("act_out", Td * f);
    const int w2 = pb.Buffer("w_down", static_cast<double>(h) * f);
    const int y2 = pb.Buffer("down_out", Td * h);
    const int out = pb.Buffer("y", Td * h);
    // Forward: a = x, b = scale, c = y. Backward: a = dy, b = x, c = dx, d = scale.
    auto norm = [&](LayerOpKind kind, const std::string& name, int a, int bb, int c, int scale) {
      LayerOp& op = pb.Op(kind, name);
      op.a = a;
      op.b = bb;
      op.c = c;
      if (kind == LayerOpKind::kNormBackward) op.d = scale;
      op.rows = T;
      op.cols = h;
      op.rms = s.norm == Norm::kRmsNorm;
    };
    auto add = [&](const std::string& name, int a, int bb, int c, int64_t cols) {
      LayerOp& op = pb.Op(LayerOpKind::kAdd, name);
      op.a = a;
      op.b = bb;
      op.c = c;
      op.rows = T;
      op.cols = cols;
    };
    auto activation = [&](LayerOpKind kind, const std::string& name, int a, int bb, int c) {
      LayerOp& op = pb.Op(kind, name);
      op.a = a;
      op.b = bb;
      op.c = c;
      op.rows = T;
      op.cols = f;
      op.swiglu = swiglu;
      op.a_stride = split_gate ? f : up_out;
    };
    // Forward.
    norm(LayerOpKind::kNorm, "norm1", x, gamma1, n1, gamma1);
    pb.LinearForward("qkv", T, qkv_out, h, n1, w_qkv, at.qkv);
    attention_forward();
    pb.LinearForward("attn_proj", T, h, q_width, at.o, w_o, y);
    add("residual1", x, y, x1, h);
    norm(LayerOpKind::kNorm, "norm2", x1, gamma2, n2, gamma2);
    if (split_gate) {
      pb.LinearForward("mlp_gate", T, f, h, n2, w1, u);
      pb.LinearForward("mlp_up", T, f, h, n2, w1b, ub);
    } else {
      pb.LinearForward(swiglu ? "mlp_gate_up" : "mlp_up", T, up_out, h, n2, w1, u);
    }
    // SwiGLU with split GEMMs reads the gate from u and the up half from ub.
    activation(LayerOpKind::kActivation, "activation", u, ub, g);
    pb.LinearForward("mlp_down", T, h, f, g, w2, y2);
    add("residual2", x1, y2, out, h);
    p.outputs[0] = out;
    if (training) {
      const int dout = pb.Buffer("d_y", Td * h);
      const int dg = pb.Buffer("d_act_out", Td * f);
      const int dw2 = pb.Buffer("d_w_down", static_cast<double>(h) * f);
      const int du = pb.Buffer(split_gate ? "d_gate_out" : "d_up_out", Td * up_out);
      const int dub = split_gate ? pb.Buffer("d_up_out", Td * f) : -1;
      const int dw1 =
          pb.Buffer(split_gate ? "d_w_gate" : "d_w_up", static_cast<double>(up_out) * h);
      const int dw1b = split_gate ? pb.Buffer("d_w_up", static_cast<double>(f) * h) : -1;
      const int dn2 = pb.Buffer("d_norm2_out", Td * h);
      const int dn2b = split_gate ? pb.Buffer("d_norm2_out_up", Td * h) : -1;
      const int dx1p = pb.Buffer("d_residual1_norm", Td * h);
      const int dx1 = pb.Buffer("d_residual1", Td * h);
      at.d_o = pb.Buffer("d_attn_out", Td * q_width);
      const int dw_o = pb.Buffer("d_w_proj", static_cast<double>(h) * q_width);
      at.dqkv = pb.Buffer("d_qkv", Td * qkv_out);
      const int dn1 = pb.Buffer("d_norm1_out", Td * h);
      const int dw_qkv = pb.Buffer("d_w_qkv", static_cast<double>(qkv_out) * h);
      const int dxp = pb.Buffer("d_x_norm", Td * h);
      const int dx = pb.Buffer("d_x", Td * h);
      // The output gradient flows straight into both residual branches.
      pb.LinearBackward("mlp_down", T, h, f, g, w2, dout, dg, dw2);
      // Activation backward: d act / d input, writing the gate and up halves (or both buffers).
      {
        LayerOp& op = pb.Op(LayerOpKind::kActivationBackward, "activation backward");
        op.a = dg;
        op.b = u;
        op.c = du;
        op.d = ub;
        op.e = dub;
        op.rows = T;
        op.cols = f;
        op.swiglu = swiglu;
        op.a_stride = split_gate ? f : up_out;
      }
      if (split_gate) {
        pb.LinearBackward("mlp_gate", T, f, h, n2, w1, du, dn2, dw1);
        pb.LinearBackward("mlp_up", T, f, h, n2, w1b, dub, dn2b, dw1b);
        add("d_norm2 sum", dn2, dn2b, dn2, h);
      } else {
        pb.LinearBackward(swiglu ? "mlp_gate_up" : "mlp_up", T, up_out, h, n2, w1, du, dn2, dw1);
      }
      norm(LayerOpKind::kNormBackward, "norm2 backward", dn2, x1, dx1p, gamma2);
      add("d_residual1", dout, dx1p, dx1, h);
      pb.LinearBackward("attn_proj", T, h, q_width, at.o, w_o, dx1, at.d_o, dw_o);
      attention_backward();
      pb.LinearBackward("qkv", T, qkv_out, h, n1, w_qkv, at.dqkv, dn1, dw_qkv);
      norm(LayerOpKind::kNormBackward, "norm1 backward", dn1, x, dxp, gamma1);
      add("d_x", dx1, dxp, dx, h);
      p.outputs[1] = dx;
    }
  }
  if (pb.overflow()) {
    return absl::InvalidArgumentError(absl::StrCat(LayerKeyString(key), ": buffer sizes overflow"));
  }
  p.bytes = static_cast<int64_t>(pb.total());
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
