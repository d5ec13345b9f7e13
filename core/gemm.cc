#include "core/gemm.h"

#include <algorithm>
#include <utility>

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

DType ComputeDType(DType model, absl::string_view name) {
  if (model != DType::kFp8E4M3) return model;
  const bool bf16 = name == kAttnScore || name == kAttnOverValue || name == kAttnFused ||
                    name == kLogits || IsSsdGemm(name);
  return bf16 ? DType::kBf16 : model;
}

double GemmFlops(const GemmShape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) *
         static_cast<double>(s.batch);
}

namespace {

class GemmListBuilder {
 public:
  GemmListBuilder(const ModelSpec& spec, std::vector<Gemm>& out)
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
    g.dtype = ComputeDType(name);
    g.count = count;
    g.flops = GemmFlops(shape);
    out_.push_back(std::move(g));
  }

  DType ComputeDType(absl::string_view name) const {
    return wavecrest::ComputeDType(spec_.dtype, name);
  }

  void FusedAttention(Pass pass, GemmShape shape, double matmuls, int64_t kv_batch, bool causal,
                      int64_t count, int64_t window = 0) {
    Gemm g;
    g.name = std::string(kAttnFused);
    g.pass = pass;
    g.shape = shape;
    g.layout = Layout::kTN;
    g.dtype = ComputeDType(kAttnFused);
    g.count = count;
    g.fused_attention = true;
    g.kernel = spec_.attention;
    g.kv_batch = kv_batch;
    g.causal = causal;
    g.window = window;
    g.flops = matmuls * GemmFlops(shape);
    out_.push_back(std::move(g));
  }

  bool training() const { return training_; }

 private:
  const ModelSpec& spec_;
  std::vector<Gemm>& out_;
  bool training_;
};

// The sizes of one rank's attention core. Under context parallelism a rank's s/c queries meet
// every key in c ring steps of (s/c)² blocks: one causal (its own chunks), c - 1 where half the
// block is masked, i.e. c causal blocks' work, and c times the (s/c)² FLOP convention (which
// sums to s² over the c ranks): `count` is L·c.
struct CoreDims {
  bool decode = false;
  int64_t count = 0;       // L, or L·c under context parallelism
  int64_t dq = 0, dv = 0;  // query/key and value head dims
  int64_t q_len = 0, kv_len = 0;
  int64_t heads_batch = 0, kv_batch = 0;  // b·(query heads), b·(KV heads) per rank
};

CoreDims CoreDimsOf(const ModelSpec& spec, const DerivedShape& d) {
  CoreDims c;
  c.decode = spec.workload == Workload::kDecode;
  c.count = d.attention_layers * (c.decode ? 1 : spec.context_parallel);
  c.dq = d.head_dim;
  c.dv = d.v_head_dim;
  c.q_len = c.decode ? 1 : d.seq_per_rank;
  c.kv_len = c.decode ? spec.kv_cache_length : d.seq_per_rank;
  c.heads_batch = spec.micro_batch_size * d.heads_per_rank;
  c.kv_batch = spec.micro_batch_size * d.kv_heads_per_rank;
  return c;
}

// Unfused attention: the score and value GEMMs, and in training their four gradients.
void UnfusedAttentionCore(const DerivedShape& d, const CoreDims& c, GemmListBuilder& b) {
  const int64_t L = c.count, dq = c.dq, dv = c.dv, q_len = c.q_len, kv_len = c.kv_len;
  const int64_t heads_batch = c.heads_batch;
  if (c.decode) {
    // Decode with a KV cache: the query heads that share a KV head are one GEMM's rows (what
    // grouped-query decode kernels do), so the cache of a_kv heads is read once, not a/a_kv times.
    const int64_t group = std::max<int64_t>(1, d.heads_per_rank / d.kv_heads_per_rank);
    b.Add(kAttnScore, Pass::kForward, {group * q_len, kv_len, dq, c.kv_batch}, Layout::kTN, L);
    b.Add(kAttnOverValue, Pass::kForward, {group * q_len, dv, kv_len, c.kv_batch}, Layout::kNN,
          L);
    return;
  }
  // S = Q·Kᵀ: Q[s×d], K[s×d] -> like a linear layer with K as the weight.
  b.Add(kAttnScore, Pass::kForward, {q_len, kv_len, dq, heads_batch}, Layout::kTN, L);
  // O = P·V: P[s×s], V[s×d_v] stored as is.
  b.Add(kAttnOverValue, Pass::kForward, {q_len, dv, kv_len, heads_batch}, Layout::kNN, L);
  if (b.training()) {
    // dQ = dS·K (dgrad form), dK = dSᵀ·Q (wgrad form).
    b.Add(kAttnScore, Pass::kDgrad, {q_len, dq, kv_len, heads_batch}, Layout::kNN, L);
    b.Add(kAttnScore, Pass::kWgrad, {kv_len, dq, q_len, heads_batch}, Layout::kNT, L);
    // dP = dO·Vᵀ (dgrad form), dV = Pᵀ·dO (wgrad form).
    b.Add(kAttnOverValue, Pass::kDgrad, {q_len, kv_len, dv, heads_batch}, Layout::kTN, L);
    b.Add(kAttnOverValue, Pass::kWgrad, {kv_len, dv, q_len, heads_batch}, Layout::kNT, L);
  }
}

