#include "core/layout_search.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/analysis.h"
#include "core/units.h"

namespace wavecrest {
namespace {

std::vector<int64_t> PowersOfTwoUpTo(int64_t limit) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= limit; v *= 2) out.push_back(v);
  return out;
}

std::vector<int64_t> DivisorsUpTo(int64_t n, int64_t limit) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= std::min(n, limit); ++v) {
    if (n % v == 0) out.push_back(v);
  }
  return out;
}

// The degrees tried for one dimension: the held value alone, or `options`.
std::vector<int64_t> Tried(bool held, int64_t value, std::vector<int64_t> options) {
  if (held) return {std::max<int64_t>(value, 1)};
  return options;
}

struct Degrees {
  int64_t t = 1, p = 1, c = 1, e = 1;
};

std::vector<Degrees> CandidateDegrees(const ModelSpec& s, const GpuSpec& gpu, int64_t gpus,
                                      const HeldDegrees& held) {
  std::vector<Degrees> out;
  const int64_t domain = std::max<int64_t>(gpu.link.domain_gpus, 1);
  const bool local = s.sliding_window > 0;
  for (int64_t t : Tried(held.tensor, s.tensor_parallel, PowersOfTwoUpTo(domain))) {
    if (gpus % t != 0) continue;
    for (int64_t p : Tried(held.pipeline, s.pipeline_parallel,
                           DivisorsUpTo(gpus / t, s.num_layers / kMinStageLayers))) {
      if (gpus % (t * p) != 0 || !SplitLayers(s.num_layers, p).valid) continue;
      const int64_t cmax = local ? 1 : std::max<int64_t>(1, s.seq_length / kMinContextTokens);
      for (int64_t c : Tried(held.context, s.context_parallel, PowersOfTwoUpTo(cmax))) {
        if (gpus % (t * p * c) != 0) continue;
        const int64_t d = gpus / (t * p * c);
        std::vector<int64_t> experts = {1};
        // The ranks an expert-parallel group is drawn from (ExpertPool): d·c, times t with whole
        // experts (expert_tensor_parallel 1).
        if (s.num_experts > 0) {
          experts = DivisorsUpTo(s.num_experts, d * c * (s.expert_tensor_parallel == 1 ? t : 1));
        }
        for (int64_t e : Tried(held.expert, s.expert_parallel, experts)) {
          out.push_back({t, p, c, e});
        }
      }
    }
  }
  return out;
}

// One combination planned: its micro-batch (when the spec leaves it to the plan) and layout.
std::optional<StepBreakdown> PlanDegrees(const ModelSpec& spec, const GpuSpec& gpu,
                                         const RunConfig& run, const Degrees& g,
                                         PredictionMemo* memo) {
  ModelSpec s = spec;
  s.tensor_parallel = g.t;
  s.pipeline_parallel = g.p;
  s.context_parallel = g.c;
  s.expert_parallel = g.e;
  s.data_parallel = 1;  // the run's GPUs decide (CheckRun)
  ModelSpec checked = s;
  if (checked.micro_batch_size == 0) checked.micro_batch_size = kDefaultMicroBatch;
  if (!Validate(checked).empty()) return std::nullopt;
  if (s.micro_batch_size == 0) {
    PlannedMicroBatch planned = PlanMicroBatch(s, gpu, run, memo);
    if (!planned.step) return std::nullopt;
    planned.step->assumptions.insert(planned.step->assumptions.begin(), planned.assumption);
    return planned.step;
  }
  absl::StatusOr<Analysis> a = Analyze(s, gpu, memo);
  if (!a.ok()) return std::nullopt;
  absl::StatusOr<StepBreakdown> step = PlanLayout(*a, run);
  if (!step.ok()) return std::nullopt;
  return *std::move(step);
}

}  // namespace

std::string HeldWords(const HeldDegrees& held, const ModelSpec& s) {
  std::vector<std::string> out;
  if (held.tensor) out.push_back(absl::StrCat("TP ", s.tensor_parallel));
  if (held.pipeline) out.push_back(absl::StrCat("PP ", s.pipeline_parallel));
  if (held.context) out.push_back(absl::StrCat("CP ", s.context_parallel));
  if (held.expert && s.num_experts > 0) out.push_back(absl::StrCat("EP ", s.expert_parallel));
  return out.empty() ? "" : absl::StrCat(" (held as given: ", absl::StrJoin(out, ", "), ")");
}

double ExpectedStepS(const StepBreakdown& b) {
  return b.step_s * (1 + 0.5 * (b.band_p10 + b.band_p90));
}

