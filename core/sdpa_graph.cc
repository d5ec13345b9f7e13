#include "core/sdpa_graph.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace wavecrest {
namespace {

using Dims = std::array<int64_t, 4>;

Dims Transposed(Dims d) {
  std::swap(d[2], d[3]);
  return d;
}

int64_t AlignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// Appends tensors and operations, handing out unique ids.
class SdpaGraphBuilder {
 public:
  SdpaGraphBuilder(const SdpaShape& shape, std::string name) {
    g_.name = std::move(name);
    g_.shape = shape;
  }

  int64_t Tensor(std::string name, SdpaType type, Dims dims, Dims strides,
                 SdpaSlot slot = SdpaSlot::kVirtual, int64_t offset_bytes = 0) {
    SdpaTensor t;
    t.uid = next_uid_++;
    t.name = std::move(name);
    t.type = type;
    t.dims = dims;
    t.strides = strides;
    t.slot = slot;
    t.offset_bytes = offset_bytes;
    g_.tensors.push_back(std::move(t));
    return g_.tensors.back().uid;
  }
  int64_t Scalar(std::string name, float value) {
    const int64_t uid =
        Tensor(std::move(name), SdpaType::kFloat, {1, 1, 1, 1}, {1, 1, 1, 1}, SdpaSlot::kByValue);
    g_.tensors.back().value = value;
    return uid;
  }
  // A virtual tensor shaped like `like`, of `type`.
  int64_t Like(int64_t like, std::string name, SdpaType type) {
    const SdpaTensor& t = *g_.Find(like);
    return Tensor(std::move(name), type, t.dims, t.strides);
  }
  // The runner's own device memory, 256-byte aligned pieces.
  int64_t Own(int64_t bytes) {
    const int64_t at = g_.own_bytes;
    g_.own_bytes = AlignUp(at + bytes, 256);
    return at;
  }

  int64_t Op(SdpaOpKind kind, SdpaMode mode, std::string name, std::vector<int64_t> in, int64_t out,
             SdpaType compute = SdpaType::kFloat, int axis = -1) {
    SdpaOp op;
    op.kind = kind;
    op.mode = mode;
    op.name = std::move(name);
    op.in = std::move(in);
    op.out = out;
    op.compute = compute;
    op.axis = axis;
    g_.ops.push_back(std::move(op));
    return out;
  }
  int64_t Pointwise(SdpaMode mode, std::string name, std::vector<int64_t> in, int64_t out,
                    SdpaType compute = SdpaType::kFloat) {
    return Op(SdpaOpKind::kPointwise, mode, std::move(name), std::move(in), out, compute);
  }
  int64_t Matmul(std::string name, int64_t a, int64_t b, int64_t c) {
    return Op(SdpaOpKind::kMatmul, SdpaMode::kNone, std::move(name), {a, b}, c);
  }
  int64_t Reduce(SdpaMode mode, std::string name, int64_t x, int64_t y) {
    return Op(SdpaOpKind::kReduction, mode, std::move(name), {x}, y);
  }
  int64_t Reshape(std::string name, int64_t x, int64_t y) {
    return Op(SdpaOpKind::kReshape, SdpaMode::kNone, std::move(name), {x}, y);
  }

  // The causal mask on scores `s`: keys after the query row get the lowest float.
  int64_t CausalMask(int64_t s) {
    const int64_t row = Pointwise(SdpaMode::kGenIndex, "row index", {s},
                                  Like(s, "row", SdpaType::kInt32), SdpaType::kInt32);
    g_.ops.back().axis = 2;
    const int64_t col = Pointwise(SdpaMode::kGenIndex, "col index", {s},
                                  Like(s, "col", SdpaType::kInt32), SdpaType::kInt32);
    g_.ops.back().axis = 3;
    const int64_t keep = Pointwise(SdpaMode::kCmpGe, "row >= col", {row, col},
                                   Like(s, "causal", SdpaType::kBool), SdpaType::kBool);
    const int64_t lowest = Scalar("lowest", std::numeric_limits<float>::lowest());
    return Pointwise(SdpaMode::kBinarySelect, "causal mask", {s, lowest, keep},
                     Like(s, "S masked", SdpaType::kFloat));
  }