// FlashAttention: forward runs Q·Kᵀ and P·V (2 products of s×s×d per head); backward runs
// five (recomputing S, then dV, dP, dQ, dK). FLOPs are counted for full (non-causal) attention,
// as the paper's 4·b·s²·h term does; the kernel is causal except in decode (one query row
// against the whole cache), and its time says so. With d_v ≠ d (MLA) the shape keeps the
// query/key head dim (what the kernel's tiles pad) and the FLOPs weigh the products by their
// own dims: Q·Kᵀ (and dS, dQ, dK) by d, P·V (and dV, dP) by d_v. Layers with local attention
// (sliding_window) run the kernel over the window.
void FusedAttentionCore(const ModelSpec& spec, const DerivedShape& d, const CoreDims& c,
                        GemmListBuilder& b) {
  auto matmuls = [&](double qk_products, double v_products) {
    return (qk_products * static_cast<double>(c.dq) + v_products * static_cast<double>(c.dv)) /
           static_cast<double>(c.dq);
  };
  const double forward = matmuls(1, 1), backward = matmuls(3, 2);
  auto add = [&](int64_t keys, int64_t window, int64_t count) {
    if (count == 0) return;
    const GemmShape shape{c.q_len, keys, c.dq, c.heads_batch};
    b.FusedAttention(Pass::kForward, shape, forward, c.kv_batch, !c.decode, count, window);
    if (b.training()) {
      b.FusedAttention(Pass::kBackward, shape, backward, c.kv_batch, !c.decode, count, window);
    }
  };
  const int64_t w = spec.sliding_window;
  if (d.window_layers > 0 && w < c.kv_len) {
    // A causal window visits about 2·window keys' worth of the full convention's s × s.
    add(c.decode ? w : std::min(c.kv_len, 2 * w), c.decode ? 0 : w, d.window_layers);
    add(c.kv_len, 0, c.count - d.window_layers);
  } else {
    add(c.kv_len, 0, c.count);
  }
}

// The attention core of every layer, per query head (KV heads are broadcast under GQA). Under
// MLA the query/key head dim (d) and the value head dim (d_v) differ. Unfused attention computes
// every score and masks, so a sliding window changes nothing there.
void AttentionCore(const ModelSpec& spec, const DerivedShape& d, GemmListBuilder& b) {
  const CoreDims c = CoreDimsOf(spec, d);
  if (spec.attention == Attention::kUnfused) {
    UnfusedAttentionCore(d, c, b);
  } else {
    FusedAttentionCore(spec, d, c, b);
  }
}

// The attention projections. QKV is one fused GEMM (Megatron style). Multi-head latent attention
// instead projects down to latents and up to every head; its down projections are small and run
// whole on every rank (Megatron-Core's MLA keeps them duplicated), the up projections are
// column-parallel by heads.
void AttentionInputProjections(const ModelSpec& spec, const DerivedShape& d, GemmListBuilder& b) {
  const int64_t h = spec.hidden_size, L = d.attention_layers, T = d.tokens;
  if (spec.kv_lora_rank > 0) {
    const int64_t nope = d.head_dim - spec.qk_rope_head_dim;
    if (spec.q_lora_rank > 0) {
      b.Linear(kMlaQDown, T, spec.q_lora_rank, h, L);
      b.Linear(kMlaQUp, T, d.heads_per_rank * d.head_dim, spec.q_lora_rank, L);
    } else {
      b.Linear(kMlaQ, T, d.heads_per_rank * d.head_dim, h, L);
    }
    b.Linear(kMlaKvDown, T, spec.kv_lora_rank + spec.qk_rope_head_dim, h, L);
    b.Linear(kMlaKvUp, T, d.heads_per_rank * (nope + d.v_head_dim), spec.kv_lora_rank, L);
  } else {
    const int64_t qkv_out = (d.heads_per_rank + 2 * d.kv_heads_per_rank) * d.head_dim;
    b.Linear(kQkv, T, qkv_out, h, L);
  }
}

