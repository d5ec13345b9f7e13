#include "core/rules.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace wavecrest {
namespace {

// "name pass (K=80)" for every GEMM with a dimension equal to `value`; fused attention counts by
// its head dim (K) only, since its other dimensions are sequence lengths.
std::vector<std::string> GemmsWithDim(const std::vector<Gemm>& gemms, int64_t value,
                                      bool include_fused) {
  std::vector<std::string> out;
  for (const Gemm& g : gemms) {
    if (g.fused_attention && !include_fused) continue;
    std::vector<std::string> dims;
    if (!g.fused_attention && g.shape.m == value) dims.push_back(absl::StrCat("M=", value));
    if (!g.fused_attention && g.shape.n == value) dims.push_back(absl::StrCat("N=", value));
    if (g.shape.k == value) dims.push_back(absl::StrCat("K=", value));
    if (dims.empty()) continue;
    out.push_back(absl::StrCat(g.name, " ", PassName(g.pass), " (", absl::StrJoin(dims, ","), ")"));
  }
  return out;
}

// Elements of `dtype` in one mainloop K slice (CostModelParams::k_tile_bytes, 128 bytes).
int64_t KSlice(DType dtype) { return std::max<int64_t>(1, 128 / DTypeBytes(dtype)); }

// The paper's power-of-two rule for one dimension, priced by the evidence: a dimension that is not
// a multiple of 16 bytes forces narrow-load kernels (H100: about 1.46× slower); a reduction
// dimension that is not a multiple of the K slice wastes part of the mainloop; one that is only
// short of the power of two costs nothing measured.
void AddPow2Rule(std::vector<RuleViolation>& out, const std::vector<Gemm>& gemms, std::string id,
                 int rule, std::string label, int64_t value, bool include_fused, DType dtype,
                 bool is_reduction, absl::string_view note = "") {
  const int64_t p = LargestPow2Factor(value);
  if (p >= kRulePow2) return;
  RuleViolation v;
  v.id = std::move(id);
  v.paper_rule = rule;
  v.hurts = GemmsWithDim(gemms, value, include_fused);
  v.message = absl::StrCat(label, " = ", value, ": largest power-of-two factor ", p, " < ",
                           kRulePow2, note);
  const int64_t bytes = DTypeBytes(dtype);
  const int64_t slice = KSlice(dtype);
  const int64_t padded = (value + slice - 1) / slice * slice;
  if ((value * bytes) % 16 != 0) {
    v.priced = true;
    absl::StrAppend(&v.message, "; not a multiple of 16 bytes (", 16 / bytes, " ", DTypeName(dtype),
                    " elements): cuBLAS falls back to narrow-load kernels (measured about 1.46x "
                    "slower on H100)");
  } else if (is_reduction && static_cast<double>(value) < 0.95 * static_cast<double>(padded)) {
    v.priced = true;
    absl::StrAppend(&v.message, "; as a reduction it pads to ", padded, " in the mainloop's ",
                    slice, "-element K slices (", 100 * value / padded, "% of them do work)");
  } else {
    absl::StrAppend(&v.message,
                    "; 16-byte aligned, so no measured cost in large GEMMs (public H100 data); "
                    "the model charges only tile and wave quantization");
  }
  if (!v.hurts.empty()) absl::StrAppend(&v.message, "; hurts ", absl::StrJoin(v.hurts, ", "));
  out.push_back(std::move(v));
}

}  // namespace

std::vector<RuleViolation> CheckRules(const ModelSpec& spec, const std::vector<Gemm>& gemms) {
  std::vector<RuleViolation> out;
  const DerivedShape d = Derive(spec);
  const int64_t t = spec.tensor_parallel;

  // Rule 1: vocabulary divisible by 64, and by t (each rank gets v/t columns).
  if (spec.vocab_size % kRulePow2 != 0) {
    RuleViolation v;
    v.id = "vocab_multiple_of_64";
    v.paper_rule = 1;
    v.hurts = GemmsWithDim(gemms, d.vocab_per_rank, false);
    const int64_t padded = (spec.vocab_size + kRulePow2 * t - 1) / (kRulePow2 * t) * kRulePow2 * t;
    v.priced = (spec.vocab_size / t * DTypeBytes(spec.dtype)) % 16 != 0;
    v.message = absl::StrCat("v = ", spec.vocab_size,
                             ": not divisible by 64 (largest power-of-two "
                             "factor ",
                             LargestPow2Factor(spec.vocab_size), "); pad to ", padded);
    if (!v.hurts.empty()) absl::StrAppend(&v.message, "; hurts ", absl::StrJoin(v.hurts, ", "));
    out.push_back(std::move(v));
  }
  if (spec.vocab_size % t != 0) {
    RuleViolation v;
    v.id = "vocab_divisible_by_tp";
    v.paper_rule = 1;
    v.message = absl::StrCat(
        "v/t = ", spec.vocab_size, "/", t,
        " is not an integer: each rank's logits GEMM is padded to N = ", d.vocab_per_rank);
    out.push_back(std::move(v));
  }
  // Rule 3: b·s, h/a and h/t divisible by a large power of two.
  if (spec.workload != Workload::kDecode) {
    AddPow2Rule(out, gemms, "tokens_pow2", 3, "b·s", d.tokens, false, spec.dtype,
                spec.workload == Workload::kTraining);
  }
  const bool flash = IsFused(spec.attention);
  AddPow2Rule(out, gemms, "head_dim_pow2", 3,
              spec.head_dim * spec.num_attention_heads == spec.hidden_size ? "h/a" : "head_dim",
              spec.head_dim, true, spec.dtype, !flash,
              flash ? " (FlashAttention pads the head dim up to a multiple of 32)" : "");
  AddPow2Rule(out, gemms, "hidden_per_tp_pow2", 3, t == 1 ? "h" : "h/t", spec.hidden_size / t,
              false, spec.dtype, true);
  // Rule 6: the MLP width (SwiGLU especially: 8h/3 breaks every alignment).
  AddPow2Rule(
      out, gemms, "ffn_pow2", 6, t == 1 ? "f" : "f/t", d.ffn_per_rank, false, spec.dtype, true,
      spec.mlp == Mlp::kSwiglu ? " (search near 8h/3 for a width that is a multiple of 64)" : "");
  return out;
}

}  // namespace wavecrest