  // The sliding window on scores `s`: keys at least `window` behind the query row get the lowest
  // float (kept where col + window > row, the window a float added to the column index).
  int64_t WindowMask(int64_t s, int64_t window) {
    const int64_t row = Pointwise(SdpaMode::kGenIndex, "window row index", {s},
                                  Like(s, "window row", SdpaType::kInt32), SdpaType::kInt32);
    g_.ops.back().axis = 2;
    const int64_t col = Pointwise(SdpaMode::kGenIndex, "window col index", {s},
                                  Like(s, "window col", SdpaType::kInt32), SdpaType::kInt32);
    g_.ops.back().axis = 3;
    const int64_t reach =
        Pointwise(SdpaMode::kAdd, "col + window", {col, Scalar("window", static_cast<float>(window))},
                  Like(s, "col + window", SdpaType::kFloat));
    g_.ops.back().axis = 3;
    const int64_t keep = Pointwise(SdpaMode::kCmpGt, "col + window > row", {reach, row},
                                   Like(s, "in window", SdpaType::kBool), SdpaType::kBool);
    const int64_t lowest = Scalar("window lowest", std::numeric_limits<float>::lowest());
    return Pointwise(SdpaMode::kBinarySelect, "window mask", {s, lowest, keep},
                     Like(s, "S windowed", SdpaType::kFloat));
  }

  // The masks of `shape` on scores `s`.
  int64_t Masks(int64_t s, const SdpaShape& shape) {
    if (shape.causal) s = CausalMask(s);
    if (shape.window > 0) s = WindowMask(s, shape.window);
    return s;
  }

  SdpaGraph& graph() { return g_; }

 private:
  SdpaGraph g_;
  int64_t next_uid_ = 1;
};

// The per-shape layout facts both graphs share.
struct Geometry {
  int64_t b, H, Hkv, sq, skv, d, dv, width, io;
  Dims scores, scores_strides, rows, rows_strides;
  explicit Geometry(const SdpaShape& s)
      : b(s.batch),
        H(s.heads),
        Hkv(s.kv_heads),
        sq(s.q_len),
        skv(s.kv_len),
        d(s.head_dim),
        dv(SdpaValueDim(s)),
        width((s.heads + s.kv_heads) * s.head_dim + s.kv_heads * SdpaValueDim(s)),
        io(2) {
    scores = {b, H, sq, skv};
    scores_strides = {H * sq * skv, sq * skv, skv, 1};
    rows = {b, H, sq, 1};
    rows_strides = {H * sq, sq, 1, 1};
  }
  // Heads of `dim` × `len` rows inside QKV-like rows of `row_width` elements.
  static Dims InRows(int64_t len, int64_t row_width, int64_t dim) {
    return {len * row_width, dim, row_width, 1};
  }
  Dims InRows(int64_t len, int64_t row_width) const { return InRows(len, row_width, d); }
  int64_t VAt() const { return (H + Hkv) * d * io; }  // V's byte offset in the QKV rows
  Dims OutDims() const { return {b, H, sq, dv}; }
  Dims OutStrides() const { return InRows(sq, H * dv, dv); }
};

}  // namespace

const SdpaTensor* SdpaGraph::Find(int64_t uid) const {
  for (const SdpaTensor& t : tensors) {
    if (t.uid == uid) return &t;
  }
  return nullptr;
}

int SdpaTypeBytes(SdpaType type) {
  switch (type) {
    case SdpaType::kIo:
      return 2;
    case SdpaType::kFloat:
    case SdpaType::kInt32:
      return 4;
    case SdpaType::kBool:
      return 1;
  }
  return 4;
}

int64_t SdpaTensorEndBytes(const SdpaTensor& t) {
  int64_t last = 0;
  for (int i = 0; i < 4; ++i) last += (t.dims[i] - 1) * t.strides[i];
  return t.offset_bytes + (last + 1) * SdpaTypeBytes(t.type);
}

