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
#include "service/recommend_ranking.h"
#include "service/spec_io.h"

namespace wavecrest {

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
                               recommend_internal::Ranking& r) {
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
  recommend_internal::Ranking r;
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
    RETURN_IF_ERROR(recommend_internal::MeasureBest(ctx, request, predicted, r));
  } else if (r.mode == v1::MODE_AUTO) {
    r.response.add_notes(absl::StrCat(can.reason, ": every number is PREDICTED"));
  }
  recommend_internal::Answer(r);
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
