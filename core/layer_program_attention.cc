// The attention half of a layer program (core/layer_program.h): the projections into the QKV rows
// (one fused QKV GEMM, or multi-head latent attention's), the attention core (fused or unfused,
// local, over the ring steps of context parallelism), the output projection and the norms and
// residual around them, forward and backward.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/layer_planner.h"

namespace wavecrest::layer_program_internal {

namespace {
// The name of ring step `i` of `n` ("" without context parallelism).
std::string Step(int64_t i, int64_t n) {
  return n > 1 ? absl::StrCat(" (ring step ", i + 1, " of ", n, ")") : "";
}
}  // namespace

void LayerPlanner::AttentionCommon(LayerOp& op) const {
  op.batch = d_.b;
  op.heads = d_.H;
  op.kv_heads = d_.Hkv;
  op.q_len = d_.q_len;
  op.kv_len = d_.kv_len;
  op.head_dim = d_.hd;
  op.v_head_dim = d_.dv;
  op.window = d_.window;
  op.causal = !d_.decode;
  op.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d_.hd)));
}

LayerOp& LayerPlanner::AttentionOp(LayerOpKind kind, const std::string& name) {
  LayerOp& op = pb_.Op(kind, name);
  AttentionCommon(op);
  return op;
}

double LayerPlanner::HeadsElements() const {
  return static_cast<double>(d_.b * d_.H) * d_.q_len * d_.hd;
}

double LayerPlanner::ScoresElements() const {
  return static_cast<double>(d_.b * d_.H) * d_.q_len * d_.kv_len;
}