SdpaShape SdpaShapeOf(const LayerOp& op, DType dtype) {
  SdpaShape s;
  s.batch = op.batch;
  s.heads = op.heads;
  s.kv_heads = op.kv_heads;
  s.q_len = op.q_len;
  s.kv_len = op.kv_len;
  s.head_dim = op.head_dim;
  s.v_head_dim = op.v_head_dim == op.head_dim ? 0 : op.v_head_dim;
  s.window = op.window;
  s.causal = op.causal;
  s.scale = op.scale;
  s.dtype = dtype;
  return s;
}

absl::Status CheckSdpaShape(const SdpaShape& s) {
  if (s.dtype != DType::kBf16 && s.dtype != DType::kFp16) {
    return absl::InvalidArgumentError("dtype: cuDNN's fused attention here runs bf16 or fp16");
  }
  for (int64_t d : {s.head_dim, SdpaValueDim(s)}) {
    if (d < 8 || d > 256 || d % 8 != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "head_dim ", d, ": cuDNN's fused attention takes multiples of 8 up to 256"));
    }
  }
  if (s.window < 0 || (s.window > 0 && !s.causal)) {
    return absl::InvalidArgumentError(
        absl::StrCat("window ", s.window, ": a sliding window goes with the causal mask"));
  }
  if (s.batch < 1 || s.heads < 1 || s.kv_heads < 1 || s.q_len < 1 || s.kv_len < 1) {
    return absl::InvalidArgumentError("batch, heads, kv_heads, q_len and kv_len must be positive");
  }
  if (s.heads % s.kv_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("heads ", s.heads, " must be a multiple of kv_heads ", s.kv_heads));
  }
  if (s.q_len != s.kv_len && s.q_len != 1) {
    return absl::InvalidArgumentError("q_len must equal kv_len, or be 1 (decode)");
  }
  if (SdpaDecode(s) && s.causal) {
    return absl::InvalidArgumentError("decode (one query row) attends to the whole cache");
  }
  return absl::OkStatus();
}

