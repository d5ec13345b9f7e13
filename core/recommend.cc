#include "core/recommend.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace wavecrest {

absl::string_view KnobName(Knob k) {
  switch (k) {
    case Knob::kHeads:
      return "heads";
    case Knob::kKvHeads:
      return "kv_heads";
    case Knob::kHidden:
      return "hidden";
    case Knob::kFfn:
      return "ffn";
    case Knob::kVocab:
      return "vocab";
    case Knob::kLayers:
      return "layers";
  }
  return "?";
}

absl::StatusOr<Knob> ParseKnob(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  for (Knob k :
       {Knob::kHeads, Knob::kKvHeads, Knob::kHidden, Knob::kFfn, Knob::kVocab, Knob::kLayers}) {
    if (n == KnobName(k)) return k;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "vary: unknown knob \"", name, "\"; allowed: heads, kv_heads, hidden, ffn, vocab, layers"));
}

std::vector<FieldViolation> ValidateConstraints(const RecommendConstraints& c) {
  std::vector<FieldViolation> v;
  if (!(c.param_tolerance >= 0 && c.param_tolerance <= 0.5)) {
    v.push_back({"param_tolerance", absl::StrCat("must be in [0, 0.5]; got ", c.param_tolerance)});
  }
  for (size_t i = 0; i < c.allowed_head_dims.size(); ++i) {
    const int64_t d = c.allowed_head_dims[i];
    if (d < 8 || d > 1024) {
      v.push_back({absl::StrCat("allowed_head_dims[", i, "]"),
                   absl::StrCat("must be in [8, 1024]; got ", d)});
    }
  }
  if (c.min_heads < 0 || c.min_heads > kMaxHeads) {
    v.push_back({"min_heads", absl::StrCat("must be in [0, ", kMaxHeads, "]; got ", c.min_heads)});
  }
  if (c.max_heads < 0 || c.max_heads > kMaxHeads) {
    v.push_back({"max_heads", absl::StrCat("must be in [0, ", kMaxHeads, "]; got ", c.max_heads)});
  } else if (c.max_heads > 0 && c.min_heads > c.max_heads) {
    v.push_back({"max_heads", absl::StrCat("must be at least min_heads (", c.min_heads, "); got ",
                                           c.max_heads)});
  }
  if (c.max_candidates < 1 || c.max_candidates > kMaxMaxCandidates) {
    v.push_back({"max_candidates",
                 absl::StrCat("must be in [1, ", kMaxMaxCandidates, "]; got ", c.max_candidates)});
  }
  if (c.top < 1 || c.top > 1000) {
    v.push_back({"top", absl::StrCat("must be in [1, 1000]; got ", c.top)});
  }
  if (c.keep_layers && c.vary.count(Knob::kLayers)) {
    v.push_back({"keep_layers", "conflicts with vary containing layers"});
  }
  return v;
}

std::set<Knob> EffectiveKnobs(const RecommendConstraints& c) {
  std::set<Knob> k = c.vary;
  if (k.empty()) {
    k = {Knob::kHeads, Knob::kHidden, Knob::kFfn, Knob::kVocab};
    if (!c.keep_layers) k.insert(Knob::kLayers);
  }
  return k;
}

namespace {

int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

using SpecKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;
SpecKey KeyOf(const ModelSpec& s) {
  return {s.hidden_size,     s.num_attention_heads, s.num_kv_heads, s.head_dim,
          s.ffn_hidden_size, s.vocab_size,          s.num_layers};
}

bool ValidTpForKv(int64_t kv, int64_t t) { return kv % t == 0 || t % kv == 0; }

}  // namespace

