#include "service/recommend_logic.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/analysis.h"
#include "core/memory.h"
#include "core/minimal_candidates.h"
#include "core/run_tp.h"
#include "core/status_macros.h"
#include "core/units.h"
#include "service/advisor_logic.h"
#include "service/assumed.h"
#include "service/convert.h"
#include "service/errors.h"
#include "service/spec_io.h"

namespace wavecrest {
namespace {

// "needs 92.1 GiB per GPU, more than 90% of the h100-sxm's 80 GiB (fits with full
// recomputation)" for a candidate that does not fit, or empty.
std::string MemoryReason(const MemoryEstimate& m, const GpuSpec& gpu) {
  if (m.fits) return "";
  return absl::StrFormat(
      "does not fit: needs %.1f GiB per GPU, more than %.0f%% of the %s's %.0f GiB (estimate)%s",
      m.total_bytes / kGiB, 100 * kUsableMemoryFraction, gpu.name, m.capacity_bytes / kGiB,
      m.fits_with_recompute && m.kv_cache_bytes == 0 ? "; fits with full activation recomputation"
                                                     : "");
}

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

}  // namespace

absl::StatusOr<RecommendConstraints> ConstraintsFromRequest(const v1::RecommendRequest& r) {
  RecommendConstraints c;
  std::vector<FieldViolation> v;
  c.param_tolerance = r.param_tolerance() == 0 ? kDefaultParamTolerance : r.param_tolerance();
  if (r.vary_size() > kMaxListEntries || r.allowed_head_dims_size() > kMaxListEntries ||
      r.tensor_parallel_options_size() > kMaxListEntries) {
    return InvalidArgumentWithViolations(
        {{"vary, allowed_head_dims, tensor_parallel_options",
          absl::StrCat("at most ", kMaxListEntries, " entries each; got ", r.vary_size(), ", ",
                       r.allowed_head_dims_size(), ", ", r.tensor_parallel_options_size())}});
  }
  for (int i = 0; i < r.vary_size(); ++i) {
    absl::StatusOr<Knob> k = FromProto(r.vary(i));
    if (!k.ok()) {
      v.push_back({absl::StrCat("vary[", i, "]"), std::string(k.status().message())});
    } else {
      c.vary.insert(*k);
    }
  }
  c.allowed_head_dims.assign(r.allowed_head_dims().begin(), r.allowed_head_dims().end());
  c.min_heads = r.min_heads();
  for (int i = 0; i < r.tensor_parallel_options_size(); ++i) {
    const int64_t t = r.tensor_parallel_options(i);
    if (t < 1 || t > kMaxTensorParallel) {
      v.push_back({absl::StrCat("tensor_parallel_options[", i, "]"),
                   absl::StrCat("must be in [1, ", kMaxTensorParallel, "]; got ", t)});
    } else {
      c.tensor_parallel_options.push_back(t);
    }
  }
  c.max_heads = r.max_heads();
  c.keep_layers = r.keep_layers();
  c.kv_divisible = r.kv_heads_divisible_by_tp();
  c.head_dim_multiple =
      r.head_dim_multiple() == 0 ? kDefaultHeadDimMultiple : r.head_dim_multiple();
  c.max_candidates = r.max_candidates() == 0 ? kDefaultMaxCandidates : r.max_candidates();
  c.top = r.top() == 0 ? kDefaultTop : r.top();
  for (auto& f : ValidateConstraints(c)) v.push_back(std::move(f));
  if (!(r.max_gpu_seconds() >= 0 && r.max_gpu_seconds() <= 3600)) {  // NaN fails too
    v.push_back(
        {"max_gpu_seconds", absl::StrCat("must be in [0, 3600]; got ", r.max_gpu_seconds())});
  }
  if (r.measure_top_k() < 0 || r.measure_top_k() > 1000) {
    v.push_back({"measure_top_k", absl::StrCat("must be in [0, 1000]; got ", r.measure_top_k())});
  }
  if (!v1::Mode_IsValid(r.mode())) {
    v.push_back({"mode", absl::StrCat("unknown value ", r.mode(),
                                      "; allowed: MODE_AUTO, MODE_MEASURED, MODE_PREDICTED")});
  }
  if (!v.empty()) return InvalidArgumentWithViolations(v);
  return c;
}

namespace {

// The request's mode, MODE_UNSPECIFIED read as MODE_AUTO.
v1::Mode ModeOf(const v1::RecommendRequest& request) {
  return request.mode() == v1::MODE_UNSPECIFIED ? v1::MODE_AUTO : request.mode();
}

// Times the chosen candidates' whole layers through the measurer and returns the measured ones
// for ScoreCandidate; counts go into `response`. A failure in MODE_AUTO is a note.
absl::StatusOr<LayerTimeFn> MeasureLayers(const CallContext& ctx, const GpuTarget& gpu,
                                          v1::Mode mode, const std::vector<LayerKey>& keys,
                                          absl::Time measure_by, v1::RecommendResponse* response) {
  if (keys.empty()) return LayerTimeFn();
  ReportProgress(ctx, 0, static_cast<int64_t>(keys.size()),
                 absl::StrCat("timing ", keys.size(), " whole layers"));
  MeasureCounts counts;
  absl::StatusOr<std::vector<std::optional<LayerTime>>> times = MeasureLayerTimes(
      ctx, gpu, keys, measure_by,
      [&](int64_t done, int64_t total) { ReportProgress(ctx, done, total, "timing layers"); },
      &counts);
  RETURN_IF_ERROR(StopStatus(ctx));
  if (!times.ok()) {
    if (mode == v1::MODE_MEASURED) return times.status();
    response->add_notes(absl::StrCat("timing whole layers failed (", times.status().message(),
                                     "); steps are summed from GEMMs"));
    return LayerTimeFn();
  }
  // The layers' notes repeat what the GEMMs' said about the worker ("emulates the GPU"): once.
  for (const std::string& n : counts.notes) {
    if (std::find(response->notes().begin(), response->notes().end(), n) ==
        response->notes().end()) {
      response->add_notes(n);
    }
  }
  response->set_layers_measured(counts.measured);
  response->set_layers_cached(counts.cached);
  response->set_layers_predicted(counts.predicted);
  auto by_key = std::make_shared<std::vector<std::pair<LayerKey, LayerTime>>>();
  for (size_t i = 0; i < keys.size(); ++i) {
    if ((*times)[i]) by_key->emplace_back(keys[i], *(*times)[i]);
  }
  return LayerTimeFn([by_key](const LayerKey& k) -> std::optional<LayerTime> {
    for (const auto& [key, t] : *by_key) {
      if (key == k) return t;
    }
    return std::nullopt;
  });
}

// One Recommend call's state across its stages.
struct Ranking {
  GpuTarget gpu;
  v1::Mode mode = v1::MODE_AUTO;
  RecommendConstraints constraints;
  std::optional<CandidateRules> rules;  // what an undone change must meet (MinimizeCandidates)
  int64_t base_params = 0;
  std::vector<CandidateScore> scores;          // by the analytic model, ranked
  std::vector<CandidateScore> measured_group;  // re-scored with measurements, ranked
  v1::RecommendResponse response;
};

// What the answer rests on, before its rows: the rules that refused shapes, the degrees every
// candidate meets and why, what was held, the workload assumed, and notes where the baseline
// breaks the degrees asked or keeps its heads.
void DescribeTheQuestion(const ModelSpec& base, const RecommendConstraints& c,
                         const std::vector<Refusal>& refusals, v1::RecommendResponse& response) {
  for (const Refusal& x : refusals) {
    v1::Refusal* p = response.add_refusals();
    p->set_rule(x.rule);
    p->set_count(x.count);
    p->set_unit(x.unit);
    p->set_description(x.what);
    p->set_loosen_with(x.loosen);
  }
  const TpRequirement tp = RequiredTp(base, c);
  for (int64_t t : tp.degrees) response.add_tensor_parallel_degrees(t);
  for (const HeldProperty& h : HeldProperties(base, c)) {
    v1::HeldProperty* p = response.add_held();
    p->set_name(h.name);
    p->set_description(h.what);
    p->set_released(h.released);
  }
  response.set_tensor_parallel_source(tp.source);
  if (!tp.baseline_breaks.empty()) {
    response.add_notes(absl::StrCat(
        "the baseline itself is not legal for the tensor_parallel_options asked (",
        absl::StrJoin(tp.baseline_breaks, "; "),
        "): every candidate is (heads, KV heads, hidden size and MLP width moved to counts that "
        "divide), the baseline's row says which degrees it meets, and it is ranked after them"));
  }
  response.set_speedup_basis(MeritBasis(base));
  *response.mutable_assumed() = AssumedOf(base);
  if (base.kv_lora_rank > 0 && EffectiveKnobs(c).count(Knob::kHeads)) {
    response.add_notes(
        "multi-head latent attention keeps its heads (its head dim is its nope and rotary parts, "
        "its KV cache a latent): vary hidden, ffn, vocab or layers for its candidates");
  }
}

// Stage 1: every candidate, scored and ranked by the analytic model (`predicted` memoises it).
absl::Status ScoreAllPredicted(const CallContext& ctx, const ModelSpec& base, ScoreCache& predicted,
                               Ranking& r) {
  int64_t generated = 0;
  std::vector<Refusal> refusals;
  absl::StatusOr<std::vector<ModelSpec>> specs = GenerateCandidates(
      base, r.constraints, &generated, [&] { return !StopStatus(ctx).ok(); }, &refusals);
  if (!specs.ok()) {
    RETURN_IF_ERROR(StopStatus(ctx));  // cancelled or past the deadline: say so
    if (specs.status().code() == absl::StatusCode::kInvalidArgument) {
      return FieldError("vary", specs.status().message());
    }
    return specs.status();
  }
  r.response.set_shapes_examined(generated);
  DescribeTheQuestion(base, r.constraints, refusals, r.response);
  r.scores.reserve(specs->size());
  for (size_t i = 0; i < specs->size(); ++i) {
    if (i % 256 == 0) {
      RETURN_IF_ERROR(StopStatus(ctx));
      ReportProgress(ctx, static_cast<int64_t>(i), static_cast<int64_t>(specs->size()),
                     "scoring candidates (analytic model)");
    }
    r.scores.push_back(ScoreCandidate((*specs)[i], *r.gpu.spec, predicted, r.base_params));
    r.scores.back().baseline = i == 0;
  }
  r.response.set_candidates_considered(static_cast<int64_t>(r.scores.size()));
  RankCandidates(r.scores, static_cast<size_t>(r.constraints.top));
  // Every change of what is shown earns its keep (the measuring stage then times minimal shapes).
  r.rules.emplace(*specs->begin(), r.constraints);
  MinimizeCandidates(
      r.scores, *r.rules,
      [&](const ModelSpec& s) { return ScoreCandidate(s, *r.gpu.spec, predicted, r.base_params); },
      static_cast<size_t>(r.constraints.top), static_cast<size_t>(r.constraints.top));
  // Every GEMM scored so far was predicted; the measuring stage replaces this count.
  r.response.set_gemms_predicted(static_cast<int64_t>(predicted.distinct()));
  return absl::OkStatus();
}

// What the measuring stage times: the best K by the analytic model and the baseline, as many as
// the GPU-time budget covers (the baseline always), their distinct GEMMs (sorted) and whole
// transformer layers.
struct MeasurePlan {
  std::vector<size_t> chosen;  // indices into Ranking::scores
  std::vector<GemmKey> gemms;
  std::vector<LayerKey> layers;
};
MeasurePlan PlanMeasuring(const Ranking& r, ScoreCache& predicted, int top_k, double budget_s) {
  MeasurePlan plan;
  absl::flat_hash_set<GemmKey> keys;
  const GpuSpec& gpu = *r.gpu.spec;
  double spent = 0;
  for (size_t i = 0; i < r.scores.size(); ++i) {
    const bool is_base = r.scores[i].baseline;
    if (!is_base && static_cast<int>(plan.chosen.size()) >= top_k + 1) continue;
    const ModelSpec& s = r.scores[i].spec;
    absl::StatusOr<LayerKey> layer = MakeLayerKey(LayerKind::kTransformerLayer, s);
    const bool new_layer = layer.ok() && std::find(plan.layers.begin(), plan.layers.end(),
                                                   *layer) == plan.layers.end();
    double cost = new_layer ? PredictLayer(gpu, *layer).time_s * kMeasureCostFactor : 0;
    absl::flat_hash_set<GemmKey> extra;
    for (const Gemm& g : BuildGemms(s)) {
      if (g.fused_attention || keys.contains(g.key()) || !extra.insert(g.key()).second) continue;
      cost += predicted.Get(g.key()).time_s * kMeasureCostFactor;
    }
    if (!is_base && spent + cost > budget_s) continue;
    spent += cost;
    keys.insert(extra.begin(), extra.end());
    plan.chosen.push_back(i);
    if (new_layer) plan.layers.push_back(*std::move(layer));
  }
  plan.gemms.assign(keys.begin(), keys.end());
  std::sort(plan.gemms.begin(), plan.gemms.end(), [](const GemmKey& a, const GemmKey& b) {
    return std::tie(a.shape, a.layout, a.dtype) < std::tie(b.shape, b.layout, b.dtype);
  });
  return plan;
}

// The notes of a measuring stage that re-scored `rows` rows with `measured_keys` of `keys` GEMMs
// measured, `whole` of them from whole-layer measurements.
void AddMeasuringNotes(int64_t rows, int64_t measured_keys, size_t keys, int64_t whole,
                       v1::RecommendResponse& response) {
  if (whole > 0) {
    response.add_notes(absl::StrCat(
        whole, " of the ", rows,
        " measured rows use their whole transformer layer measured as one (step = layers × "
        "the layer + logits + loss; see layer_measured_share); the others are summed from "
        "GEMMs"));
  }
  if (measured_keys > 0) {
    response.add_notes(absl::StrCat(
        "the first ", rows, " rows were re-scored with measured GEMM times ", "(", measured_keys,
        " of ", keys,
        " distinct GEMMs measured; the best by "
        "the analytic model, and the baseline); the rest are ranked by the analytic model"));
  } else {
    response.add_notes(absl::StrCat(
        "the measuring stage for the first ", rows,
        " rows got no GPU measurement (an emulating worker, or every GEMM failed): their "
        "times are PREDICTED"));
  }
}

// Stage 2: the best K and the baseline, measured within the GPU-time budget and re-scored.
absl::Status MeasureBest(const CallContext& ctx, const v1::RecommendRequest& request,
                         ScoreCache& predicted, Ranking& r) {
  const int k = request.measure_top_k() == 0 ? kDefaultMeasureTopK : request.measure_top_k();
  const double budget_s =
      request.max_gpu_seconds() == 0 ? kDefaultMaxGpuSeconds : request.max_gpu_seconds();
  const MeasurePlan plan = PlanMeasuring(r, predicted, k, budget_s);
  ReportProgress(ctx, 0, static_cast<int64_t>(plan.gemms.size()),
                 absl::StrCat("measuring ", plan.gemms.size(), " distinct GEMMs of ",
                              plan.chosen.size(), " candidates"));
  // The budget is wall time, GEMMs and layers together, and ends before the call's deadline.
  const absl::Time measure_by = MeasureBy(ctx, budget_s);
  MeasureCounts counts;
  absl::StatusOr<std::vector<std::optional<GemmTime>>> times = MeasureGemmTimes(
      ctx, r.gpu, r.mode, plan.gemms, measure_by,
      [&](int64_t done, int64_t total) { ReportProgress(ctx, done, total, "measuring GEMMs"); },
      &counts);
  RETURN_IF_ERROR(StopStatus(ctx));
  r.response.set_gemms_measured(counts.measured);
  r.response.set_gemms_cached(counts.cached);
  r.response.set_gemms_predicted(counts.predicted);
  for (const std::string& n : counts.notes) r.response.add_notes(n);
  if (!times.ok()) {
    if (r.mode == v1::MODE_MEASURED) return times.status();
    r.response.add_notes(
        absl::StrCat("measurement failed (", times.status().message(), "); ranking is PREDICTED"));
    return absl::OkStatus();
  }
  absl::flat_hash_map<GemmKey, GemmTime> by_key;
  int64_t measured_keys = 0;
  for (size_t i = 0; i < plan.gemms.size(); ++i) {
    if (!(*times)[i]) continue;
    by_key[plan.gemms[i]] = *(*times)[i];
    measured_keys += (*times)[i]->measured;
  }
  // The GEMMs of these rows left predicted (the budget ended, or a GEMM failed) are scaled to
  // agree with the ones measured beside them, so that no row gains from being measured.
  MixedTimes mixed(std::move(by_key), predicted);
  ScoreCache measured([&](const GemmKey& key) { return mixed.Get(key); });
  ASSIGN_OR_RETURN(const LayerTimeFn layer_times,
                   MeasureLayers(ctx, r.gpu, r.mode, plan.layers, measure_by, &r.response));
  int64_t whole = 0;
  for (size_t i : plan.chosen) {
    r.measured_group.push_back(
        ScoreCandidate(r.scores[i].spec, *r.gpu.spec, measured, r.base_params, layer_times));
    r.measured_group.back().baseline = r.scores[i].baseline;
    whole += r.measured_group.back().layer_share > 0;
  }
  RankCandidates(r.measured_group, static_cast<size_t>(r.constraints.top));
  // Measured, a change may turn out not to earn its keep after all: undo it here too (the
  // shapes without it share most GEMMs with the measured ones; the rest are scaled predictions).
  for (CandidateScore& s : r.measured_group) s.minimized = false;
  MinimizeCandidates(
      r.measured_group, *r.rules,
      [&](const ModelSpec& s) {
        return ScoreCandidate(s, *r.gpu.spec, measured, r.base_params, layer_times);
      },
      r.measured_group.size(), static_cast<size_t>(r.constraints.top));
  if (std::string note = ScaledNote(mixed, "GEMMs of the measured rows"); !note.empty()) {
    r.response.add_notes(std::move(note));
  }
  // The rest keep their predicted ranking, after the measured ones.
  std::vector<CandidateScore> rest;
  for (size_t i = 0; i < r.scores.size(); ++i) {
    if (std::find(plan.chosen.begin(), plan.chosen.end(), i) == plan.chosen.end()) {
      rest.push_back(std::move(r.scores[i]));
    }
  }
  r.scores = std::move(rest);
  AddMeasuringNotes(static_cast<int64_t>(r.measured_group.size()), measured_keys, plan.gemms.size(),
                    whole, r.response);
  return absl::OkStatus();
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

// The answer: the measured group first, then the predicted ones; the top N plus the baseline,
// the verdict, and a note when the leaders cannot be told apart.
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

}  // namespace

absl::StatusOr<v1::RecommendRequest> AcceptRecommend(v1::RecommendRequest request) {
  RETURN_IF_ERROR(ResolveHfConfig(&request));
  if (request.gpu().empty()) return FieldError("gpu", GpuRequired());
  RETURN_IF_ERROR(ConstraintsFromRequest(request).status());
  return request;
}

absl::StatusOr<v1::RecommendResponse> RunRecommend(const v1::RecommendRequest& request,
                                                   const CallContext& ctx) {
  std::vector<FieldViolation> violations;
  absl::StatusOr<ModelSpec> base = SpecFromRequest(request.model(), "model.");
  if (!base.ok()) violations = ViolationsOf(base.status());
  absl::StatusOr<RecommendConstraints> constraints = ConstraintsFromRequest(request);
  if (!constraints.ok()) {
    for (auto& f : ViolationsOf(constraints.status())) violations.push_back(std::move(f));
  }
  if (request.gpu().empty()) violations.push_back({"gpu", GpuRequired()});
  if (!violations.empty()) return InvalidArgumentWithViolations(violations);
  Ranking r;
  ASSIGN_OR_RETURN(r.gpu, ResolveCallGpu(ctx, request.gpu(), "gpu"));
  RETURN_IF_ERROR(CheckDtypeSupported(base->dtype, *r.gpu.spec));
  r.mode = ModeOf(request);
  r.constraints = *std::move(constraints);
  const MeasureAvailability can = Availability(ctx, r.gpu);
  if (r.mode == v1::MODE_MEASURED && !can.can_measure) {
    if (!can.error.ok()) return can.error;
    return WithRetryDelay(absl::UnavailableError(absl::StrCat(
                              "MODE_MEASURED: ", can.reason,
                              "; retry later, or ask for MODE_AUTO or MODE_PREDICTED")),
                          absl::Seconds(5), "NO_WORKER");
  }
  r.response.set_gpu(r.gpu.spec->name);
  r.response.set_mode(r.mode);
  if (r.constraints.tensor_parallel_options.empty()) {
    // The degrees a run of this model on this GPU would use, of those the baseline supports.
    const RunTp run = RunTpDegrees(*base, *r.gpu.spec, TpDegrees(*base, r.constraints));
    r.constraints.run_tp = run.degrees;
    r.constraints.run_tp_source = run.source;
  }
  r.base_params = BudgetParams(*base, CountParams(*base));
  const GpuSpec* gpu = r.gpu.spec;
  ScoreCache predicted([gpu](const GemmKey& k) {
    const GemmPrediction p = PredictGemm(*gpu, k);
    return GemmTime{p.time_s, 0, false, p.band_p10, p.band_p90};
  });
  RETURN_IF_ERROR(ScoreAllPredicted(ctx, *base, predicted, r));
  if (r.mode != v1::MODE_PREDICTED && can.can_measure) {
    RETURN_IF_ERROR(MeasureBest(ctx, request, predicted, r));
  } else if (r.mode == v1::MODE_AUTO) {
    r.response.add_notes(absl::StrCat(can.reason, ": every number is PREDICTED"));
  }
  Answer(r);
  ReportProgress(ctx, r.response.candidates_considered(), r.response.candidates_considered(),
                 "done");
  return std::move(r.response);
}

absl::StatusOr<MeasureCounts> StreamRecommend(const v1::RecommendRequest& request,
                                              const CallContext& ctx,
                                              const Send<v1::RecommendResponse>& send) {
  ASSIGN_OR_RETURN(v1::RecommendResponse response, RunRecommend(request, ctx));
  const MeasureCounts counts = GemmCountsOf(response);
  send(std::move(response));
  return counts;
}

}  // namespace wavecrest