absl::StatusOr<SdpaGraph> SdpaForwardGraph(const SdpaShape& shape, bool training) {
  if (absl::Status st = CheckSdpaShape(shape); !st.ok()) return st;
  if (training && SdpaDecode(shape)) {
    return absl::InvalidArgumentError("decode is inference: no training forward");
  }
  const Geometry l(shape);
  SdpaGraphBuilder g(shape, "sdpa forward");
  const int64_t q = g.Tensor("Q", SdpaType::kIo, {l.b, l.H, l.sq, l.d}, l.InRows(l.sq, l.width),
                             SdpaSlot::kQkvRows, 0);
  int64_t kt = 0, v = 0;
  if (SdpaDecode(shape)) {
    // The caches, [b, Hkv, kv_len, d] and [b, Hkv, kv_len, d_v], K read transposed.
    const Dims cache = {l.b, l.Hkv, l.skv, l.d};
    const Dims cache_strides = {l.Hkv * l.skv * l.d, l.skv * l.d, l.d, 1};
    const Dims v_cache = {l.b, l.Hkv, l.skv, l.dv};
    const Dims v_cache_strides = {l.Hkv * l.skv * l.dv, l.skv * l.dv, l.dv, 1};
    const int64_t k_at = g.Own(l.b * l.Hkv * l.skv * l.d * l.io);
    const int64_t v_at = g.Own(l.b * l.Hkv * l.skv * l.dv * l.io);
    g.graph().own_random_bytes = g.graph().own_bytes;
    kt = g.Tensor("K cache", SdpaType::kIo, Transposed(cache), Transposed(cache_strides),
                  SdpaSlot::kOwn, k_at);
    v = g.Tensor("V cache", SdpaType::kIo, v_cache, v_cache_strides, SdpaSlot::kOwn, v_at);
  } else {
    const Dims kv = {l.b, l.Hkv, l.skv, l.d};
    kt = g.Tensor("K", SdpaType::kIo, Transposed(kv), Transposed(l.InRows(l.skv, l.width)),
                  SdpaSlot::kQkvRows, l.H * l.d * l.io);
    v = g.Tensor("V", SdpaType::kIo, {l.b, l.Hkv, l.skv, l.dv},
                 Geometry::InRows(l.skv, l.width, l.dv), SdpaSlot::kQkvRows, l.VAt());
  }
  int64_t s = g.Matmul("Q·Kᵀ", q, kt, g.Tensor("S", SdpaType::kFloat, l.scores, l.scores_strides));
  s = g.Pointwise(SdpaMode::kMul, "scale", {s, g.Scalar("scale", shape.scale)},
                  g.Like(s, "S scaled", SdpaType::kFloat));
  s = g.Masks(s, shape);
  // Softmax, keeping its log-sum-exp for the backward.
  const int64_t m = g.Reduce(SdpaMode::kMax, "row max", s,
                             g.Tensor("M", SdpaType::kFloat, l.rows, l.rows_strides));
  const int64_t centred =
      g.Pointwise(SdpaMode::kSub, "S - M", {s, m}, g.Like(s, "S - M", SdpaType::kFloat));
  const int64_t e =
      g.Pointwise(SdpaMode::kExp, "exp", {centred}, g.Like(s, "exp", SdpaType::kFloat));
  const int64_t z = g.Reduce(SdpaMode::kSum, "row sum", e,
                             g.Tensor("Z", SdpaType::kFloat, l.rows, l.rows_strides));
  // The log-sum-exp is part of the pattern cuDNN's fused-attention engines recognise, trained or
  // not: without it (inference, decode) cuDNN 9.19 on H100 and H200 found no engine for the
  // forward ("no engine for sdpa forward ... causal", bench/results/gpu/). cudnn-frontend's
  // composite softmax (before 9.21) builds it in inference too, into a virtual stats tensor
  // (include/cudnn_frontend/node/softmax.h, CompositeSoftmaxNode::expand_node). So do we: in
  // memory for training, virtual otherwise.
  const int64_t log_z =
      g.Pointwise(SdpaMode::kLog, "log Z", {z}, g.Like(z, "log Z", SdpaType::kFloat));
  g.Pointwise(SdpaMode::kAdd, "stats", {m, log_z},
              training ? g.Tensor("stats", SdpaType::kFloat, l.rows, l.rows_strides,
                                  SdpaSlot::kStats, 0)
                       : g.Like(z, "stats", SdpaType::kFloat));
  // The probabilities enter the second matmul in the I/O type, as cuDNN requires.
  const int64_t p = g.Pointwise(SdpaMode::kDiv, "E / Z", {e, z}, g.Like(s, "P", SdpaType::kIo));
  g.Matmul("P·V", p, v,
           g.Tensor("O", SdpaType::kIo, l.OutDims(), l.OutStrides(), SdpaSlot::kORows, 0));
  return std::move(g.graph());
}

