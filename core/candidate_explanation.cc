// The reasons shown beside a candidate: each change with the paper's rule it serves and its own
// gain, the GEMMs that gained, the parameter change, the rules still broken (core/recommend.h,
// Explain).
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/recommend.h"
#include "core/recommend_detail.h"
#include "core/rules.h"
#include "core/sample_policies.h"
#include "core/timing_stats.h"

namespace wavecrest {

std::string recommend_detail::Arrow(absl::string_view what, int64_t from, int64_t to) {
  return absl::StrCat(what, " ", from, " → ", to);
}

namespace {

// What each change or coupled bundle accounts for (MinimizeCandidates): the candidate over
// itself without it, appended to the reason that names each change (each starts with the
// change's words); a bundle's figure goes on each of its parts' lines, naming the others.
void AnnotateGains(const CandidateScore& c, std::vector<std::string>& reasons) {
  for (const CandidateScore::KnobGain& g : c.knob_gains) {
    const std::vector<std::string> parts =
        g.parts.empty() ? std::vector<std::string>{g.change} : g.parts;
    for (const std::string& part : parts) {
      std::string note;
      std::vector<std::string> others;
      for (const std::string& o : g.parts) {
        if (o != part) others.push_back(o.substr(0, o.find(' ')));  // "h", "a", "L"
      }
      if (g.required) {
        note = absl::StrFormat(
            ": needed%s for the tensor-parallel degrees asked, which the baseline breaks; alone "
            "%.3f× ± %.3f against the baseline",
            others.empty() ? "" : absl::StrCat(" with ", absl::StrJoin(others, ", ")), g.gain,
            g.gain * g.sigma);
      } else if (g.parts.empty()) {
        note = absl::StrFormat(": this change %.3f× ± %.3f", g.gain, g.gain * g.sigma);
      } else {
        note = absl::StrFormat(": with %s, one bundle %.3f× ± %.3f (none can be undone alone)",
                               absl::StrJoin(others, ", "), g.gain, g.gain * g.sigma);
      }
      auto line = std::find_if(reasons.begin(), reasons.end(), [&](const std::string& r) {
        return absl::StartsWith(r, part);
      });
      // A change no line names (a width kept while h moved): a line of its own.
      if (line == reasons.end()) {
        reasons.push_back(part + note);
      } else {
        absl::StrAppend(&*line, note);
      }
    }
  }
}

// "h 4000 → 4096 (rule 3: h/t divisible by 64)".
std::string HiddenChange(const ModelSpec& b, const ModelSpec& s) {
  const int64_t t = s.tensor_parallel;
  std::string x = recommend_detail::Arrow("h", b.hidden_size, s.hidden_size);
  if (LargestPow2Factor(s.hidden_size / t) >= 64 && LargestPow2Factor(b.hidden_size / t) < 64) {
    absl::StrAppend(&x, " (rule 3: h/t divisible by 64)");
  }
  return x;
}

// "a 40 → 32: h/a 80 → 128 (rule 3: h/a divisible by 64; rule 7: fewer, larger heads)".
std::string HeadsChange(const ModelSpec& b, const ModelSpec& s) {
  std::string x = absl::StrCat("a ", b.num_attention_heads, " → ", s.num_attention_heads, ": h/a ",
                               b.head_dim, " → ", s.head_dim);
  std::vector<std::string> why;
  if (LargestPow2Factor(s.head_dim) >= 64 && LargestPow2Factor(b.head_dim) < 64) {
    why.push_back("rule 3: h/a divisible by 64");
  }
  if (s.head_dim > b.head_dim) why.push_back("rule 7: fewer, larger heads");
  if (!why.empty()) absl::StrAppend(&x, " (", absl::StrJoin(why, "; "), ")");
  return x;
}

// "f 11008 → 11264 (rule 6: f/t a multiple of 512, was 256)", with the shared experts' width.
std::string FfnChange(const ModelSpec& b, const ModelSpec& s) {
  const int64_t t = s.tensor_parallel;
  std::string x = recommend_detail::Arrow(s.num_experts > 0 ? "expert width f" : "f",
                                          b.ffn_hidden_size, s.ffn_hidden_size);
  const int64_t p1 = LargestPow2Factor(s.ffn_hidden_size / t);
  const int64_t p0 = LargestPow2Factor(b.ffn_hidden_size / t);
  if (p1 > p0) {
    absl::StrAppend(&x, " (rule 6: f/t a multiple of ", p1, ", was ", p0, ")");
  }
  // Whole shared experts (DeepSeek's, Llama 4's) follow the expert width.
  if (s.shared_expert_ffn_hidden_size != b.shared_expert_ffn_hidden_size) {
    absl::StrAppend(&x, ", shared expert width ", b.shared_expert_ffn_hidden_size, " → ",
                    s.shared_expert_ffn_hidden_size);
  }
  return x;
}

// "L 32 → 30 to stay within the parameter budget", with what moves with the layers: the
// local-attention layers (the same share), the dense ones.
std::string LayersChange(const ModelSpec& b, const ModelSpec& s) {
  std::string x = absl::StrCat(recommend_detail::Arrow("L", b.num_layers, s.num_layers),
                               " to stay within the parameter budget");
  if (s.sliding_window_layers != b.sliding_window_layers) {
    absl::StrAppend(&x, ", local-attention layers ", b.sliding_window_layers, " → ",
                    s.sliding_window_layers);
  }
  if (s.first_dense_layers != b.first_dense_layers) {
    absl::StrAppend(&x, ", first dense layers ", b.first_dense_layers, " → ",
                    s.first_dense_layers);
  }
  return x;
}

// One line per knob the candidate changes, each naming the paper's rule it serves.
std::vector<std::string> ChangeLines(const ModelSpec& b, const ModelSpec& s) {
  std::vector<std::string> r;
  if (s.hidden_size != b.hidden_size) r.push_back(HiddenChange(b, s));
  if (s.num_attention_heads != b.num_attention_heads || s.head_dim != b.head_dim) {
    r.push_back(HeadsChange(b, s));
  }
  const bool both_mha = b.num_kv_heads == b.num_attention_heads &&
                        s.num_kv_heads == s.num_attention_heads;  // KV heads follow the heads
  if (s.num_kv_heads != b.num_kv_heads && !both_mha) {
    r.push_back(recommend_detail::Arrow("a_kv", b.num_kv_heads, s.num_kv_heads));
  }
  if (s.num_experts != b.num_experts || s.experts_per_token != b.experts_per_token) {
    r.push_back(
        absl::StrCat("experts ", b.num_experts, " → ", s.num_experts, ", top-", b.experts_per_token,
                     " → top-", s.experts_per_token,
                     s.num_experts > b.num_experts ? " (finer experts" : " (coarser experts",
                     ", about the same active parameters)"));
  }
  if (s.ffn_hidden_size != b.ffn_hidden_size) r.push_back(FfnChange(b, s));
  if (s.vocab_size != b.vocab_size) {
    r.push_back(absl::StrCat(recommend_detail::Arrow("v", b.vocab_size, s.vocab_size),
                             " (rule 1: padded to a multiple of ", LargestPow2Factor(s.vocab_size),
                             ")"));
  }
  if (s.num_layers != b.num_layers) r.push_back(LayersChange(b, s));
  return r;
}

}  // namespace

std::vector<std::string> Explain(const CandidateScore& base, const CandidateScore& c) {
  const ModelSpec& s = c.spec;
  std::vector<std::string> r = ChangeLines(base.spec, s);
  AnnotateGains(c, r);
  // Which GEMMs gained or lost (step time of each GEMM name, all passes).
  std::map<std::string, double> bt(base.time_by_gemm.begin(), base.time_by_gemm.end());
  std::vector<std::string> gains;
  // By name: the scores keep them in the order the GEMMs were built (sorting every candidate's
  // cost more than a wide search's explanations).
  std::vector<std::pair<std::string, double>> by_name = c.time_by_gemm;
  std::sort(by_name.begin(), by_name.end());
  for (const auto& [name, time] : by_name) {
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
  if (std::abs(c.param_change) >= 0.0005) {
    if (s.workload == Workload::kDecode) {
      r.push_back(absl::StrFormat(
          "%+.1f%% parameters; the speed-up compares decode tokens/s (%.0f vs %.0f per GPU)",
          100 * c.param_change, c.tokens_per_s_per_gpu, base.tokens_per_s_per_gpu));
    } else {
      r.push_back(absl::StrFormat(
          "%+.1f%% parameters; the speed-up compares model FLOP/s at equal work (MFU %.1f%% vs "
          "%.1f%%)",
          100 * c.param_change, 100 * c.mfu, 100 * base.mfu));
    }
  }
  for (const RuleViolation& v : CheckRules(s, BuildGemms(s))) {
    r.push_back(absl::StrCat("still breaks rule ", v.paper_rule, ": ", v.message));
  }
  const double ew = base.elementwise_time_s > 0 && c.elementwise_time_s > 0
                        ? base.elementwise_time_s / c.elementwise_time_s
                        : 1;
  if (std::abs(ew - 1) >= 0.02) {
    r.push_back(absl::StrFormat("elementwise %.2f× (estimated)", ew));
  }
  return r;
}

}  // namespace wavecrest