std::vector<ModelSpec> GenerateCandidates(const ModelSpec& base, const RecommendConstraints& c,
                                          int64_t* generated) {
  const std::set<Knob> knobs = EffectiveKnobs(c);
  auto has = [&](Knob k) { return knobs.count(k) > 0; };
  const int64_t t = base.tensor_parallel;
  const int64_t h0 = base.hidden_size;
  const int64_t base_params = CountParams(base).total_params;
  const bool explicit_head_dim = base.head_dim * base.num_attention_heads != h0;
  const bool layers_move = has(Knob::kLayers) && !c.keep_layers;
  *generated = 0;

  // hidden_size: the baseline, and multiples of 64 (and of t) in a window.
  std::vector<int64_t> hiddens = {h0};
  if (has(Knob::kHidden)) {
    const double window = layers_move ? kHiddenWindow : c.param_tolerance / 2 + 0.01;
    const int64_t lo = static_cast<int64_t>(std::floor(h0 * (1 - window)));
    const int64_t hi = static_cast<int64_t>(std::ceil(h0 * (1 + window)));
    const int64_t step = std::lcm<int64_t>(64, t);
    for (int64_t h = RoundUp(std::max<int64_t>(lo, step), step); h <= hi; h += step) {
      if (h != h0 && h <= kMaxHiddenSize) hiddens.push_back(h);
    }
  }

  std::vector<ModelSpec> out;
  std::map<SpecKey, bool> seen;
  auto consider = [&](ModelSpec s) {
    ++*generated;
    absl::StatusOr<ModelSpec> n = NormalizeSpec(s);
    if (!n.ok()) return;
    const int64_t p = CountParams(*n).total_params;
    const double change = static_cast<double>(p - base_params) / static_cast<double>(base_params);
    if (std::abs(change) > c.param_tolerance + 1e-12) return;
    if (seen.emplace(KeyOf(*n), true).second) out.push_back(*n);
  };
  consider(base);  // the baseline is always candidate 0

  for (int64_t h : hiddens) {
    // Heads (and head dim) for this hidden size.
    std::vector<std::pair<int64_t, int64_t>> head_options;  // (a, d)
    if (explicit_head_dim) {
      head_options.push_back({base.num_attention_heads, base.head_dim});
    } else if (has(Knob::kHeads)) {
      for (int64_t d = 8; d <= std::min<int64_t>(h, 1024); ++d) {
        if (h % d != 0) continue;
        const int64_t a = h / d;
        const bool allowed = c.allowed_head_dims.empty()
                                 ? (d >= kDefaultMinHeadDim && d <= kDefaultMaxHeadDim)
                                 : std::find(c.allowed_head_dims.begin(), c.allowed_head_dims.end(),
                                             d) != c.allowed_head_dims.end();
        const bool base_shape = h == h0 && a == base.num_attention_heads;
        if (!allowed && !base_shape) continue;
        if (a % t != 0 || a < std::max<int64_t>(1, c.min_heads)) continue;
        if (c.max_heads > 0 && a > c.max_heads) continue;
        head_options.push_back({a, d});
      }
    } else if (h % base.num_attention_heads == 0) {
      head_options.push_back({base.num_attention_heads, h / base.num_attention_heads});
    }

    // MLP width targets scale with h.
    const double f_target = static_cast<double>(base.ffn_hidden_size) * h / h0;
    std::vector<int64_t> ffns;
    if (h == h0) ffns.push_back(base.ffn_hidden_size);
    const int64_t f_round = static_cast<int64_t>(std::llround(f_target / t)) * t;
    if (f_round != base.ffn_hidden_size || h != h0) ffns.push_back(f_round);
    if (has(Knob::kFfn)) {
      const double span = base.mlp == Mlp::kSwiglu ? 0.03 : 0.01;
      const int64_t step = std::lcm<int64_t>(64, t);
      for (int64_t f = RoundUp(static_cast<int64_t>(f_target * (1 - span)), step);
           f <= static_cast<int64_t>(f_target * (1 + span)); f += step) {
        if (std::find(ffns.begin(), ffns.end(), f) == ffns.end()) ffns.push_back(f);
      }
    }

    std::vector<int64_t> vocabs = {base.vocab_size};
    if (has(Knob::kVocab)) {
      for (int64_t m : {64 * t, 128 * t}) {
        const int64_t v = RoundUp(base.vocab_size, m);
        if (std::find(vocabs.begin(), vocabs.end(), v) == vocabs.end()) vocabs.push_back(v);
      }
    }

    for (auto [a, d] : head_options) {
      std::vector<int64_t> kvs;
      if (has(Knob::kKvHeads)) {
        for (int64_t kv = 1; kv <= a; ++kv) {
          if (a % kv == 0 && ValidTpForKv(kv, t)) kvs.push_back(kv);
        }
      } else if (base.num_kv_heads == base.num_attention_heads) {
        kvs.push_back(a);
      } else if (base.num_attention_heads % base.num_kv_heads == 0 &&
                 a % (base.num_attention_heads / base.num_kv_heads) == 0) {
        kvs.push_back(a / (base.num_attention_heads / base.num_kv_heads));  // same group size
      } else if (a % base.num_kv_heads == 0) {
        kvs.push_back(base.num_kv_heads);
      }
      for (int64_t kv : kvs) {
        for (int64_t f : ffns) {
          for (int64_t v : vocabs) {
            ModelSpec s = base;
            s.hidden_size = h;
            s.num_attention_heads = a;
            s.head_dim = d;
            s.num_kv_heads = kv;
            s.ffn_hidden_size = f;
            s.vocab_size = v;
            std::vector<int64_t> layers = {base.num_layers};
            if (layers_move) {
              // Solve total(L) = base_params for L with everything else fixed.
              ModelSpec one = s;
              one.num_layers = 1;
              const ParamCounts pc = CountParams(one);
              const double fixed = static_cast<double>(pc.total_params - pc.per_layer_params);
              const double exact = (static_cast<double>(base_params) - fixed) /
                                   static_cast<double>(pc.per_layer_params);
              for (int64_t L : {static_cast<int64_t>(std::floor(exact)),
                                static_cast<int64_t>(std::ceil(exact))}) {
                if (L >= 1 && L <= kMaxLayers &&
                    std::find(layers.begin(), layers.end(), L) == layers.end()) {
                  layers.push_back(L);
                }
              }
            }
            for (int64_t L : layers) {
              s.num_layers = L;
              consider(s);
            }
          }
        }
      }
    }
  }

  // Deterministic cap: the baseline, then the smallest parameter changes, ties by shape.
  if (static_cast<int64_t>(out.size()) > c.max_candidates) {
    auto change = [&](const ModelSpec& s) {
      return std::abs(static_cast<double>(CountParams(s).total_params - base_params));
    };
    std::sort(out.begin() + 1, out.end(), [&](const ModelSpec& x, const ModelSpec& y) {
      const double cx = change(x), cy = change(y);
      if (cx != cy) return cx < cy;
      return KeyOf(x) < KeyOf(y);
    });
    out.resize(static_cast<size_t>(std::max<int64_t>(1, c.max_candidates)));
  }
  return out;
}