void LayerPlanner::AttentionOnly() {
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

void LayerPlanner::AttentionForward() {
  for (int64_t i = 0; i < d_.ring_steps; ++i) {
    if (d_.flash) {
      FusedAttentionForward(Step(i, d_.ring_steps));
    } else {
      UnfusedAttentionForward(Step(i, d_.ring_steps));
    }
  }
}

void LayerPlanner::AttentionBackward() {
  for (int64_t i = 0; i < d_.ring_steps; ++i) {
    if (d_.flash) {
      FusedAttentionBackward(Step(i, d_.ring_steps));
    } else {
      UnfusedAttentionBackward(Step(i, d_.ring_steps));
    }
  }
}

void LayerPlanner::FusedAttentionForward(const std::string& step) {
  if (at_.stats < 0) {
    at_.stats = pb_.Buffer("softmax_stats", static_cast<double>(d_.b * d_.H) * d_.q_len, 4);
  }
  LayerOp& op = AttentionOp(LayerOpKind::kFusedAttention, "attention forward" + step);
  op.a = at_.qkv;
  op.c = at_.o;
  op.d = at_.stats;
}

void LayerPlanner::UnfusedAttentionForward(const std::string& step) {
  const int64_t b = d_.b, H = d_.H, Hkv = d_.Hkv, hd = d_.hd;
  const int64_t q_len = d_.q_len, kv_len = d_.kv_len;
  if (at_.qh < 0) {
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
  }
  LayerOp& split = AttentionOp(LayerOpKind::kSplitHeads, "split heads" + step);
  split.a = at_.qkv;
  split.c = at_.qh;
  split.d = at_.kh;
  split.e = at_.vh;
  // Decode: the query heads of a KV group are one GEMM's rows, against the cache.
  const int64_t rows = d_.decode ? d_.group * q_len : q_len;
  const int64_t batch = d_.decode ? b * Hkv : b * H;
  const int keys = d_.decode ? at_.k_cache : at_.kh, values = d_.decode ? at_.v_cache : at_.vh;
  pb_.Gemm("attn_score forward" + step, {rows, kv_len, hd, batch}, Layout::kTN, at_.qh, keys,
           at_.probs);
  LayerOp& sm = AttentionOp(LayerOpKind::kSoftmax, "softmax" + step);
  sm.a = at_.probs;
  sm.rows = b * H * q_len;
  sm.cols = kv_len;
  pb_.Gemm("attn_over_value forward" + step, {rows, hd, kv_len, batch}, Layout::kNN, at_.probs,
           values, at_.oh);
  LayerOp& merge = AttentionOp(LayerOpKind::kMergeHeads, "merge heads" + step);
  merge.a = at_.oh;
  merge.c = at_.o;
}

void LayerPlanner::FusedAttentionBackward(const std::string& step) {
  LayerOp& op = AttentionOp(LayerOpKind::kFusedAttentionBackward, "attention backward" + step);
  op.a = at_.d_o;
  op.b = at_.qkv;
  op.c = at_.o;
  op.d = at_.stats;
  op.e = at_.dqkv;
}

void LayerPlanner::UnfusedAttentionBackward(const std::string& step) {
  const int64_t bH = d_.b * d_.H, hd = d_.hd, q_len = d_.q_len, kv_len = d_.kv_len;
  const int doh = pb_.Buffer("d_o_heads" + step, HeadsElements());
  const int dvh = pb_.Buffer("d_v_heads" + step, HeadsElements());
  const int dqh = pb_.Buffer("d_q_heads" + step, HeadsElements());
  const int dkh = pb_.Buffer("d_k_heads" + step, HeadsElements());
  const int dp = pb_.Buffer("d_scores" + step, ScoresElements());
  LayerOp& split = AttentionOp(LayerOpKind::kSplitHeads, "split d_o heads" + step);
  split.heads = d_.H;
  split.kv_heads = 0;  // the output gradient has query heads only
  split.a = at_.d_o;
  split.c = doh;
  // dV = Pᵀ·dO, dP = dO·Vᵀ, dS = softmax backward, dQ = dS·K, dK = dSᵀ·Q.
  pb_.Gemm("attn_over_value wgrad" + step, {kv_len, hd, q_len, bH}, Layout::kNT, at_.probs, doh,
           dvh);
  pb_.Gemm("attn_over_value dgrad" + step, {q_len, kv_len, hd, bH}, Layout::kTN, doh, at_.vh, dp);
  LayerOp& smb = AttentionOp(LayerOpKind::kSoftmaxBackward, "softmax backward" + step);
  smb.a = dp;
  smb.b = at_.probs;
  smb.rows = bH * q_len;
  smb.cols = kv_len;
  pb_.Gemm("attn_score dgrad" + step, {q_len, hd, kv_len, bH}, Layout::kNN, dp, at_.kh, dqh);
  pb_.Gemm("attn_score wgrad" + step, {kv_len, hd, q_len, bH}, Layout::kNT, dp, at_.qh, dkh);
  LayerOp& merge = AttentionOp(LayerOpKind::kMergeHeads, "merge d_qkv heads" + step);
  merge.a = dqh;
  merge.d = dkh;
  merge.e = dvh;
  merge.c = at_.dqkv;
}

// The projections' weights and outputs (forward).
void LayerPlanner::ProjectionBuffers() {
  const double Td = d_.Td, h = static_cast<double>(d_.h);
  if (!d_.mla) {
    pr_.w_qkv = pb_.Buffer("w_qkv", static_cast<double>(d_.qkv_out) * h);
    return;
  }
  const double q_out = static_cast<double>(d_.H * d_.hd);
  const double ql = static_cast<double>(s_.q_lora_rank), kvl = static_cast<double>(s_.kv_lora_rank);
  const double rope = static_cast<double>(s_.qk_rope_head_dim);
  const double kv_up = static_cast<double>(d_.H * (d_.hd - s_.qk_rope_head_dim + d_.dv));
  if (s_.q_lora_rank > 0) {
    pr_.w_qa = pb_.Buffer("w_q_down", ql * h);
    pr_.qa = pb_.Buffer("q_latent", Td * ql);
    pr_.qa_scale = pb_.Buffer("q_latent_norm_scale", ql);
    pr_.qa_norm = pb_.Buffer("q_latent_norm", Td * ql);
    pr_.w_qb = pb_.Buffer("w_q_up", q_out * ql);
  } else {
    pr_.w_qb = pb_.Buffer("w_q", q_out * h);
  }
  pr_.q = pb_.Buffer("q", Td * q_out);
  pr_.w_kva = pb_.Buffer("w_kv_down", (kvl + rope) * h);
  pr_.kva = pb_.Buffer("kv_latent", Td * (kvl + rope));
  pr_.kva_scale = pb_.Buffer("kv_latent_norm_scale", kvl);
  pr_.kva_norm = pb_.Buffer("kv_latent_norm", Td * kvl);
  pr_.w_kvb = pb_.Buffer("w_kv_up", kv_up * kvl);
  pr_.kvb = pb_.Buffer("kv_up_out", Td * kv_up);
}

void LayerPlanner::ProjectionsForward() {
  if (!d_.mla) {
    pb_.LinearForward("qkv", d_.T, d_.qkv_out, d_.h, n1_, pr_.w_qkv, at_.qkv);
    return;
  }
  MlaForward();
}

void LayerPlanner::ProjectionsBackward(int dn1) {
  if (!d_.mla) {
    const int dw_qkv = pb_.Buffer("d_w_qkv", static_cast<double>(d_.qkv_out) * d_.h);
    pb_.LinearBackward("qkv", d_.T, d_.qkv_out, d_.h, n1_, pr_.w_qkv, at_.dqkv, dn1, dw_qkv);
    return;
  }
  MlaBackward(dn1);
}

void LayerPlanner::MlaForward() {
  const int64_t T = d_.T, h = d_.h, ql = s_.q_lora_rank, kvl = s_.kv_lora_rank;
  const int64_t rope = s_.qk_rope_head_dim, q_out = d_.H * d_.hd;
  const int64_t kv_up = d_.H * (d_.hd - rope + d_.dv);
  if (ql > 0) {
    pb_.LinearForward("mla_q_down", T, ql, h, n1_, pr_.w_qa, pr_.qa);
    Norm(LayerOpKind::kNorm, "q latent norm", pr_.qa, pr_.qa_scale, pr_.qa_norm, pr_.qa_scale, ql);
    p_->ops.back().rms = true;
    pb_.LinearForward("mla_q_up", T, q_out, ql, pr_.qa_norm, pr_.w_qb, pr_.q);
  } else {
    pb_.LinearForward("mla_q", T, q_out, h, n1_, pr_.w_qb, pr_.q);
  }
  pb_.LinearForward("mla_kv_down", T, kvl + rope, h, n1_, pr_.w_kva, pr_.kva);
  Norm(LayerOpKind::kNorm, "kv latent norm", pr_.kva, pr_.kva_scale, pr_.kva_norm, pr_.kva_scale,
       kvl, kvl + rope);
  p_->ops.back().rms = true;
  pb_.LinearForward("mla_kv_up", T, kv_up, kvl, pr_.kva_norm, pr_.w_kvb, pr_.kvb);
  LayerOp& as = AttentionOp(LayerOpKind::kMlaAssemble, "mla assemble q k v");
  as.a = pr_.q;
  as.b = pr_.kvb;
  as.d = pr_.kva;
  as.c = at_.qkv;
  as.rows = T;
  as.latent = kvl;
  as.rope = rope;
}

void LayerPlanner::MlaBackward(int dn1) {
  const int64_t T = d_.T, h = d_.h, ql = s_.q_lora_rank, kvl = s_.kv_lora_rank;
  const int64_t rope = s_.qk_rope_head_dim, q_out = d_.H * d_.hd;
  const int64_t kv_up = d_.H * (d_.hd - rope + d_.dv);
  const double Td = d_.Td, hh = static_cast<double>(h);
  const int dq = pb_.Buffer("d_q", Td * q_out);
  const int dkvb = pb_.Buffer("d_kv_up_out", Td * kv_up);
  const int dkva = pb_.Buffer("d_kv_latent", Td * (kvl + rope));
  LayerOp& as = AttentionOp(LayerOpKind::kMlaAssembleBackward, "mla assemble backward");
  as.a = at_.dqkv;
  as.c = dq;
  as.d = dkvb;
  as.e = dkva;
  as.rows = T;
  as.latent = kvl;
  as.rope = rope;
  const int dkva_norm = pb_.Buffer("d_kv_latent_norm", Td * kvl);
  const int dw_kvb = pb_.Buffer("d_w_kv_up", static_cast<double>(kv_up) * kvl);
  pb_.LinearBackward("mla_kv_up", T, kv_up, kvl, pr_.kva_norm, pr_.w_kvb, dkvb, dkva_norm, dw_kvb);
  Norm(LayerOpKind::kNormBackward, "kv latent norm backward", dkva_norm, pr_.kva, dkva,
       pr_.kva_scale, kvl, kvl + rope);
  p_->ops.back().rms = true;
  const int dn1_kv = pb_.Buffer("d_norm1_out_kv", Td * hh);
  const int dw_kva = pb_.Buffer("d_w_kv_down", static_cast<double>(kvl + rope) * hh);
  pb_.LinearBackward("mla_kv_down", T, kvl + rope, h, n1_, pr_.w_kva, dkva, dn1_kv, dw_kva);
  if (ql > 0) {
    const int dqa_norm = pb_.Buffer("d_q_latent_norm", Td * ql);
    const int dw_qb = pb_.Buffer("d_w_q_up", static_cast<double>(q_out) * ql);
    pb_.LinearBackward("mla_q_up", T, q_out, ql, pr_.qa_norm, pr_.w_qb, dq, dqa_norm, dw_qb);
    const int dqa = pb_.Buffer("d_q_latent", Td * ql);
    Norm(LayerOpKind::kNormBackward, "q latent norm backward", dqa_norm, pr_.qa, dqa,
         pr_.qa_scale, ql);
    p_->ops.back().rms = true;
    const int dw_qa = pb_.Buffer("d_w_q_down", static_cast<double>(ql) * hh);
    pb_.LinearBackward("mla_q_down", T, ql, h, n1_, pr_.w_qa, dqa, dn1, dw_qa);
  } else {
    const int dw_q = pb_.Buffer("d_w_q", static_cast<double>(q_out) * hh);
    pb_.LinearBackward("mla_q", T, q_out, h, n1_, pr_.w_qb, dq, dn1, dw_q);
  }
  Add("d_norm1 sum", dn1, dn1_kv, dn1, h);
}

void LayerPlanner::AttentionHalfBuffers() {
  const double Td = d_.Td, h = static_cast<double>(d_.h);
  x_ = pb_.Buffer("x", Td * h);
  gamma1_ = pb_.Buffer("norm1_scale", h);
  n1_ = pb_.Buffer("norm1_out", Td * h);
  ProjectionBuffers();
  at_.qkv = pb_.Buffer("qkv", Td * d_.qkv_out);
  at_.o = pb_.Buffer("attn_out", Td * d_.q_width);
  w_o_ = pb_.Buffer("w_proj", h * d_.q_width);
  y_ = pb_.Buffer("proj_out", Td * h);
  x1_ = pb_.Buffer("residual1", Td * h);
  gamma2_ = pb_.Buffer("norm2_scale", h);
  n2_ = pb_.Buffer("norm2_out", Td * h);
}

void LayerPlanner::AttentionHalfForward() {
  const int64_t T = d_.T, h = d_.h;
  Norm(LayerOpKind::kNorm, "norm1", x_, gamma1_, n1_, gamma1_, h);
  ProjectionsForward();
  AttentionForward();
  pb_.LinearForward("attn_proj", T, h, d_.q_width, at_.o, w_o_, y_);
  Add("residual1", x_, y_, x1_, h);
  Norm(LayerOpKind::kNorm, "norm2", x1_, gamma2_, n2_, gamma2_, h);
}

// From the output gradient (flowing straight into both residual branches) and the gradient of
// norm2's output to dx.
void LayerPlanner::AttentionHalfBackward(int dout, int dn2) {
  const double Td = d_.Td, hh = static_cast<double>(d_.h);
  const int64_t T = d_.T, h = d_.h;
  const int dx1p = pb_.Buffer("d_residual1_norm", Td * hh);
  const int dx1 = pb_.Buffer("d_residual1", Td * hh);
  at_.d_o = pb_.Buffer("d_attn_out", Td * d_.q_width);
  const int dw_o = pb_.Buffer("d_w_proj", hh * d_.q_width);
  at_.dqkv = pb_.Buffer("d_qkv", Td * d_.qkv_out);
  const int dn1 = pb_.Buffer("d_norm1_out", Td * hh);
  const int dxp = pb_.Buffer("d_x_norm", Td * hh);
  const int dx = pb_.Buffer("d_x", Td * hh);
  Norm(LayerOpKind::kNormBackward, "norm2 backward", dn2, x1_, dx1p, gamma2_, h);
  Add("d_residual1", dout, dx1p, dx1, h);
  pb_.LinearBackward("attn_proj", T, h, d_.q_width, at_.o, w_o_, dx1, at_.d_o, dw_o);
  AttentionBackward();
  ProjectionsBackward(dn1);
  Norm(LayerOpKind::kNormBackward, "norm1 backward", dn1, x_, dxp, gamma1_, h);
  Add("d_x", dx1, dxp, dx, h);
  p_->outputs[1] = dx;
}

}  // namespace wavecrest::layer_program_internal
