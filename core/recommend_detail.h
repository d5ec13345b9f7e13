// What the files of the recommendation share and nothing else needs (core/recommend.h is the
// interface): the shape key, the refusal rules and the check every candidate passes.
//
//   core/recommend.cc              knobs, constraints, what a candidate holds, the rules it meets
//   core/candidate_generation.cc   the neighbourhood of a baseline (GenerateCandidates)
//   core/candidate_scoring.cc      a candidate's step time, its parts and their uncertainty
//   core/candidate_ranking.cc      the ranking (RankCandidates), the smaller change among equals
//   core/candidate_explanation.cc  the reasons shown beside a candidate
//   core/minimal_candidates.cc     what each of a candidate's changes accounts for
#ifndef WAVECREST_CORE_RECOMMEND_DETAIL_H_
#define WAVECREST_CORE_RECOMMEND_DETAIL_H_

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/string_view.h"
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

// A change in words: Arrow("h", 2560, 2304) is "h 2560 → 2304".
std::string Arrow(absl::string_view what, int64_t from, int64_t to);

// The refusal rule's name, words and the request field that loosens it; `tps` the degrees asked.
Refusal RefusalInfo(RefusalRule r, const std::string& tps);

// What CheckShape compares a shape with, computed once per baseline (normalized) and
// constraints: its parameter counts and what it holds (HeldProperties).
struct BaseFacts {
  BaseFacts(const ModelSpec& base, const RecommendConstraints& c);
  ParamCounts counts;
  int64_t head_dim_floor = 0;  // HeadDimFloor
  bool hold_group = true;      // the query heads per KV head
  bool hold_cache = true;      // the KV-cache bytes per token, within kKvCacheTolerance
  bool hold_total = true;      // a mixture of experts' total, within kMoeTotalTolerance
  double kv_bytes = 0;         // KvCacheBytesPerToken
};

// The first held property a normalized shape breaks against the normalized `base`: the head-dim
// floor, the KV group, the KV-cache bytes per token (the MoE total is CheckShape's, beside the
// budget); kRefusalRules when none.
RefusalRule CheckHeld(const ModelSpec& n, const ModelSpec& base, const BaseFacts& f);

// The first rule a normalized shape breaks as a candidate for `base` (kRefusalRules: none); its
// budget parameters in `params`.
RefusalRule CheckShape(const ModelSpec& n, const ModelSpec& base, const BaseFacts& f,
                       const std::vector<int64_t>& tps, const RecommendConstraints& c,
                       int64_t* params);

}  // namespace wavecrest::recommend_detail

#endif  // WAVECREST_CORE_RECOMMEND_DETAIL_H_