namespace {

// D = Σ dO ∘ O per row (FP32, in the runner's memory at sum_at).
int64_t RowSumOfDoO(SdpaGraphBuilder& g, const Geometry& l, int64_t d_o, int64_t o,
                    int64_t sum_at) {
  const int64_t prod = g.Pointwise(SdpaMode::kMul, "dO * O", {d_o, o},
                                   g.Tensor("dO * O", SdpaType::kFloat, l.OutDims(),
                                            {l.H * l.sq * l.dv, l.sq * l.dv, l.H * l.dv, 1}));
  const int64_t row_sum =
      g.Reduce(SdpaMode::kSum, "row sum dO * O", prod,
               g.Tensor("sum dO * O", SdpaType::kFloat, l.rows, l.rows_strides));
  const int64_t d = g.Tensor("D", SdpaType::kFloat, l.rows, l.rows_strides, SdpaSlot::kOwn, sum_at);
  return g.Pointwise(SdpaMode::kMul, "D", {row_sum, g.Scalar("one", 1.0f)}, d);
}

// P, recomputed from the statistics; *scores is the last scores tensor (the shape dS takes).
int64_t RecomputeP(SdpaGraphBuilder& g, const Geometry& l, const SdpaShape& shape, int64_t q,
                   int64_t kt, int64_t stats, int64_t* scores) {
  int64_t s = g.Matmul("Q·Kᵀ", q, kt, g.Tensor("S", SdpaType::kFloat, l.scores, l.scores_strides));
  s = g.Pointwise(SdpaMode::kMul, "scale", {s, g.Scalar("scale", shape.scale)},
                  g.Like(s, "S scaled", SdpaType::kFloat));
  s = g.Masks(s, shape);
  s = g.Pointwise(SdpaMode::kSub, "S - stats", {s, stats},
                  g.Like(s, "S - stats", SdpaType::kFloat));
  *scores = s;
  return g.Pointwise(SdpaMode::kExp, "P", {s}, g.Like(s, "P", SdpaType::kFloat));
}

// dX = a·b_op of the KV heads (dK, dV): straight into the rows at `at`, or (grouped heads)
// per query head and then summed over each group.
void KvGradient(SdpaGraphBuilder& g, const Geometry& l, const std::string& name, int64_t a,
                int64_t b_op, int64_t at, int64_t dim) {
  const int64_t out = g.Tensor(name, SdpaType::kIo, {l.b, l.Hkv, l.skv, dim},
                               Geometry::InRows(l.skv, l.width, dim), SdpaSlot::kDqkvRows, at);
  if (l.H == l.Hkv) {
    g.Matmul(name + " matmul", a, b_op, out);
    return;
  }
  const int64_t full = g.Tensor(name + " per query head", SdpaType::kIo, {l.b, l.H, l.skv, dim},
                                {l.H * l.skv * dim, l.skv * dim, dim, 1});
  g.Matmul(name + " matmul", a, b_op, full);
  g.Reduce(SdpaMode::kSum, name + " over the group", full, out);
}

// dS = P ∘ (dO·Vᵀ − D) · scale, in FP32 shaped as the scores `s`.
int64_t ScoresGradient(SdpaGraphBuilder& g, const SdpaShape& shape, int64_t s, int64_t p,
                       int64_t d_o, int64_t vt, int64_t big_d) {
  int64_t dp = g.Matmul("dO·Vᵀ", d_o, vt, g.Like(s, "dP", SdpaType::kFloat));
  dp = g.Pointwise(SdpaMode::kSub, "dP - D", {dp, big_d}, g.Like(s, "dP - D", SdpaType::kFloat));
  dp = g.Pointwise(SdpaMode::kMul, "P * (dP - D)", {dp, p},
                   g.Like(s, "P(dP - D)", SdpaType::kFloat));
  return g.Pointwise(SdpaMode::kMul, "dS", {dp, g.Scalar("scale", shape.scale)},
                     g.Like(s, "dS", SdpaType::kFloat));
}

}  // namespace

