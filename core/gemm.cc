#include "core/gemm.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace wavecrest {

absl::string_view PassName(Pass pass) {
  switch (pass) {
    case Pass::kForward:
      return "forward";
    case Pass::kDgrad:
      return "dgrad";
    case Pass::kWgrad:
      return "wgrad";
    case Pass::kBackward:
      return "backward";
  }
  return "?";
}

absl::string_view LayoutName(Layout layout) {
  switch (layout) {
    case Layout::kTN:
      return "TN";
    case Layout::kNN:
      return "NN";
    case Layout::kNT:
      return "NT";
  }
  return "?";
}

absl::StatusOr<Layout> ParseLayout(absl::string_view name) {
  const std::string n = absl::AsciiStrToUpper(name);
  if (n == "TN") return Layout::kTN;
  if (n == "NN") return Layout::kNN;
  if (n == "NT") return Layout::kNT;
  return absl::InvalidArgumentError(
      absl::StrCat("layout: unknown \"", name, "\"; allowed: TN, NN, NT (cuBLAS opA opB)"));
}

std::string GemmKeyString(const GemmKey& key) {
  return absl::StrCat(DTypeName(key.dtype), " ", LayoutName(key.layout), " ", key.shape.m, "x",
                      key.shape.n, "x", key.shape.k, " b", key.shape.batch);
}

double GemmFlops(const GemmShape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) *
         static_cast<double>(s.batch);
}

namespace {

class Builder {
 public:
  Builder(const ModelSpec& spec, std::vector<Gemm>& out)
      : spec_(spec), out_(out), training_(spec.workload == Workload::kTraining) {}

  // A linear layer Y[T×out] = X[T×in]·W[out×in]ᵀ and, when training, its two gradients;
  // `batch` independent ones of the same shape (MoE experts, as one grouped GEMM).
  void Linear(absl::string_view name, int64_t tokens, int64_t out, int64_t in, int64_t count,
              int64_t batch = 1) {
    Add(name, Pass::kForward, {tokens, out, in, batch}, Layout::kTN, count);
    if (!training_) return;
    Add(name, Pass::kDgrad, {tokens, in, out, batch}, Layout::kNN, count);
    Add(name, Pass::kWgrad, {out, in, tokens, batch}, Layout::kNT, count);
  }

  void Add(absl::string_view name, Pass pass, GemmShape shape, Layout layout, int64_t count) {
    Gemm g;
    g.name = std::string(name);
    g.pass = pass;
    g.shape = shape;
    g.layout = layout;
    g.dtype = spec_.dtype;
    g.count = count;
    g.flops = GemmFlops(shape);
    out_.push_back(std::move(g));
  }

  void FusedAttention(Pass pass, GemmShape shape, double matmuls, int64_t kv_batch, bool causal,
                      int64_t count) {
    Gemm g;
    g.name = std::string(kAttnFused);
    g.pass = pass;
    g.shape = shape;
    g.layout = Layout::kTN;
    g.dtype = spec_.dtype;
    g.count = count;
    g.fused_attention = true;
    g.kv_batch = kv_batch;
    g.causal = causal;
    g.flops = matmuls * GemmFlops(shape);
    out_.push_back(std::move(g));
  }

  bool training() const { return training_; }

 private:
  const ModelSpec& spec_;
  std::vector<Gemm>& out_;
  bool training_;
};

}  // namespace

