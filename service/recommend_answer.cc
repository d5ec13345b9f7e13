// Recommend's answer: the candidates' rows (the top N and the baseline, measured ones first),
// the verdict in words with the figures it rests on, and the notes on memory and close leaders.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/analysis.h"
#include "core/memory.h"
#include "core/units.h"
#include "service/convert.h"
#include "service/recommend_ranking.h"

namespace wavecrest {
namespace recommend_internal {

std::string MemoryReason(const MemoryEstimate& m, const GpuSpec& gpu) {
  if (m.fits) return "";
  return absl::StrFormat(
      "does not fit: needs %.1f GiB per GPU, more than %.0f%% of the %s's %.0f GiB (estimate)%s",
      m.total_bytes / kGiB, 100 * kUsableMemoryFraction, gpu.name, m.capacity_bytes / kGiB,
      m.fits_with_recompute && m.kv_cache_bytes == 0 ? "; fits with full activation recomputation"
                                                     : "");
}

namespace {

// `say_fit`: a row that does not fit says so (not when the baseline does not fit either: the
// answer says that once, AnswerFit).
v1::Candidate ToProto(const CandidateScore& s, int rank, const GpuSpec& gpu, bool say_fit) {
  v1::Candidate c;
  c.set_rank(rank);
  c.set_baseline(s.baseline);
  *c.mutable_model() = wavecrest::ToProto(s.spec);
  *c.mutable_params() = wavecrest::ToProto(s.params);
  c.set_param_change(s.param_change);
  c.set_step_time_s(s.step_time_s);
  c.set_tokens_per_second_per_gpu(s.tokens_per_s_per_gpu);
  c.set_speedup(s.speedup);
  c.set_speedup_uncertainty(s.speedup_uncertainty);
  c.set_mfu(s.mfu);
  c.set_source(s.all_measured ? v1::SOURCE_MEASURED : v1::SOURCE_PREDICTED);
  for (const auto& r : s.reasons) c.add_reasons(r);
  const MemoryEstimate memory = EstimateMemory(s.spec, gpu);
  *c.mutable_memory() = wavecrest::ToProto(memory);
  if (std::string why = MemoryReason(memory, gpu); say_fit && !why.empty()) c.add_reasons(why);
  c.set_elementwise_share(s.step_time_s > 0 ? s.elementwise_time_s / s.step_time_s : 0);
  c.set_layer_measured_share(s.layer_share);
  c.set_measured_share(s.measured_share);
  c.set_beats_baseline(Beats(s));
  for (const CandidateScore::KnobGain& g : s.knob_gains) {
    v1::KnobGain* k = c.add_knob_gains();
    k->set_change(g.change);
    k->set_gain(g.gain);
    k->set_uncertainty(g.gain * g.sigma);
    for (const std::string& p : g.parts) k->add_parts(p);
    k->set_required(g.required);
  }
  if (s.spec.workload == Workload::kDecode && s.step_time_s > 0) {
    c.set_time_per_output_token_s(s.step_time_s);
    c.set_memory_bandwidth_utilization(DecodeBytesPerStep(s.spec) /
                                       (s.step_time_s * gpu.memory_bandwidth_bytes_per_s));
  }
  return c;
}

// The degrees the candidates were made legal for that the baseline's row is not (only when the
// request named them: StrictTp).
std::vector<int64_t> BaselineBreaksTp(const v1::RecommendResponse& r) {
  std::vector<int64_t> out;
  for (const v1::Candidate& c : r.candidates()) {
    if (!c.baseline()) continue;
    for (int64_t t : r.tensor_parallel_degrees()) {
      if (std::find(c.tensor_parallel_legal().begin(), c.tensor_parallel_legal().end(), t) ==
          c.tensor_parallel_legal().end()) {
        out.push_back(t);
      }
    }
  }
  return out;
}

// The request named degrees the baseline cannot run at, and #1 (which meets them) does not beat
// it: the answer is still #1, the best shape that can, however it compares. False otherwise.
bool ChangeForTheDegreesAsked(v1::RecommendResponse& r, const char* what) {
  const v1::Candidate& first = r.candidates(0);
  const std::vector<int64_t> broken = BaselineBreaksTp(r);
  if (first.baseline() || first.beats_baseline() || broken.empty()) return false;
  r.set_verdict(v1::VERDICT_CHANGE);
  r.set_verdict_reason(absl::StrFormat(
      "change the shape: the baseline is not legal for tensor parallelism %s, which the request "
      "asks for; #1 is the best shape legal for %s, at %.3fx ± %.3f the baseline's %s (%s)",
      absl::StrJoin(broken, ", "), absl::StrJoin(r.tensor_parallel_degrees(), ", "),
      first.speedup(), first.speedup_uncertainty(), what,
      first.source() == v1::SOURCE_PREDICTED ? "predicted" : "measured"));
  return true;
}

// The verdict from the ranking (RankCandidates puts those that beat the baseline before it), in
// words with the figures it rests on.
void SetVerdict(v1::RecommendResponse& r) {
  const v1::Candidate* best_other = nullptr;
  for (const v1::Candidate& c : r.candidates()) {
    if (!c.baseline() && (best_other == nullptr || c.speedup() > best_other->speedup())) {
      best_other = &c;
    }
  }
  const v1::Candidate& first = r.candidates(0);
  const char* what = first.model().workload() == v1::WORKLOAD_DECODE
                         ? "decode tokens/s at equal parameters"
                         : "MFU";
  if (ChangeForTheDegreesAsked(r, what)) return;
  if (!first.baseline() && first.beats_baseline()) {
    r.set_verdict(v1::VERDICT_CHANGE);
    r.set_verdict_reason(absl::StrFormat(
        "change the shape: #1 runs %.3fx ± %.3f the baseline's %s (%s), more than its "
        "uncertainty and the %.0f%% a change must gain",
        first.speedup(), first.speedup_uncertainty(), what,
        first.source() == v1::SOURCE_PREDICTED ? "predicted" : "measured",
        100 * kMinWorthwhileGain));
    return;
  }
  if (best_other == nullptr) {
    // Nothing was compared: not "keep", but what would give candidates.
    r.set_verdict(v1::VERDICT_NO_CANDIDATES);
    const v1::Refusal* most = nullptr;
    for (const v1::Refusal& x : r.refusals()) {
      if (x.rule() != "param_tolerance" && (most == nullptr || x.count() > most->count())) most = &x;
    }
    if (most == nullptr && r.refusals_size() > 0) most = &r.refusals(0);
    r.set_verdict_reason(
        most == nullptr
            ? std::string("nothing to compare: no other shape was generated; name more knobs "
                          "in vary (--vary) or widen param_tolerance (--param-tolerance)")
            : absl::StrFormat("nothing to compare: every nearby shape was refused, most (%d %s) "
                              "because %s; loosen with %s",
                              most->count(), most->unit(), most->description(),
                              most->loosen_with()));
    return;
  }
  r.set_verdict(v1::VERDICT_KEEP);
  std::string best =
      best_other == nullptr
          ? std::string("no other candidate was found")
          : absl::StrFormat(
                "the best other, #%d, runs %.3fx ± %.3f (%s)", best_other->rank(),
                best_other->speedup(), best_other->speedup_uncertainty(),
                best_other->source() == v1::SOURCE_PREDICTED ? "predicted" : "measured");
  r.set_verdict_reason(absl::StrFormat(
      "keep your shape: no candidate beats the baseline by more than its uncertainty and the "
      "%.0f%% a change must gain; %s",
      100 * kMinWorthwhileGain, best));
}

// "candidates 1 and 2 are within each other's uncertainty ..." for the leading candidates whose
// speed-up bands overlap (speed-up ± its uncertainty), or empty.
std::string OverlapNote(const v1::RecommendResponse& r) {
  std::vector<const v1::Candidate*> lead;
  for (const v1::Candidate& c : r.candidates()) {
    if (!c.baseline() && lead.size() < 5) lead.push_back(&c);
  }
  if (lead.size() < 2) return "";
  const v1::Candidate& first = *lead.front();
  std::vector<std::string> close;
  for (size_t i = 1; i < lead.size(); ++i) {
    const v1::Candidate& c = *lead[i];
    if (c.speedup() + c.speedup_uncertainty() >= first.speedup() - first.speedup_uncertainty()) {
      close.push_back(
          absl::StrFormat("#%d (%.3f ± %.3f)", c.rank(), c.speedup(), c.speedup_uncertainty()));
    }
  }
  if (close.empty()) return "";
  bool all_measured = first.source() != v1::SOURCE_PREDICTED;
  for (const v1::Candidate* c : lead) all_measured &= c->source() != v1::SOURCE_PREDICTED;
  if (all_measured) {
    return absl::StrFormat(
        "#%d (%.3f ± %.3f) is within the measured spread of %s: the GPU cannot tell them apart "
        "at this repeatability; choose by what else matters to you (accuracy, the shapes your "
        "checkpoints have) or re-measure with more GPU time",
        first.rank(), first.speedup(), first.speedup_uncertainty(), absl::StrJoin(close, ", "));
  }
  // Measuring was tried and did not reach these rows (the budget, or an emulating worker).
  const bool tried = r.mode() != v1::MODE_PREDICTED && r.gemms_measured() + r.gemms_cached() > 0;
  return absl::StrFormat(
      "#%d (%.3f ± %.3f) is within the uncertainty of %s: the model cannot tell them apart; %s "
      "before choosing",
      first.rank(), first.speedup(), first.speedup_uncertainty(), absl::StrJoin(close, ", "),
      tried ? "measure them with a larger max_gpu_seconds (--max-gpu-seconds)"
            : "measure them on a GPU worker (mode MEASURED)");
}

// When the baseline itself does not fit one GPU as given, every row is told once, not per row
// (each would say "does not fit"): what it needs, and where a layout that fits comes from.
bool BaselineFits(Ranking& r) {
  auto base = std::find_if(r.scores.begin(), r.scores.end(),
                           [](const CandidateScore& s) { return s.baseline; });
  if (base == r.scores.end()) return true;
  const ModelSpec& b = base->spec;
  const MemoryEstimate m = EstimateMemory(b, *r.gpu.spec);
  if (m.fits) return true;
  r.response.add_notes(absl::StrCat(
      "the baseline as given (TP ", b.tensor_parallel, ", PP ", b.pipeline_parallel,
      ", micro-batch ", b.micro_batch_size, ", without ZeRO, offload or recomputation) ",
      MemoryReason(m, *r.gpu.spec),
      ". The rows need about as much: the speed-ups compare shapes, not a run; `wavecrest "
      "analyze --plan --gpus N` finds a layout that fits"));
  return false;
}

}  // namespace

void Answer(Ranking& r) {
  const bool base_measured = !r.measured_group.empty();
  const bool say_fit = BaselineFits(r);
  const int top = r.constraints.top;
  const std::vector<int64_t> degrees(r.response.tensor_parallel_degrees().begin(),
                                     r.response.tensor_parallel_degrees().end());
  int rank = 0;
  bool base_shown = false;
  auto show = [&](const CandidateScore& s) {
    ++rank;
    if (rank > top && !s.baseline) return;
    if (rank > top && base_shown) return;
    base_shown |= s.baseline;
    v1::Candidate* c = r.response.add_candidates();
    *c = ToProto(s, rank, *r.gpu.spec, say_fit);
    for (int64_t t : LegalTp(s.spec, degrees, r.constraints.kv_divisible)) {
      c->add_tensor_parallel_legal(t);
    }
  };
  // A baseline that breaks the degrees the request named is ranked after every candidate (each
  // of which meets them): what was asked for comes first.
  const CandidateScore* base_last = nullptr;
  auto show_or_defer = [&](const CandidateScore& s) {
    if (s.baseline && LegalTp(s.spec, degrees, r.constraints.kv_divisible).size() <
                          degrees.size()) {
      base_last = &s;
      return;
    }
    show(s);
  };
  for (const CandidateScore& s : r.measured_group) show_or_defer(s);
  for (const CandidateScore& s : r.scores) {
    if (base_measured && s.baseline) continue;  // the baseline is in the measured group
    show_or_defer(s);
  }
  if (base_last != nullptr) show(*base_last);
  SetVerdict(r.response);
  // Which of several winners to pick matters only when there is a change to make.
  if (r.response.verdict() == v1::VERDICT_CHANGE) {
    if (std::string note = OverlapNote(r.response); !note.empty()) r.response.add_notes(note);
  }
  r.response.set_done(true);
}

}  // namespace recommend_internal
}  // namespace wavecrest