absl::StatusOr<SdpaGraph> SdpaBackwardGraph(const SdpaShape& shape) {
  if (absl::Status st = CheckSdpaShape(shape); !st.ok()) return st;
  if (SdpaDecode(shape)) return absl::InvalidArgumentError("decode is inference: no backward");
  const Geometry l(shape);
  SdpaGraphBuilder g(shape, "sdpa backward");
  const Dims kv = {l.b, l.Hkv, l.skv, l.d};
  const Dims kv_strides = l.InRows(l.skv, l.width);
  const Dims vv = {l.b, l.Hkv, l.skv, l.dv};
  const Dims vv_strides = Geometry::InRows(l.skv, l.width, l.dv);
  const int64_t k_at = l.H * l.d * l.io, v_at = l.VAt();
  const int64_t q = g.Tensor("Q", SdpaType::kIo, {l.b, l.H, l.sq, l.d}, l.InRows(l.sq, l.width),
                             SdpaSlot::kQkvRows, 0);
  const int64_t kt = g.Tensor("K", SdpaType::kIo, Transposed(kv), Transposed(kv_strides),
                              SdpaSlot::kQkvRows, k_at);
  const int64_t vt = g.Tensor("V", SdpaType::kIo, Transposed(vv), Transposed(vv_strides),
                              SdpaSlot::kQkvRows, v_at);
  const int64_t o = g.Tensor("O", SdpaType::kIo, l.OutDims(), l.OutStrides(), SdpaSlot::kORows, 0);
  const int64_t d_o =
      g.Tensor("dO", SdpaType::kIo, l.OutDims(), l.OutStrides(), SdpaSlot::kDoRows, 0);
  const int64_t stats =
      g.Tensor("stats", SdpaType::kFloat, l.rows, l.rows_strides, SdpaSlot::kStats, 0);
  const int64_t sum_at = g.Own(l.b * l.H * l.sq * 4);
  const int64_t dq_bytes = l.b * l.H * l.sq * l.d * 4;
  const int64_t dq_at = g.Own(dq_bytes);
  g.graph().zero_offset = dq_at;
  g.graph().zero_bytes = dq_bytes;

  const int64_t big_d = RowSumOfDoO(g, l, d_o, o, sum_at);
  int64_t s = -1;
  const int64_t p = RecomputeP(g, l, shape, q, kt, stats, &s);

  // Transposed views of scores, [b, H, kv_len, q_len], in the I/O type.
  const Dims scores_t = Transposed(l.scores);
  const Dims scores_t_strides = {l.H * l.sq * l.skv, l.sq * l.skv, 1, l.skv};
  const int64_t p_t = g.Reshape("Pᵀ", p, g.Tensor("Pᵀ", SdpaType::kIo, scores_t, scores_t_strides));
  KvGradient(g, l, "dV", p_t, d_o, v_at, l.dv);
  const int64_t ds = ScoresGradient(g, shape, s, p, d_o, vt, big_d);
  const int64_t ds_t =
      g.Reshape("dSᵀ", ds, g.Tensor("dSᵀ", SdpaType::kIo, scores_t, scores_t_strides));
  KvGradient(g, l, "dK", ds_t, q, k_at, l.d);

  // dQ = dS·K through an FP32 accumulator (K back in its own orientation).
  // (A virtual tensor of the intermediate type, FP32, as cuDNN's frontend leaves it.)
  const int64_t k = g.Reshape("K", kt, g.Tensor("K rows", SdpaType::kFloat, kv, kv_strides));
  const int64_t dq_acc =
      g.Matmul("dS·K", ds, k,
               g.Tensor("dQ accumulator", SdpaType::kFloat, {l.b, l.H, l.sq, l.d},
                        {l.H * l.sq * l.d, l.sq * l.d, l.d, 1}, SdpaSlot::kOwn, dq_at));
  g.Pointwise(SdpaMode::kIdentity, "dQ", {dq_acc},
              g.Tensor("dQ", SdpaType::kIo, {l.b, l.H, l.sq, l.d}, l.InRows(l.sq, l.width),
                       SdpaSlot::kDqkvRows, 0));
  return std::move(g.graph());
}