HeldDegrees HeldOf(const ModelSpec& requested, bool hold_all) {
  HeldDegrees h;
  h.tensor = hold_all || requested.tensor_parallel > 1;
  h.pipeline = hold_all || requested.pipeline_parallel > 1;
  h.context = hold_all || requested.context_parallel > 1;
  h.expert = hold_all || requested.expert_parallel > 1;
  return h;
}

std::string DegreesName(const StepBreakdown& b) {
  std::string out = absl::StrCat("TP ", b.tensor_parallel, " × PP ", b.pipeline_parallel);
  if (b.context_parallel > 1) absl::StrAppend(&out, " × CP ", b.context_parallel);
  absl::StrAppend(&out, " × DP ", b.data_parallel);
  if (b.expert_parallel > 1) absl::StrAppend(&out, ", EP ", b.expert_parallel);
  return out;
}

std::string WhyLoses(const StepBreakdown& loser, const StepBreakdown& winner) {
  if (!loser.memory.fits) {
    return absl::StrFormat("does not fit: %.1f GiB of %.0f", loser.memory.total_bytes / kGiB,
                           loser.memory.capacity_bytes / kGiB);
  }
  struct Part {
    const char* name;
    double delta;
  };
  std::vector<Part> parts = {
      {"compute", loser.compute_s - winner.compute_s},
      {"recomputation", loser.recompute_s - winner.recompute_s},
      {"TP communication", loser.tp_comm_s - winner.tp_comm_s},
      {"EP all-to-all", loser.ep_comm_s - winner.ep_comm_s},
      {"MoE host waits", loser.moe_host_s - winner.moe_host_s},
      {"CP communication", loser.cp_comm_s - winner.cp_comm_s},
      {"activation offload", loser.offload_s - winner.offload_s},
      {"pipeline bubble", loser.pp_bubble_s - winner.pp_bubble_s},
      {"pipeline sends", loser.pp_comm_s - winner.pp_comm_s},
      {"DP communication", loser.dp_comm_s - winner.dp_comm_s},
      {"optimizer", loser.optimizer_s - winner.optimizer_s},
  };
  std::sort(parts.begin(), parts.end(),
            [](const Part& a, const Part& b) { return a.delta > b.delta; });
  std::vector<std::string> words;
  double listed = 0;
  for (size_t i = 0; i < parts.size() && words.size() < 2; ++i) {
    if (parts[i].delta <= 1e-3 * winner.step_s) break;
    words.push_back(absl::StrFormat("%s %+.3g s", parts[i].name, parts[i].delta));
    listed += parts[i].delta;
  }
  // The part that shrank most, when it did by as much: the parts that grew do not add up to the
  // difference without it.
  if (!words.empty() && parts.back().delta < -1e-3 * winner.step_s) {
    words.push_back(absl::StrFormat("%s %+.3g s", parts.back().name, parts.back().delta));
    listed += parts.back().delta;
  }
  // The rest, so that the parts named add up to the difference.
  const double rest = (loser.step_s - winner.step_s) - listed;
  if (!words.empty() &&
      std::fabs(rest) > std::max(1e-3 * winner.step_s,
                                 0.05 * std::fabs(loser.step_s - winner.step_s))) {
    words.push_back(absl::StrFormat("the other parts %+.3g s", rest));
  }
  const double slower = loser.step_s / winner.step_s - 1;
  std::string out = absl::StrFormat("%+.1f%% step time%s%s", 100 * slower,
                                    words.empty() || slower < 0 ? "" : ": ",
                                    slower < 0 ? "" : absl::StrJoin(words, ", "));
  if (loser.band_kind != winner.band_kind) {
    absl::StrAppendFormat(&out,
                          "; %s runs measure %+.1f%% off their predictions at the band's "
                          "midpoint, %s runs %+.1f%%: %+.1f%% once each is moved by its own",
                          loser.band_kind, 50 * (loser.band_p10 + loser.band_p90),
                          winner.band_kind, 50 * (winner.band_p10 + winner.band_p90),
                          100 * (ExpectedStepS(loser) / ExpectedStepS(winner) - 1));
  }
  return out;
}

