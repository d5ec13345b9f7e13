// The MLP half of a layer program (core/layer_program.h): the dense MLP, or the mixture-of-experts
// block (router, top-k, dispatch, grouped experts, shared expert, combine), forward and backward;
// and the whole layer around them.
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/layer_planner.h"

namespace wavecrest::layer_program_internal {

namespace {

// x⁻¹ mod m (x and m coprime), by the extended Euclidean algorithm.
int64_t InverseMod(int64_t x, int64_t m) {
  int64_t r0 = m, r1 = x % m, t0 = 0, t1 = 1;
  while (r1 != 0) {
    const int64_t q = r0 / r1;
    std::tie(r0, r1) = std::make_pair(r1, r0 - q * r1);
    std::tie(t0, t1) = std::make_pair(t1, t0 - q * t1);
  }
  return ((t0 % m) + m) % m;
}

// The dispatch order's multiplier: a large prime's residue coprime to the tokens, so that the
// routed rows read their tokens scattered, as a sort by expert leaves them.
int64_t PermutationMultiplier(int64_t tokens) {
  if (tokens <= 1) return 0;
  int64_t p = 1000003 % tokens;
  while (p < 1 || std::gcd(p, tokens) != 1) p = (p + 1) % tokens;
  return p;
}

}  // namespace

// Forward: a = x, b = scale, c = y. Backward: a = dy, b = x, c = dx, d = scale. x (and dx) rows
// `x_stride` apart (0 = cols).
void LayerPlanner::Norm(LayerOpKind kind, const std::string& name, int a, int bb, int c, int scale,
                        int64_t cols, int64_t x_stride) {
  LayerOp& op = pb_.Op(kind, name);
  op.a = a;
  op.b = bb;
  op.c = c;
  if (kind == LayerOpKind::kNormBackward) op.d = scale;
  op.rows = d_.T;
  op.cols = cols;
  op.x_stride = x_stride;
  op.rms = s_.norm == Norm::kRmsNorm;
}

void LayerPlanner::Add(const std::string& name, int a, int bb, int c, int64_t cols, int64_t rows) {
  LayerOp& op = pb_.Op(LayerOpKind::kAdd, name);
  op.a = a;
  op.b = bb;
  op.c = c;
  op.rows = rows < 0 ? d_.T : rows;
  op.cols = cols;
}

// Forward: a = the gate (or gate|up), b = the up half when split, c = out. Backward: a = d_out,
// b = the gate, c = d_gate, d = the up half, e = d_up.
LayerOp& LayerPlanner::Activation(LayerOpKind kind, const std::string& name, int a, int bb, int c,
                                  int64_t rows) {
  LayerOp& op = pb_.Op(kind, name);
  op.a = a;
  op.b = bb;
  op.c = c;
  op.rows = rows;
  op.cols = mlp_.f;
  op.swiglu = mlp_.swiglu;
  op.a_stride = mlp_.split_gate ? mlp_.f : mlp_.up_out;
  return op;
}

void LayerPlanner::DenseMlpBuffers() {
  const double Td = d_.Td, h = static_cast<double>(d_.h);
  mlp_.swiglu = s_.mlp == Mlp::kSwiglu;
  mlp_.split_gate = mlp_.swiglu && !s_.fused_gate_up;
  mlp_.f = d_.ffn;
  mlp_.up_out = mlp_.swiglu && !mlp_.split_gate ? 2 * mlp_.f : mlp_.f;
  const double f = static_cast<double>(mlp_.f), up_out = static_cast<double>(mlp_.up_out);
  mlp_.w1 = pb_.Buffer(mlp_.split_gate ? "w_gate" : "w_up", up_out * h);
  mlp_.w1b = mlp_.split_gate ? pb_.Buffer("w_up", f * h) : -1;
  mlp_.u = pb_.Buffer(mlp_.split_gate ? "gate_out" : "up_out", Td * up_out);
  mlp_.ub = mlp_.split_gate ? pb_.Buffer("up_out", Td * f) : -1;
  mlp_.g = pb_.Buffer("act_out", Td * f);
  mlp_.w2 = pb_.Buffer("w_down", h * f);
}

void LayerPlanner::DenseMlpForward() {
  const int64_t T = d_.T, h = d_.h, f = mlp_.f;
  if (mlp_.split_gate) {
    pb_.LinearForward("mlp_gate", T, f, h, n2_, mlp_.w1, mlp_.u);
    pb_.LinearForward("mlp_up", T, f, h, n2_, mlp_.w1b, mlp_.ub);
  } else {
    pb_.LinearForward(mlp_.swiglu ? "mlp_gate_up" : "mlp_up", T, mlp_.up_out, h, n2_, mlp_.w1,
                      mlp_.u);
  }
  // SwiGLU with split GEMMs reads the gate from u and the up half from ub.
  Activation(LayerOpKind::kActivation, "activation", mlp_.u, mlp_.ub, mlp_.g, T);
  pb_.LinearForward("mlp_down", T, h, f, mlp_.g, mlp_.w2, y2_);
}

// Returns the gradient of norm2's output.
int LayerPlanner::DenseMlpBackward(int dout) {
  const double Td = d_.Td, hh = static_cast<double>(d_.h);
  const int64_t T = d_.T, h = d_.h, f = mlp_.f, up_out = mlp_.up_out;
  const bool split = mlp_.split_gate;
  const double ff = static_cast<double>(f), up = static_cast<double>(up_out);
  const int dg = pb_.Buffer("d_act_out", Td * ff);
  const int dw2 = pb_.Buffer("d_w_down", hh * ff);
  const int du = pb_.Buffer(split ? "d_gate_out" : "d_up_out", Td * up);
  const int dub = split ? pb_.Buffer("d_up_out", Td * ff) : -1;
  const int dw1 = pb_.Buffer(split ? "d_w_gate" : "d_w_up", up * hh);
  const int dw1b = split ? pb_.Buffer("d_w_up", ff * hh) : -1;
  const int dn2 = pb_.Buffer("d_norm2_out", Td * hh);
  const int dn2b = split ? pb_.Buffer("d_norm2_out_up", Td * hh) : -1;
  pb_.LinearBackward("mlp_down", T, h, f, mlp_.g, mlp_.w2, dout, dg, dw2);
  // Activation backward: d act / d input, writing the gate and up halves (or both buffers).
  LayerOp& act =
      Activation(LayerOpKind::kActivationBackward, "activation backward", dg, mlp_.u, du, T);
  act.d = mlp_.ub;
  act.e = dub;
  if (split) {
    pb_.LinearBackward("mlp_gate", T, f, h, n2_, mlp_.w1, du, dn2, dw1);
    pb_.LinearBackward("mlp_up", T, f, h, n2_, mlp_.w1b, dub, dn2b, dw1b);
    Add("d_norm2 sum", dn2, dn2b, dn2, h);
  } else {
    pb_.LinearBackward(mlp_.swiglu ? "mlp_gate_up" : "mlp_up", T, up_out, h, n2_, mlp_.w1, du, dn2,
                       dw1);
  }
  return dn2;
}

void LayerPlanner::RoutingOp(LayerOp& op) const {
  op.tokens = d_.T;
  op.experts = d_.experts;
  op.top_k = d_.top_k;
  op.perm_mult = PermutationMultiplier(d_.T);
  op.perm_inverse = d_.T > 1 ? InverseMod(op.perm_mult, d_.T) : 0;
  op.rows = d_.routed_rows;
  op.cols = d_.h;
}

void LayerPlanner::MoeBuffers() {
  const double Td = d_.Td, h = static_cast<double>(d_.h), R = static_cast<double>(d_.routed_rows);
  const double E = static_cast<double>(d_.experts), k = static_cast<double>(d_.top_k);
  const double local = static_cast<double>(d_.expert_rows.size());
  mlp_.swiglu = s_.mlp == Mlp::kSwiglu;
  mlp_.split_gate = false;  // experts run gate and up as one GEMM (core/gemm.h)
  mlp_.f = d_.expert_ffn;
  mlp_.up_out = (mlp_.swiglu ? 2 : 1) * mlp_.f;
  mlp_.rows = d_.routed_rows;
  const double f = static_cast<double>(mlp_.f), up_out = static_cast<double>(mlp_.up_out);
  mlp_.w_router = pb_.Buffer("w_router", E * h);
  mlp_.logits = pb_.Buffer("router_logits", Td * E);
  mlp_.probs = pb_.Buffer("router_probs", Td * k, 4);
  mlp_.ids = pb_.Buffer("router_ids", Td * k, 4);
  mlp_.xp = pb_.Buffer("dispatched", R * h);
  mlp_.w1 = pb_.Buffer(mlp_.swiglu ? "w_experts_gate_up" : "w_experts_up", local * up_out * h);
  mlp_.u = pb_.Buffer(mlp_.swiglu ? "experts_gate_up_out" : "experts_up_out", R * up_out);
  mlp_.g = pb_.Buffer("experts_act_out", R * f);
  mlp_.w2 = pb_.Buffer("w_experts_down", local * h * f);
  mlp_.yp = pb_.Buffer("experts_down_out", R * h);
  if (d_.shared_ffn > 0) {
    const double fs = static_cast<double>(d_.shared_ffn), sup = (mlp_.swiglu ? 2 : 1) * fs;
    mlp_.ws1 = pb_.Buffer(mlp_.swiglu ? "w_shared_gate_up" : "w_shared_up", sup * h);
    mlp_.su = pb_.Buffer(mlp_.swiglu ? "shared_gate_up_out" : "shared_up_out", Td * sup);
    mlp_.sg = pb_.Buffer("shared_act_out", Td * fs);
    mlp_.ws2 = pb_.Buffer("w_shared_down", h * fs);
    mlp_.sy = pb_.Buffer("shared_down_out", Td * h);
  }
}

void LayerPlanner::SharedExpertForward() {
  const int64_t T = d_.T, h = d_.h, fs = d_.shared_ffn, sup = (mlp_.swiglu ? 2 : 1) * fs;
  pb_.LinearForward(mlp_.swiglu ? "shared_gate_up" : "shared_up", T, sup, h, n2_, mlp_.ws1,
                    mlp_.su);
  LayerOp& act = Activation(LayerOpKind::kActivation, "shared activation", mlp_.su, -1, mlp_.sg, T);
  act.cols = fs;
  act.a_stride = sup;
  pb_.LinearForward("shared_down", T, h, fs, mlp_.sg, mlp_.ws2, mlp_.sy);
}

void LayerPlanner::MoeForward() {
  const int64_t T = d_.T, h = d_.h, f = mlp_.f, R = mlp_.rows;
  pb_.LinearForward("moe_router", T, d_.experts, h, n2_, mlp_.w_router, mlp_.logits);
  LayerOp& topk = pb_.Op(LayerOpKind::kRouterTopK, "router softmax top-k");
  RoutingOp(topk);
  topk.a = mlp_.logits;
  topk.c = mlp_.probs;
  topk.d = mlp_.ids;
  LayerOp& dispatch = pb_.Op(LayerOpKind::kPermute, "dispatch permutation");
  RoutingOp(dispatch);
  dispatch.a = n2_;
  dispatch.c = mlp_.xp;
  pb_.GroupedForward(mlp_.swiglu ? "moe_gate_up" : "moe_up", d_.expert_rows, mlp_.up_out, h,
                     mlp_.xp, mlp_.w1, mlp_.u);
  Activation(LayerOpKind::kActivation, "experts activation", mlp_.u, -1, mlp_.g, R);
  pb_.GroupedForward("moe_down", d_.expert_rows, h, f, mlp_.g, mlp_.w2, mlp_.yp);
  if (d_.shared_ffn > 0) SharedExpertForward();
  LayerOp& combine = pb_.Op(LayerOpKind::kCombine, "combine");
  RoutingOp(combine);
  combine.a = mlp_.yp;
  combine.b = mlp_.sy;
  combine.d = mlp_.probs;
  combine.c = y2_;
}

// The shared expert's backward from the output gradient; returns its share of d norm2's output.
int LayerPlanner::SharedExpertBackward(int dout) {
  const double Td = d_.Td, hh = static_cast<double>(d_.h);
  const int64_t T = d_.T, h = d_.h, fs = d_.shared_ffn, sup = (mlp_.swiglu ? 2 : 1) * fs;
  const int dsg = pb_.Buffer("d_shared_act_out", Td * fs);
  const int dws2 = pb_.Buffer("d_w_shared_down", hh * fs);
  const int dsu = pb_.Buffer("d_shared_up_out", Td * sup);
  const int dws1 = pb_.Buffer("d_w_shared_up", static_cast<double>(sup) * hh);
  const int dn2 = pb_.Buffer("d_norm2_out_shared", Td * hh);
  pb_.LinearBackward("shared_down", T, h, fs, mlp_.sg, mlp_.ws2, dout, dsg, dws2);
  LayerOp& act =
      Activation(LayerOpKind::kActivationBackward, "shared activation backward", dsg, mlp_.su,
                 dsu, T);
  act.cols = fs;
  act.a_stride = sup;
  pb_.LinearBackward(mlp_.swiglu ? "shared_gate_up" : "shared_up", T, sup, h, n2_, mlp_.ws1, dsu,
                     dn2, dws1);
  return dn2;
}

// Returns the gradient of norm2's output: the experts', the router's and the shared expert's.
int LayerPlanner::MoeBackward(int dout) {
  const double Td = d_.Td, hh = static_cast<double>(d_.h), R = static_cast<double>(mlp_.rows);
  const int64_t T = d_.T, h = d_.h, f = mlp_.f;
  const double E = static_cast<double>(d_.experts), k = static_cast<double>(d_.top_k);
  const double local = static_cast<double>(d_.expert_rows.size());
  const int dn2_shared = d_.shared_ffn > 0 ? SharedExpertBackward(dout) : -1;
  const int dyp = pb_.Buffer("d_experts_down_out", R * hh);
  const int dprobs = pb_.Buffer("d_router_probs", Td * k, 4);
  LayerOp& combine = pb_.Op(LayerOpKind::kCombineBackward, "combine backward");
  RoutingOp(combine);
  combine.a = dout;
  combine.b = mlp_.yp;
  combine.d = mlp_.probs;
  combine.c = dyp;
  combine.e = dprobs;
  const int dg = pb_.Buffer("d_experts_act_out", R * static_cast<double>(f));
  const int dw2 = pb_.Buffer("d_w_experts_down", local * hh * static_cast<double>(f));
  pb_.GroupedBackward("moe_down", d_.expert_rows, h, f, mlp_.g, mlp_.w2, dyp, dg, dw2);
  const int du = pb_.Buffer("d_experts_up_out", R * static_cast<double>(mlp_.up_out));
  Activation(LayerOpKind::kActivationBackward, "experts activation backward", dg, mlp_.u, du,
             mlp_.rows);
  const int dxp = pb_.Buffer("d_dispatched", R * hh);
  const int dw1 = pb_.Buffer("d_w_experts_up", local * static_cast<double>(mlp_.up_out) * hh);
  pb_.GroupedBackward(mlp_.swiglu ? "moe_gate_up" : "moe_up", d_.expert_rows, mlp_.up_out, h,
                      mlp_.xp, mlp_.w1, du, dxp, dw1);
  const int dn2 = pb_.Buffer("d_norm2_out", Td * hh);
  LayerOp& gather = pb_.Op(LayerOpKind::kPermuteBackward, "dispatch permutation backward");
  RoutingOp(gather);
  gather.a = dxp;
  gather.c = dn2;
  const int dlogits = pb_.Buffer("d_router_logits", Td * E);
  LayerOp& topk = pb_.Op(LayerOpKind::kRouterTopKBackward, "router softmax top-k backward");
  RoutingOp(topk);
  topk.a = dprobs;
  topk.b = mlp_.logits;
  topk.d = mlp_.ids;
  topk.c = dlogits;
  const int dn2_router = pb_.Buffer("d_norm2_out_router", Td * hh);
  const int dw_router = pb_.Buffer("d_w_router", E * hh);
  pb_.LinearBackward("moe_router", T, d_.experts, h, n2_, mlp_.w_router, dlogits, dn2_router,
                     dw_router);
  Add("d_norm2 sum router", dn2, dn2_router, dn2, h);
  if (dn2_shared >= 0) Add("d_norm2 sum shared", dn2, dn2_shared, dn2, h);
  return dn2;
}

void LayerPlanner::WholeLayer() {
  const double Td = d_.Td, hh = static_cast<double>(d_.h);
  const bool moe = !d_.expert_rows.empty();
  AttentionHalfBuffers();
  if (moe) {
    MoeBuffers();
  } else {
    DenseMlpBuffers();
  }
  y2_ = pb_.Buffer(moe ? "moe_out" : "down_out", Td * hh);
  out_ = pb_.Buffer("y", Td * hh);
  AttentionHalfForward();
  if (moe) {
    MoeForward();
  } else {
    DenseMlpForward();
  }
  Add("residual2", x1_, y2_, out_, d_.h);
  p_->outputs[0] = out_;
  if (!d_.training) return;
  // The output gradient flows straight into both residual branches.
  const int dout = pb_.Buffer("d_y", Td * hh);
  const int dn2 = moe ? MoeBackward(dout) : DenseMlpBackward(dout);
  AttentionHalfBackward(dout, dn2);
}

}  // namespace wavecrest::layer_program_internal