// Mixture of experts. The router is small and replicated on every rank; each expert's width is
// split over the tensor-parallel ranks like a dense MLP; under expert parallelism a rank holds
// E/e experts and runs them on the tokens e ranks route to them. Only the experts a step's tokens
// reach run (Derive: experts_run), as one grouped GEMM, or two when their rows differ by one (the
// copies shared as evenly as whole rows allow).
void ExpertMlpGemms(const ModelSpec& spec, const DerivedShape& d, GemmListBuilder& b) {
  const int64_t h = spec.hidden_size, T = d.tokens, M = d.moe_layers;
  b.Linear(kMoeRouter, T, spec.num_experts, h, M);
  const int64_t run = d.experts_run, rows = d.expert_rows_total / run;
  const int64_t more = d.expert_rows_total % run;  // experts with one row more
  const bool gelu = spec.mlp == Mlp::kGelu;
  for (const auto& [experts, m] : {std::pair{more, rows + 1}, std::pair{run - more, rows}}) {
    if (experts == 0 || m == 0) continue;
    b.Linear(gelu ? kMoeUp : kMoeGateUp, m, (gelu ? 1 : 2) * d.expert_ffn_per_rank, h, M,
             experts);
    b.Linear(kMoeDown, m, h, d.expert_ffn_per_rank, M, experts);
  }
  if (d.shared_ffn_per_rank > 0) {
    b.Linear(gelu ? kSharedUp : kSharedGateUp, T, (gelu ? 1 : 2) * d.shared_ffn_per_rank, h, M);
    b.Linear(kSharedDown, T, h, d.shared_ffn_per_rank, M);
  }
}

// The Mamba-2 mixers of a hybrid model (Megatron-Core's MambaMixer, its heads and groups split
// over the tensor-parallel ranks): in_proj (column-parallel) and out_proj (row-parallel), and the
// chunked scan as the products the SSD algorithm is made of (Dao and Gu 2024, sec. 6: per chunk
// of Q tokens, C·Bᵀ per group, its masked product with X per head, each chunk's state Bᵀ·X and
// the output from the carried state C·h), batched over the micro-batch's chunks and the rank's
// heads (groups); each has its two gradient products in training. They are priced as batched
// GEMMs of those shapes: the Triton kernels that run them are not measured here. Decode carries
// the state: one product of the token's C with each head's N × P state (the state's update is
// elementwise work).
void MambaGemms(const ModelSpec& spec, const DerivedShape& d, GemmListBuilder& b) {
  const int64_t h = spec.hidden_size, T = d.tokens, M = d.mamba_layers;
  const int64_t Q = spec.mamba_chunk_size, P = spec.mamba_head_dim, N = spec.mamba_state_dim;
  b.Linear(kMambaInProj, T, d.mamba_in_proj_per_rank, h, M);
  const int64_t bsz = spec.micro_batch_size;
  if (spec.workload == Workload::kDecode) {
    b.Add(kSsdOff, Pass::kForward, {1, P, N, bsz * d.mamba_heads_per_rank}, Layout::kNN, M);
  } else {
    const int64_t q = std::min(Q, d.seq_per_rank);
    const int64_t chunks = bsz * ((d.seq_per_rank + q - 1) / q);
    b.Linear(kSsdCb, q, q, N, M, chunks * d.mamba_groups_per_rank);
    b.Linear(kSsdDiag, q, P, q, M, chunks * d.mamba_heads_per_rank);
    b.Linear(kSsdState, N, P, q, M, chunks * d.mamba_heads_per_rank);
    b.Linear(kSsdOff, q, P, N, M, chunks * d.mamba_heads_per_rank);
  }
  b.Linear(kMambaOutProj, T, h, d.mamba_inner_per_rank, M);
}