const GemmTime& ScoreCache::Get(const GemmKey& key) {
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
  return memo_.emplace(key, fn_(key)).first->second;
}

CandidateScore ScoreCandidate(const ModelSpec& spec, const GpuSpec& gpu, ScoreCache& times,
                              int64_t base_params) {
  CandidateScore c;
  c.spec = spec;
  c.params = CountParams(spec);
  c.param_change =
      static_cast<double>(c.params.total_params - base_params) / static_cast<double>(base_params);
  const std::vector<Gemm> gemms = BuildGemms(spec);
  double var = 0;
  bool all_measured = true;
  std::map<std::string, double> by_name;
  for (const Gemm& g : gemms) {
    double t = 0;
    if (g.fused_attention) {
      t = PredictFusedAttention(gpu, g).time_s;
    } else {
      const GemmTime& gt = times.Get(g.key());
      t = gt.time_s;
      all_measured &= gt.measured;
      const double sigma = static_cast<double>(g.count) * gt.time_s * gt.relative_spread / 2;
      var += sigma * sigma;
    }
    const double step = t * static_cast<double>(g.count);
    c.gemm_time_s += step;
    by_name[g.name] += step;
  }
  c.time_by_gemm.assign(by_name.begin(), by_name.end());
  c.elementwise_time_s = EstimateElementwise(spec, gpu).time_s;
  c.step_time_s = c.gemm_time_s + c.elementwise_time_s;
  c.step_sigma_s = std::sqrt(var);
  c.all_measured = all_measured;
  const FlopCounts f = CountFlops(spec, gemms);
  c.tokens_per_s_per_gpu = static_cast<double>(f.tokens_per_step) / c.step_time_s /
                           static_cast<double>(spec.tensor_parallel);
  c.mfu = f.step_flops / (c.step_time_s * gpu.PeakFlops(spec.dtype));
  return c;
}

namespace {

std::string Arrow(absl::string_view what, int64_t from, int64_t to) {
  return absl::StrCat(what, " ", from, " → ", to);
}

}  // namespace