namespace {

// The request's own degrees and flags priced as given, when the estimate puts them past the
// usable share of the GPU but within it and they would beat the search's `best`: the plan says so
// (OverMarginNote) rather than passing over a layout like those published runs that ran there.
std::string GivenDegreesNote(const ModelSpec& spec, const GpuSpec& gpu, const RunConfig& run,
                             const StepBreakdown& best, PredictionMemo* memo) {
  if (spec.micro_batch_size == 0) return "";  // the plan's to choose: no layout as given
  ModelSpec s = spec;
  s.data_parallel = 1;  // the run's GPUs decide (CheckRun)
  RunConfig as_given = run;
  as_given.plan = false;
  absl::StatusOr<Analysis> a = Analyze(s, gpu, memo);
  if (!a.ok()) return "";
  absl::StatusOr<StepBreakdown> given = PlanStep(*a, as_given);
  if (!given.ok()) return "";
  return OverMarginNote(*given, best, absl::StrCat(DegreesName(*given), ", ", LayoutWords(*given)));
}

// Whether a layout that fits expects a step within kLayoutNearTie of the winner's.
bool IsNearTie(const StepBreakdown& other, const StepBreakdown& best) {
  return other.memory.fits && best.memory.fits &&
         ExpectedStepS(other) < (1 + kLayoutNearTie) * ExpectedStepS(best);
}

// Fills out.ranked: the layouts that fit by their expected step, then those that do not by the
// memory they need, at most `shown`; each after the first says why it loses to the first.
void RankLayouts(std::vector<StepBreakdown> fits, std::vector<StepBreakdown> not_fit, size_t shown,
                 LayoutSearch& out) {
  std::sort(fits.begin(), fits.end(), [](const StepBreakdown& a, const StepBreakdown& b) {
    return ExpectedStepS(a) < ExpectedStepS(b);
  });
  // The shortest predicted step, where its band's midpoint ranks it below the layouts shown.
  const auto shortest = std::min_element(
      fits.begin(), fits.end(),
      [](const StepBreakdown& a, const StepBreakdown& b) { return a.step_s < b.step_s; });
  if (shortest != fits.end() && shortest - fits.begin() >= static_cast<std::ptrdiff_t>(shown)) {
    out.shortest_note = absl::StrFormat(
        "; the shortest predicted step, %s's (%.3f s), ranks %d of %d: %s", DegreesName(*shortest),
        shortest->step_s, static_cast<int>(shortest - fits.begin()) + 1,
        static_cast<int>(fits.size()), WhyLoses(*shortest, fits.front()));
  }
  std::sort(not_fit.begin(), not_fit.end(), [](const StepBreakdown& a, const StepBreakdown& b) {
    return a.memory.total_bytes < b.memory.total_bytes;
  });
  for (StepBreakdown& s : fits) {
    if (out.ranked.size() >= shown) break;
    out.ranked.push_back({std::move(s), ""});
  }
  for (StepBreakdown& s : not_fit) {
    if (out.ranked.size() >= shown) break;
    out.ranked.push_back({std::move(s), ""});
  }
  const StepBreakdown& best = out.ranked.front().step;
  for (size_t i = 1; i < out.ranked.size(); ++i) {
    out.ranked[i].why = WhyLoses(out.ranked[i].step, best);
    if (IsNearTie(out.ranked[i].step, best)) {
      ++out.near_ties;
      absl::StrAppendFormat(&out.ranked[i].why,
                            "; a near tie (within %.0f%%): measure both",
                            100 * kLayoutNearTie);
    }
  }
}

// "; 2 of the layouts shown within 5% of it: near ties, ..." or "".
std::string NearTieWords(int64_t ties) {
  if (ties == 0) return "";
  return absl::StrFormat(
      "; %d of the layouts shown within %.0f%% of it: near ties the planner cannot separate "
      "(its ratios between published layouts have missed by that much), worth measuring",
      ties, 100 * kLayoutNearTie);
}

// Every candidate combination of degrees priced with its best layout: those that fit, those that
// do not, how many were priced.
struct Priced {
  std::vector<StepBreakdown> fits, not_fit;
  int64_t examined = 0;
};
Priced PriceCandidates(const ModelSpec& spec, const GpuSpec& gpu, const RunConfig& planned,
                       const HeldDegrees& held, PredictionMemo* memo) {
  Priced out;
  for (const Degrees& g : CandidateDegrees(spec, gpu, planned.num_gpus, held)) {
    std::optional<StepBreakdown> step = PlanDegrees(spec, gpu, planned, g, memo);
    if (!step) continue;
    ++out.examined;
    (step->memory.fits ? out.fits : out.not_fit).push_back(*std::move(step));
  }
  return out;
}

// The layout in words, degrees and knobs: what two searches are compared by.
std::string ChoiceWords(const StepBreakdown& b) {
  return absl::StrCat(DegreesName(b), ", micro-batch ", b.micro_batch_size, ", ", LayoutWords(b));
}

// Where the winner pays the fitted MoE host wait (kMoeHostWaitS, the run not setting its own):
// whether the search picks the same layout without it, so that the answer says how much its choice
// rests on that constant, and how far behind the other pick's degrees are with it.
std::string HostWaitNote(const ModelSpec& spec, const GpuSpec& gpu, const RunConfig& planned,
                         const HeldDegrees& held, const StepBreakdown& best,
                         PredictionMemo* memo) {
  if (best.moe_host_s <= 0 || planned.moe_host_s.has_value()) return "";
  RunConfig without = planned;
  without.moe_host_s = 0;
  Priced other = PriceCandidates(spec, gpu, without, held, memo);
  if (other.fits.empty()) return "";
  const StepBreakdown& alt = *std::min_element(
      other.fits.begin(), other.fits.end(), [](const StepBreakdown& a, const StepBreakdown& b) {
        return ExpectedStepS(a) < ExpectedStepS(b);
      });
  const std::string wait = absl::StrFormat(
      "the MoE host wait (--moe-host-ms: a fitted %.1f ms per MoE layer and micro-batch, %.0f%% "
      "of this step)",
      1e3 * kMoeHostWaitS, 100 * best.moe_host_s / best.step_s);
  if (ChoiceWords(alt) == ChoiceWords(best)) {
    return absl::StrCat("; the same layout wins without ", wait);
  }
  if (DegreesName(alt) == DegreesName(best)) {
    return absl::StrCat("; without ", wait,
                        " the same degrees win with micro-batch ", alt.micro_batch_size, ", ",
                        LayoutWords(alt));
  }
  // The alternative's degrees planned again with the wait, as the search planned them.
  std::string behind;
  const Degrees g{alt.tensor_parallel, alt.pipeline_parallel, alt.context_parallel,
                  alt.expert_parallel};
  if (std::optional<StepBreakdown> f = PlanDegrees(spec, gpu, planned, g, memo);
      f && f->memory.fits) {
    behind = absl::StrFormat(" (with the wait, those degrees come out %+.1f%% behind this one)",
                             100 * (ExpectedStepS(*f) / ExpectedStepS(best) - 1));
  }
  return absl::StrCat("; the choice rests on ", wait,
                      ": without it (0: CUDA graphs over static-shaped experts) the search picks ",
                      ChoiceWords(alt), behind);
}

}  // namespace

