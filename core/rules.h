// The paper's shape rules (paper notes §3), checked against a spec and its GEMM list.
#ifndef WAVECREST_CORE_RULES_H_
#define WAVECREST_CORE_RULES_H_

#include <string>
#include <vector>

#include "core/gemm.h"
#include "core/model_spec.h"

namespace wavecrest {

// The power of two the paper asks dimensions to be divisible by.
inline constexpr int64_t kRulePow2 = 64;

struct RuleViolation {
  std::string id;       // stable identifier: "vocab_multiple_of_64", "head_dim_pow2", ...
  int paper_rule = 0;   // the rule's number in the paper's list (paper notes §3)
  std::string message;  // "h/a = 80: largest power-of-two factor 16 < 64; hurts attn_score ..."
  std::vector<std::string> hurts;  // "attn_score forward (K=80)", one per GEMM and pass
  // The cost model charges time for it (see the message for the evidence); false: the paper's
  // rule, which measurements do not price for this case.
  bool priced = false;
};

// Every rule `spec` (normalized) breaks, with the GEMMs of `gemms` each one hurts.
std::vector<RuleViolation> CheckRules(const ModelSpec& spec, const std::vector<Gemm>& gemms);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_RULES_H_