std::vector<std::string> Explain(const CandidateScore& base, const CandidateScore& c) {
  std::vector<std::string> r;
  const ModelSpec& b = base.spec;
  const ModelSpec& s = c.spec;
  const int64_t t = s.tensor_parallel;
  if (s.hidden_size != b.hidden_size) {
    std::string x = Arrow("h", b.hidden_size, s.hidden_size);
    if (LargestPow2Factor(s.hidden_size / t) >= 64 && LargestPow2Factor(b.hidden_size / t) < 64) {
      absl::StrAppend(&x, " (rule 3: h/t divisible by 64)");
    }
    r.push_back(x);
  }
  if (s.num_attention_heads != b.num_attention_heads || s.head_dim != b.head_dim) {
    std::string x = absl::StrCat("a ", b.num_attention_heads, " → ", s.num_attention_heads,
                                 ": h/a ", b.head_dim, " → ", s.head_dim);
    std::vector<std::string> why;
    if (LargestPow2Factor(s.head_dim) >= 64 && LargestPow2Factor(b.head_dim) < 64) {
      why.push_back("rule 3: h/a divisible by 64");
    }
    if (s.head_dim > b.head_dim) why.push_back("rule 7: fewer, larger heads");
    if (!why.empty()) absl::StrAppend(&x, " (", absl::StrJoin(why, "; "), ")");
    r.push_back(x);
  }
  const bool both_mha = b.num_kv_heads == b.num_attention_heads &&
                        s.num_kv_heads == s.num_attention_heads;  // KV heads follow the heads
  if (s.num_kv_heads != b.num_kv_heads && !both_mha) {
    r.push_back(Arrow("a_kv", b.num_kv_heads, s.num_kv_heads));
  }
  if (s.ffn_hidden_size != b.ffn_hidden_size) {
    std::string x = Arrow("f", b.ffn_hidden_size, s.ffn_hidden_size);
    const int64_t p1 = LargestPow2Factor(s.ffn_hidden_size / t);
    const int64_t p0 = LargestPow2Factor(b.ffn_hidden_size / t);
    if (p1 > p0) {
      absl::StrAppend(&x, " (rule 6: f/t a multiple of ", p1, ", was ", p0, ")");
    }
    r.push_back(x);
  }
  if (s.vocab_size != b.vocab_size) {
    r.push_back(absl::StrCat(Arrow("v", b.vocab_size, s.vocab_size),
                             " (rule 1: padded to a multiple of ", LargestPow2Factor(s.vocab_size),
                             ")"));
  }
  if (s.num_layers != b.num_layers) {
    r.push_back(absl::StrCat(Arrow("L", b.num_layers, s.num_layers),
                             " to stay within the parameter budget"));
  }
  // Which GEMMs gained or lost (step time of each GEMM name, all passes).
  std::map<std::string, double> bt(base.time_by_gemm.begin(), base.time_by_gemm.end());
  std::vector<std::string> gains;
  for (const auto& [name, time] : c.time_by_gemm) {
    auto it = bt.find(name);
    if (it == bt.end() || time <= 0) continue;
    const double ratio = it->second / time;
    if (std::abs(ratio - 1) < 0.02) continue;
    gains.push_back(absl::StrFormat("%s %.2f×", name, ratio));
  }
  if (!gains.empty()) {
    r.push_back(absl::StrCat(absl::StrJoin(gains, ", "),
                             base.all_measured && c.all_measured ? " (measured)" : " (predicted)"));
  }
  if (c.param_change < -0.005) {
    r.push_back(absl::StrFormat("%.1f%% fewer parameters account for part of the gain",
                                -100 * c.param_change));
  }
  const double ew = base.elementwise_time_s > 0 && c.elementwise_time_s > 0
                        ? base.elementwise_time_s / c.elementwise_time_s
                        : 1;
  if (std::abs(ew - 1) >= 0.02) {
    r.push_back(absl::StrFormat("elementwise %.2f× (estimated)", ew));
  }
  return r;
}

void RankCandidates(std::vector<CandidateScore>& scores) {
  const CandidateScore* base = nullptr;
  for (const auto& s : scores) {
    if (s.baseline) base = &s;
  }
  const CandidateScore base_copy = base ? *base : CandidateScore();
  // Fields a candidate changes against the baseline: among equal times, the smaller change wins.
  auto changed = [&](const ModelSpec& s) {
    const SpecKey a = KeyOf(s), b = KeyOf(base_copy.spec);
    return (std::get<0>(a) != std::get<0>(b)) + (std::get<1>(a) != std::get<1>(b)) +
           (std::get<2>(a) != std::get<2>(b)) + (std::get<4>(a) != std::get<4>(b)) +
           (std::get<5>(a) != std::get<5>(b)) + (std::get<6>(a) != std::get<6>(b));
  };
  std::sort(scores.begin(), scores.end(), [&](const CandidateScore& x, const CandidateScore& y) {
    const double tol = 1e-9 * std::max(x.step_time_s, y.step_time_s);
    if (std::abs(x.step_time_s - y.step_time_s) > tol) return x.step_time_s < y.step_time_s;
    if (std::abs(x.param_change) != std::abs(y.param_change)) {
      return std::abs(x.param_change) < std::abs(y.param_change);
    }
    if (base && changed(x.spec) != changed(y.spec)) return changed(x.spec) < changed(y.spec);
    return KeyOf(x.spec) < KeyOf(y.spec);
  });
  if (!base) return;
  for (CandidateScore& s : scores) {
    s.speedup = base_copy.step_time_s / s.step_time_s;
    const double rb = base_copy.step_sigma_s / base_copy.step_time_s;
    const double rc = s.step_sigma_s / s.step_time_s;
    s.speedup_uncertainty = s.baseline ? 0 : s.speedup * std::sqrt(rb * rb + rc * rc);
    if (!s.baseline) s.reasons = Explain(base_copy, s);
  }
}

}  // namespace wavecrest