absl::StatusOr<LayoutSearch> SearchLayouts(const ModelSpec& spec, const GpuSpec& gpu,
                                           const RunConfig& run, const HeldDegrees& held,
                                           PredictionMemo* memo, size_t shown) {
  if (run.num_gpus <= 0) {
    return absl::InvalidArgumentError(
        "run.num_gpus: the layout search needs the run's GPUs (> 0)");
  }
  if (run.global_batch <= 0) {
    return absl::InvalidArgumentError(
        "run.global_batch: the layout search compares layouts at one global batch: state it "
        "(> 0)");
  }
  RunConfig planned = run;
  planned.plan = true;
  planned.num_gpus = run.num_gpus;
  LayoutSearch out;
  Priced priced = PriceCandidates(spec, gpu, planned, held, memo);
  out.examined = priced.examined;
  if (out.examined == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run.num_gpus: no layout of ", run.num_gpus, " GPUs runs this model at global batch ",
        run.global_batch,
        ": the tensor-, pipeline-, context- and expert-parallel degrees that divide the model "
        "leave data-parallel ranks that do not divide the batch",
        HeldWords(held, spec)));
  }
  out.fit = static_cast<int64_t>(priced.fits.size());
  RankLayouts(std::move(priced.fits), std::move(priced.not_fit), shown, out);
  const StepBreakdown& best = out.ranked.front().step;
  const std::string given_note =
      out.fit > 0 ? absl::StrCat(GivenDegreesNote(spec, gpu, run, best, memo),
                                 HostWaitNote(spec, gpu, planned, held, best, memo))
                  : "";
  out.assumption =
      out.fit > 0
          ? absl::StrCat("planned layout: ", DegreesName(best), " on ", run.num_gpus,
                         " GPUs, first of the ", out.fit,
                         " degree combinations that fit in memory (of ", out.examined,
                         " priced), ranked by the predicted step moved by the midpoint of its "
                         "kind's published-run error band (dense, FSDP, context-parallel and "
                         "expert-parallel runs miss by different amounts: a layout of another "
                         "kind can show a shorter predicted step and rank below it)",
                         HeldWords(held, spec), NearTieWords(out.near_ties), out.shortest_note,
                         given_note)
          : absl::StrCat("planned layout: none of the ", out.examined,
                         " degree combinations fits in memory on ", run.num_gpus, " GPUs",
                         HeldWords(held, spec), "; the one needing the least is ",
                         DegreesName(best), ": more GPUs are needed");
  return out;
}

}  // namespace wavecrest
