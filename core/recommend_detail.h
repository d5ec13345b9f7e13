// What the files of the recommendation share and nothing else needs (core/recommend.h is the
// interface): the shape key, the refusal rules and the check every candidate passes.
//
//   core/recommend.cc              knobs, constraints and the rules a candidate meets; the ranking
//   core/candidate_generation.cc   the neighbourhood of a baseline (GenerateCandidates)
//   core/candidate_scoring.cc      a candidate's step time, its parts and their uncertainty
//   core/candidate_explanation.cc  the reasons shown beside a candidate
#ifndef WAVECREST_CORE_RECOMMEND_DETAIL_H_
#define WAVECREST_CORE_RECOMMEND_DETAIL_H_

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/model_spec.h"
#include "core/model_stats.h"
#include "core/recommend.h"

namespace wavecrest::recommend_detail {

inline int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

using SpecKey =
    std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;
inline SpecKey KeyOf(const ModelSpec& s) {
  return {s.hidden_size, s.num_attention_heads, s.num_kv_heads,
          s.head_dim,    s.ffn_hidden_size,     s.vocab_size,
          s.num_layers,  s.num_experts,         s.experts_per_token};
}

// KV heads shard over t ranks: divisible by t, or (with replication) fewer than t and dividing it.
inline bool ValidTpForKv(int64_t kv, int64_t t, bool replication) {
  return kv % t == 0 || (replication && t % kv == 0);
}

// The rules of GenerateCandidates, in the order they are checked and reported.
enum RefusalRule {
  kHeadDimRange,
  kHeadDimMultiple,
  kHeadDimFloor,
  kHeadCount,
  kHeadsByTp,
  kKvHeadsByTp,
  kHiddenByTp,
  kFfnByTp,
  kLayersByPp,
  kKvGroup,
  kKvCache,
  kParamBudget,
  kMoeTotal,
  kRefusalRules
};

// The refusal rule's name, words and the request field that loosens it; `tps` the degrees asked.
Refusal RefusalInfo(RefusalRule r, const std::string& tps);

// The first held property (HeldProperties) a normalized shape breaks against the normalized
// `base`: the head-dim floor, the KV group, the KV-cache bytes per token (the MoE total is
// CheckShape's, beside the budget); kRefusalRules when none.
RefusalRule CheckHeld(const ModelSpec& n, const ModelSpec& base, const RecommendConstraints& c);

// The first rule a normalized shape breaks as a candidate for `base` (kRefusalRules: none); its
// budget parameters in `params`.
RefusalRule CheckShape(const ModelSpec& n, const ModelSpec& base, const ParamCounts& base_counts,
                       const std::vector<int64_t>& tps, const RecommendConstraints& c,
                       int64_t* params);

}  // namespace wavecrest::recommend_detail

#endif  // WAVECREST_CORE_RECOMMEND_DETAIL_H_