std::vector<Gemm> BuildGemms(const ModelSpec& spec) {
  std::vector<Gemm> out;
  out.reserve(32);  // a layer's forward and backward GEMMs, the logits, an MoE's router
  const DerivedShape d = Derive(spec);
  const int64_t h = spec.hidden_size;
  const int64_t L = spec.num_layers;
  const int64_t T = d.tokens;
  const bool decode = spec.workload == Workload::kDecode;
  Builder b(spec, out);

  // Attention projections. QKV is one fused GEMM (Megatron style); output projection is
  // row-parallel.
  const int64_t qkv_out = (d.heads_per_rank + 2 * d.kv_heads_per_rank) * d.head_dim;
  b.Linear(kQkv, T, qkv_out, h, L);

  // Attention core, per query head (KV heads are broadcast under GQA).
  const int64_t q_len = decode ? 1 : spec.seq_length;
  const int64_t kv_len = decode ? spec.kv_cache_length : spec.seq_length;
  const int64_t heads_batch = spec.micro_batch_size * d.heads_per_rank;
  const int64_t kv_batch = spec.micro_batch_size * d.kv_heads_per_rank;
  if (spec.attention == Attention::kUnfused && decode) {
    // Decode with a KV cache: the query heads that share a KV head are one GEMM's rows (what
    // grouped-query decode kernels do), so the cache of a_kv heads is read once, not a/a_kv times.
    const int64_t group = std::max<int64_t>(1, d.heads_per_rank / d.kv_heads_per_rank);
    b.Add(kAttnScore, Pass::kForward, {group * q_len, kv_len, d.head_dim, kv_batch}, Layout::kTN,
          L);
    b.Add(kAttnOverValue, Pass::kForward, {group * q_len, d.head_dim, kv_len, kv_batch},
          Layout::kNN, L);
  } else if (spec.attention == Attention::kUnfused) {
    // S = Q·Kᵀ: Q[s×d], K[s×d] -> like a linear layer with K as the weight.
    b.Add(kAttnScore, Pass::kForward, {q_len, kv_len, d.head_dim, heads_batch}, Layout::kTN, L);
    // O = P·V: P[s×s], V[s×d] stored as is.
    b.Add(kAttnOverValue, Pass::kForward, {q_len, d.head_dim, kv_len, heads_batch}, Layout::kNN, L);
    if (b.training()) {
      // dQ = dS·K (dgrad form), dK = dSᵀ·Q (wgrad form).
      b.Add(kAttnScore, Pass::kDgrad, {q_len, d.head_dim, kv_len, heads_batch}, Layout::kNN, L);
      b.Add(kAttnScore, Pass::kWgrad, {kv_len, d.head_dim, q_len, heads_batch}, Layout::kNT, L);
      // dP = dO·Vᵀ (dgrad form), dV = Pᵀ·dO (wgrad form).
      b.Add(kAttnOverValue, Pass::kDgrad, {q_len, kv_len, d.head_dim, heads_batch}, Layout::kTN, L);
      b.Add(kAttnOverValue, Pass::kWgrad, {kv_len, d.head_dim, q_len, heads_batch}, Layout::kNT, L);
    }
  } else {
    // FlashAttention: forward runs Q·Kᵀ and P·V (2 products of s×s×d per head); backward runs
    // five (recomputing S, then dV, dP, dQ, dK). FLOPs are counted for full (non-causal) attention,
    // as the paper's 4·b·s²·h term does; the kernel is causal except in decode (one query row
    // against the whole cache), and its time says so.
    const GemmShape shape{q_len, kv_len, d.head_dim, heads_batch};
    b.FusedAttention(Pass::kForward, shape, 2.0, kv_batch, !decode, L);
    if (b.training()) b.FusedAttention(Pass::kBackward, shape, 5.0, kv_batch, !decode, L);
  }

  b.Linear(kAttnProj, T, h, d.heads_per_rank * d.head_dim, L);

  if (spec.num_experts > 0) {
    // Mixture of experts. The router is small and replicated on every rank; each expert's width
    // is split over the tensor-parallel ranks like a dense MLP (no expert parallelism here).
    b.Linear(kMoeRouter, T, spec.num_experts, h, L);
    const int64_t E = spec.num_experts;
    const int64_t rows = d.expert_tokens;
    const bool gelu = spec.mlp == Mlp::kGelu;
    b.Linear(gelu ? kMoeUp : kMoeGateUp, rows, (gelu ? 1 : 2) * d.ffn_per_rank, h, L, E);
    b.Linear(kMoeDown, rows, h, d.ffn_per_rank, L, E);
    if (d.shared_ffn_per_rank > 0) {
      b.Linear(gelu ? kSharedUp : kSharedGateUp, T, (gelu ? 1 : 2) * d.shared_ffn_per_rank, h, L);
      b.Linear(kSharedDown, T, h, d.shared_ffn_per_rank, L);
    }
  } else if (spec.mlp == Mlp::kGelu) {
    b.Linear(kMlpUp, T, d.ffn_per_rank, h, L);
  } else if (spec.fused_gate_up) {
    b.Linear(kMlpGateUp, T, 2 * d.ffn_per_rank, h, L);
  } else {
    b.Linear(kMlpGate, T, d.ffn_per_rank, h, L);
    b.Linear(kMlpUp, T, d.ffn_per_rank, h, L);
  }
  if (spec.num_experts == 0) b.Linear(kMlpDown, T, h, d.ffn_per_rank, L);

  // Logits: training needs every position; prefill and decode only the last one per sequence.
  const int64_t logit_rows = spec.workload == Workload::kTraining ? T : spec.micro_batch_size;
  b.Linear(kLogits, logit_rows, d.vocab_per_rank, h, 1);
  return out;
}

}  // namespace wavecrest