namespace {

// Each tensor: a unique id, positive dims and strides, device tensors 16-byte aligned, the
// runner's own inside its memory. An empty string when they are.
std::string CheckTensors(const SdpaGraph& graph) {
  std::set<int64_t> uids;
  for (const SdpaTensor& t : graph.tensors) {
    if (!uids.insert(t.uid).second) return absl::StrCat("uid ", t.uid, " twice");
    for (int i = 0; i < 4; ++i) {
      if (t.dims[i] < 1 || t.strides[i] < 1) return t.name + ": non-positive dim or stride";
    }
    const bool device = t.slot != SdpaSlot::kVirtual && t.slot != SdpaSlot::kByValue;
    if (device && t.offset_bytes % 16 != 0) return t.name + ": not 16-byte aligned";
    if (t.slot == SdpaSlot::kOwn && SdpaTensorEndBytes(t) > graph.own_bytes) {
      return t.name + ": past the runner's memory";
    }
  }
  return "";
}

size_t Arity(const SdpaOp& op) {
  if (op.kind == SdpaOpKind::kMatmul) return 2;
  if (op.kind != SdpaOpKind::kPointwise) return 1;
  if (op.mode == SdpaMode::kBinarySelect) return 3;
  const bool unary = op.mode == SdpaMode::kExp || op.mode == SdpaMode::kLog ||
                     op.mode == SdpaMode::kIdentity || op.mode == SdpaMode::kGenIndex;
  return unary ? 1 : 2;
}

// The op's inputs and output agree in shape and type for its kind; an empty string when they do.
std::string CheckOpShapes(const SdpaOp& op, const std::vector<const SdpaTensor*>& in,
                          const SdpaTensor& out) {
  const Dims& y = out.dims;
  switch (op.kind) {
    case SdpaOpKind::kMatmul: {
      const Dims &a = in[0]->dims, &b = in[1]->dims;
      if (a[0] != y[0] || b[0] != y[0] || y[1] % a[1] != 0 || y[1] % b[1] != 0 || a[3] != b[2] ||
          a[2] != y[2] || b[3] != y[3]) {
        return op.name + ": matmul shapes disagree";
      }
      auto numeric = [](SdpaType t) { return t == SdpaType::kIo || t == SdpaType::kFloat; };
      if (!numeric(in[0]->type) || !numeric(in[1]->type) || !numeric(out.type)) {
        return op.name + ": matmul of non-numeric tensors";
      }
      return "";
    }
    case SdpaOpKind::kPointwise:
      for (const SdpaTensor* t : in) {
        for (int i = 0; i < 4; ++i) {
          if (t->dims[i] != y[i] && t->dims[i] != 1) {
            return op.name + ": " + t->name + " does not broadcast to " + out.name;
          }
        }
      }
      if (op.mode == SdpaMode::kGenIndex && op.axis != 2 && op.axis != 3) {
        return op.name + ": index axis";
      }
      if ((op.mode == SdpaMode::kCmpGe || op.mode == SdpaMode::kCmpGt) !=
          (out.type == SdpaType::kBool)) {
        return op.name + ": only comparisons give booleans";
      }
      if (op.mode == SdpaMode::kBinarySelect && in[2]->type != SdpaType::kBool) {
        return op.name + ": selects on a non-boolean";
      }
      return "";
    case SdpaOpKind::kReduction:
      for (int i = 0; i < 4; ++i) {
        const int64_t x = in[0]->dims[i];
        if (y[i] != x && y[i] != 1 && !(i == 1 && x % y[i] == 0)) {
          return op.name + ": reduction shapes disagree";
        }
      }
      return "";
    case SdpaOpKind::kReshape: {
      int64_t nx = 1, ny = 1;
      for (int i = 0; i < 4; ++i) {
        nx *= in[0]->dims[i];
        ny *= y[i];
      }
      return nx != ny ? op.name + ": reshape changes the element count" : "";
    }
  }
  return "";
}

// The ops in order: inputs defined and written before read, each output written once and never
// an input, the arity and shapes right, every virtual tensor written. An empty string when so.
std::string CheckOps(const SdpaGraph& graph) {
  std::set<int64_t> written;
  // Inputs: the QKV rows, the output gradient, scalars, and whatever is read before written.
  std::set<int64_t> read;
  auto is_input = [&](const SdpaTensor& t) {
    return t.slot == SdpaSlot::kByValue || t.slot == SdpaSlot::kQkvRows ||
           t.slot == SdpaSlot::kDoRows || read.contains(t.uid);
  };
  for (const SdpaOp& op : graph.ops) {
    const SdpaTensor* out = graph.Find(op.out);
    if (out == nullptr) return op.name + ": no output tensor";
    std::vector<const SdpaTensor*> in;
    for (int64_t uid : op.in) {
      const SdpaTensor* t = graph.Find(uid);
      if (t == nullptr) return absl::StrCat(op.name, ": input ", uid, " undefined");
      if (t->slot == SdpaSlot::kVirtual && !written.contains(uid)) {
        return op.name + ": reads " + t->name + " before it is written";
      }
      in.push_back(t);
      read.insert(uid);
    }
    if (!written.insert(op.out).second) return op.name + ": " + out->name + " written twice";
    if (is_input(*out)) return op.name + ": writes the input " + out->name;
    if (in.size() != Arity(op)) return op.name + ": wrong number of inputs";
    if (std::string why = CheckOpShapes(op, in, *out); !why.empty()) return why;
  }
  for (const SdpaTensor& t : graph.tensors) {
    if (t.slot == SdpaSlot::kVirtual && !written.contains(t.uid)) {
      return t.name + ": virtual but never written";
    }
  }
  return "";
}

}  // namespace

absl::Status ValidateSdpaGraph(const SdpaGraph& graph) {
  std::string why = CheckTensors(graph);
  if (why.empty()) why = CheckOps(graph);
  if (why.empty()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(graph.name, ": ", why));
}

}  // namespace wavecrest