// Dense layers' MLP (every layer of a dense model; the others of a mixed one).
void DenseMlpGemms(const ModelSpec& spec, const DerivedShape& d, GemmListBuilder& b) {
  const int64_t h = spec.hidden_size, T = d.tokens, D = d.dense_layers;
  const int64_t f = d.dense_ffn_per_rank;
  if (spec.mlp == Mlp::kGelu) {
    b.Linear(kMlpUp, T, f, h, D);
  } else if (spec.fused_gate_up) {
    b.Linear(kMlpGateUp, T, 2 * f, h, D);
  } else {
    b.Linear(kMlpGate, T, f, h, D);
    b.Linear(kMlpUp, T, f, h, D);
  }
  b.Linear(kMlpDown, T, h, f, D);
}

}  // namespace

std::string ExpertRoutingAssumption(const ModelSpec& spec) {
  if (spec.num_experts == 0) return "";
  const DerivedShape d = Derive(spec);
  const int64_t E = spec.num_experts, k = spec.experts_per_token;
  const int64_t e = std::max<int64_t>(spec.expert_parallel, 1);
  const std::string per_rank = e > 1 ? absl::StrCat(" (", d.experts_per_rank, " per rank)") : "";
  if (spec.moe_capacity_factor > 0) {
    return absl::StrCat(
        "mixture of experts with a capacity factor of ", spec.moe_capacity_factor, ": each of ",
        E, " experts", per_rank, " runs ", d.expert_tokens,
        " rows, its balanced share padded (tokens beyond it dropped); the padding is work, not "
        "model FLOPs");
  }
  const double skew = std::min(std::max(spec.moe_routing_skew, 1.0), static_cast<double>(e));
  const std::string balance =
      skew > 1 ? absl::StrCat("skewed: the busiest of ", e, " expert-parallel ranks gets ", skew,
                              " times the mean (moe_routing_skew) and every rank waits for it")
               : absl::StrCat("balanced across experts (what a load-balancing loss aims at; "
                              "--routing-skew prices an uneven router's busiest expert-parallel "
                              "rank)");
  if (spec.workload == Workload::kTraining) {
    return absl::StrCat("mixture of experts, dropless routing ", balance, ": each of ", E,
                        " experts", per_rank, " runs ", d.expert_tokens, " rows, its share of the ",
                        d.tokens, " tokens x top ", k,
                        e > 1 ? absl::StrCat(" x ", e, " expert-parallel ranks") : "",
                        " routed copies");
  }
  return absl::StrCat(
      "mixture of experts, dropless routing ", balance, ": an expert runs only for the tokens "
      "routed to it; this step's ", d.tokens, " token(s) x top ", k, " touch ", d.experts_run,
      " of ", d.experts_per_rank, " experts per MoE layer", e > 1 ? " and rank" : "",
      " (E*(1 - (1 - k/E)^T) under uniform routing, rounded), only their weights read, ",
      d.expert_tokens == d.expert_rows_total / d.experts_run
          ? absl::StrCat(d.expert_tokens, " row(s) each")
          : absl::StrCat(d.expert_tokens - 1, "-", d.expert_tokens, " rows each"));
}

std::vector<Gemm> BuildGemms(const ModelSpec& spec) {
  std::vector<Gemm> out;
  out.reserve(32);  // a layer's forward and backward GEMMs, the logits, an MoE's router
  const DerivedShape d = Derive(spec);
  const int64_t h = spec.hidden_size;
  GemmListBuilder b(spec, out);
  if (d.attention_layers > 0) {
    AttentionInputProjections(spec, d, b);
    AttentionCore(spec, d, b);
    // The output projection is row-parallel.
    b.Linear(kAttnProj, d.tokens, h, d.heads_per_rank * d.v_head_dim, d.attention_layers);
  }
  if (d.mamba_layers > 0) MambaGemms(spec, d, b);
  if (d.moe_layers > 0) ExpertMlpGemms(spec, d, b);
  if (d.dense_layers > 0) DenseMlpGemms(spec, d, b);
  // Logits: training needs every position; prefill and decode only the last one per sequence.
  const int64_t logit_rows =
      spec.workload == Workload::kTraining ? d.tokens : spec.micro_batch_size;
  b.Linear(kLogits, logit_rows, d.vocab_per_rank, h, 1);
  return out;
}

}  // namespace wavecrest
