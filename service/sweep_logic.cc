#include "service/sweep_logic.h"

#include <cmath>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/analysis.h"
#include "core/cost_model.h"
#include "core/gemm_plan.h"
#include "core/model_stats.h"
#include "core/rules.h"
#include "core/status_macros.h"
#include "service/advisor_logic.h"
#include "service/assumed.h"
#include "service/convert.h"
#include "service/errors.h"
#include "service/spec_io.h"

namespace wavecrest {
namespace {

struct DimensionName {
  v1::SweepDimension dim;
  const char* name;
};
constexpr DimensionName kDimensions[] = {
    {v1::SWEEP_DIMENSION_HIDDEN, "hidden"},
    {v1::SWEEP_DIMENSION_HEADS, "heads"},
    {v1::SWEEP_DIMENSION_KV_HEADS, "kv_heads"},
    {v1::SWEEP_DIMENSION_FFN, "ffn"},
    {v1::SWEEP_DIMENSION_VOCAB, "vocab"},
    {v1::SWEEP_DIMENSION_SEQ, "seq"},
    {v1::SWEEP_DIMENSION_MICRO_BATCH, "micro_batch"},
    {v1::SWEEP_DIMENSION_TENSOR_PARALLEL, "tp"},
    {v1::SWEEP_DIMENSION_GEMM_M, "m"},
    {v1::SWEEP_DIMENSION_GEMM_N, "n"},
    {v1::SWEEP_DIMENSION_GEMM_K, "k"},
};

std::string DimensionList() {
  std::vector<std::string> names;
  for (const DimensionName& d : kDimensions) names.push_back(d.name);
  return absl::StrJoin(names, ", ");
}

bool IsGemmDimension(v1::SweepDimension d) {
  return d == v1::SWEEP_DIMENSION_GEMM_M || d == v1::SWEEP_DIMENSION_GEMM_N ||
         d == v1::SWEEP_DIMENSION_GEMM_K;
}

void SetModelField(v1::ModelSpec* m, v1::SweepDimension d, int64_t v) {
  switch (d) {
    case v1::SWEEP_DIMENSION_HIDDEN:
      m->set_hidden_size(v);
      break;
    case v1::SWEEP_DIMENSION_HEADS:
      // Multi-head attention stays multi-head: its KV heads follow the heads.
      if (m->num_kv_heads() == 0 || m->num_kv_heads() == m->num_attention_heads()) {
        m->set_num_kv_heads(v);
      }
      m->set_num_attention_heads(v);
      break;
    case v1::SWEEP_DIMENSION_KV_HEADS:
      m->set_num_kv_heads(v);
      break;
    case v1::SWEEP_DIMENSION_FFN:
      m->set_ffn_hidden_size(v);
      break;
    case v1::SWEEP_DIMENSION_VOCAB:
      m->set_vocab_size(v);
      break;
    case v1::SWEEP_DIMENSION_SEQ:
      m->set_seq_length(v);
      break;
    case v1::SWEEP_DIMENSION_MICRO_BATCH:
      m->set_micro_batch_size(v);
      break;
    case v1::SWEEP_DIMENSION_TENSOR_PARALLEL:
      m->set_tensor_parallel(v);
      break;
    default:
      break;
  }
}

// One point before it is scored: a legal model or GEMM, or why not.
struct Point {
  int64_t value = 0;
  std::optional<ModelSpec> spec;
  std::optional<GemmKey> gemm;
  std::string invalid;
};

void FillModelPoint(const CandidateScore& s, const GpuSpec& gpu, v1::SweepPoint* p) {
  p->set_time_s(s.step_time_s);
  p->set_mfu(s.mfu);
  p->set_tflops(s.mfu * gpu.PeakFlops(s.spec.dtype) / 1e12);
  p->set_tokens_per_second_per_gpu(s.tokens_per_s_per_gpu);
  p->set_total_params(s.params.total_params);
  p->set_source(s.all_measured ? v1::SOURCE_MEASURED : v1::SOURCE_PREDICTED);
  // The step's relative error band, each contribution's error taken as independent.
  double var = 0;
  for (const Contribution& c : s.contributions) {
    var += (c.time_s * c.relative_sigma) * (c.time_s * c.relative_sigma);
  }
  const double sigma = s.step_time_s > 0 ? std::sqrt(var) / s.step_time_s : 0;
  p->set_error_band_p10(-kP90Sigmas * sigma);
  p->set_error_band_p90(kP90Sigmas * sigma);
  for (const RuleViolation& r : CheckRules(s.spec, BuildGemms(s.spec))) p->add_rules_broken(r.id);
}

void FillGemmPoint(const GemmKey& key, const GemmTime& t, const GpuSpec& gpu, v1::SweepPoint* p) {
  p->set_time_s(t.time_s);
  const double tflops = GemmFlops(key.shape) / t.time_s / 1e12;
  p->set_tflops(tflops);
  p->set_mfu(tflops * 1e12 / gpu.PeakFlops(key.dtype));
  p->set_source(t.measured ? v1::SOURCE_MEASURED : v1::SOURCE_PREDICTED);
  p->set_error_band_p10(t.band_p10);
  p->set_error_band_p90(t.band_p90);
  const std::pair<const char*, int64_t> dims[] = {
      {"m", key.shape.m}, {"n", key.shape.n}, {"k", key.shape.k}};
  for (const auto& [name, v] : dims) {
    if (!AlignmentOf(v, key.dtype, gpu).meets_rule) {
      p->add_rules_broken(absl::StrCat(name, "_alignment"));
    }
  }
}

}  // namespace

absl::StatusOr<v1::SweepDimension> ParseSweepDimension(absl::string_view name) {
  for (const DimensionName& d : kDimensions) {
    if (name == d.name) return d.dim;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("\"", name, "\" is not a sweep dimension; use one of ", DimensionList()));
}

absl::string_view SweepDimensionName(v1::SweepDimension d) {
  for (const DimensionName& n : kDimensions) {
    if (n.dim == d) return n.name;
  }
  return "";
}

absl::StatusOr<std::vector<int64_t>> SweepValues(const v1::SweepRequest& r) {
  std::vector<FieldViolation> v;
  if (SweepDimensionName(r.vary()).empty()) {
    v.push_back({"vary", absl::StrCat("give the dimension to vary: one of ", DimensionList())});
  }
  if (r.from() < 1) v.push_back({"from", absl::StrCat("must be >= 1; got ", r.from())});
  if (r.to() < r.from()) {
    v.push_back({"to", absl::StrCat("must be >= from (", r.from(), "); got ", r.to())});
  }
  if (r.step() < 0) v.push_back({"step", absl::StrCat("must be >= 1 (0 = 1); got ", r.step())});
  if (!v.empty()) return InvalidArgumentWithViolations(v);
  const int64_t step = r.step() == 0 ? 1 : r.step();
  const int64_t count = (r.to() - r.from()) / step + 1;
  if (count > kMaxSweepPoints) {
    return FieldError("to", absl::StrCat("the range has ", count, " points; a sweep takes at most ",
                                         kMaxSweepPoints, " (raise step or narrow the range)"));
  }
  std::vector<int64_t> values;
  for (int64_t i = 0; i < count; ++i) values.push_back(r.from() + i * step);
  return values;
}

namespace {

// The point of a GEMM sweep at `v`: a legal GEMM, or why not.
Point GemmPoint(const v1::SweepRequest& request, Layout layout, DType dtype, int64_t v) {
  Point p;
  p.value = v;
  GemmShape s{request.gemm().m(), request.gemm().n(), request.gemm().k(),
              std::max<int64_t>(request.gemm().batch(), 1)};
  (request.vary() == v1::SWEEP_DIMENSION_GEMM_M   ? s.m
   : request.vary() == v1::SWEEP_DIMENSION_GEMM_N ? s.n
                                                  : s.k) = v;
  std::vector<std::string> bad;
  const std::pair<const char*, int64_t> dims[] = {
      {"m", s.m}, {"n", s.n}, {"k", s.k}, {"batch", s.batch}};
  for (const auto& [name, d] : dims) {
    if (d < 1 || d > kMaxWorkerGemmDim) {
      bad.push_back(
          absl::StrCat("gemm.", name, " ", d, " is outside [1, ", kMaxWorkerGemmDim, "]"));
    }
  }
  if (bad.empty() && !(GemmFlops(s) <= kMaxWorkerGemmFlops)) {
    bad.push_back(absl::StrCat("more than ", kMaxWorkerGemmFlops, " FLOPs"));
  }
  if (bad.empty()) {
    p.gemm = GemmKey{s, layout, dtype};
  } else {
    p.invalid = absl::StrJoin(bad, "; ");
  }
  return p;
}

// The point of a model sweep at `v`: a legal model the GPU runs, or why not.
Point ModelPoint(const v1::SweepRequest& request, const GpuSpec& gpu, int64_t v) {
  Point p;
  p.value = v;
  v1::ModelSpec m = request.model();
  SetModelField(&m, request.vary(), v);
  absl::StatusOr<ModelSpec> spec = SpecFromRequest(m, "model.");
  if (!spec.ok()) {
    p.invalid = std::string(spec.status().message());
  } else if (absl::Status st = CheckDtypeSupported(spec->dtype, gpu); !st.ok()) {
    p.invalid = std::string(st.message());
  } else {
    p.spec = *std::move(spec);
  }
  return p;
}

// The points: each a legal shape, or why not (a point that is not legal stays in the answer).
absl::StatusOr<std::vector<Point>> PointsOf(const v1::SweepRequest& request, const GpuSpec& gpu,
                                            const std::vector<int64_t>& values) {
  std::vector<Point> points;
  if (IsGemmDimension(request.vary())) {
    if (!request.has_gemm()) {
      return FieldError("gemm", "give the GEMM to vary (m, n, k; batch optional)");
    }
    ASSIGN_OR_RETURN(Layout layout, FromProto(request.layout()));
    ASSIGN_OR_RETURN(DType dtype, FromProto(request.dtype()));
    RETURN_IF_ERROR(CheckDtypeSupported(dtype, gpu));
    for (int64_t v : values) points.push_back(GemmPoint(request, layout, dtype, v));
  } else {
    if (!request.has_model()) return FieldError("model", "give the model to vary");
    RETURN_IF_ERROR(SpecFromRequest(request.model(), "model.").status());
    for (int64_t v : values) points.push_back(ModelPoint(request, gpu, v));
  }
  return points;
}

// The distinct GEMMs a point needs (fused attention is not a cuBLASLt GEMM).
std::vector<GemmKey> GemmKeysOf(const Point& p) {
  std::vector<GemmKey> keys;
  if (p.gemm) keys.push_back(*p.gemm);
  if (p.spec) {
    for (const Gemm& g : BuildGemms(*p.spec)) {
      if (!g.fused_attention) keys.push_back(g.key());
    }
  }
  return keys;
}

// Measuring: the distinct GEMMs of the points, in order of value, within the GPU-time budget.
// Returns the measured (or cached) times; notes and counts go into `response`.
absl::StatusOr<absl::flat_hash_map<GemmKey, GemmTime>> MeasurePoints(
    const CallContext& ctx, const v1::SweepRequest& request, const GpuTarget& target, v1::Mode mode,
    const std::vector<Point>& points, ScoreCache& predicted, v1::SweepResponse& response) {
  absl::flat_hash_map<GemmKey, GemmTime> measured;
  const double budget_s =
      request.max_gpu_seconds() == 0 ? kDefaultMaxGpuSeconds : request.max_gpu_seconds();
  std::vector<GemmKey> keys;
  absl::flat_hash_map<GemmKey, bool> seen;
  double cost = 0, needed = 0;
  for (const Point& p : points) {
    for (const GemmKey& k : GemmKeysOf(p)) {
      if (!seen.emplace(k, true).second) continue;
      const double c = predicted.Get(k).time_s * kMeasureCostFactor;
      needed += c;
      if (cost + c <= budget_s) {
        cost += c;
        keys.push_back(k);
      }
    }
  }
  if (keys.size() < seen.size()) {
    if (mode == v1::MODE_MEASURED) {
      return FieldError("max_gpu_seconds",
                        absl::StrCat("measuring the sweep's ", seen.size(),
                                     " distinct GEMMs needs about ", std::ceil(needed),
                                     " s of GPU time; raise max_gpu_seconds (at most 3600) or "
                                     "narrow the range"));
    }
    response.add_notes(absl::StrCat("the GPU-time budget (", budget_s, " s) covers ", keys.size(),
                                    " of ", seen.size(),
                                    " distinct GEMMs; the rest are PREDICTED"));
  }
  ReportProgress(ctx, 0, static_cast<int64_t>(keys.size()),
                 absl::StrCat("measuring ", keys.size(), " distinct GEMMs"));
  MeasureCounts counts;
  absl::StatusOr<std::vector<std::optional<GemmTime>>> times = MeasureGemmTimes(
      ctx, target, mode, keys, MeasureBy(ctx, budget_s),
      [&](int64_t done, int64_t total) { ReportProgress(ctx, done, total, "measuring GEMMs"); },
      &counts);
  RETURN_IF_ERROR(StopStatus(ctx));
  if (!times.ok()) {
    if (mode == v1::MODE_MEASURED) return times.status();
    response.add_notes(absl::StrCat("measurement failed (", times.status().message(),
                                    "); every point is PREDICTED"));
    return measured;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if ((*times)[i]) measured[keys[i]] = *(*times)[i];
  }
  response.set_gemms_measured(counts.measured);
  response.set_gemms_cached(counts.cached);
  for (const std::string& n : counts.notes) response.add_notes(n);
  return measured;
}

// Scoring: every point, with `times` for its GEMMs.
absl::Status ScorePoints(const CallContext& ctx, const std::vector<Point>& points,
                         const GpuSpec& gpu, ScoreCache& times, v1::SweepResponse& response) {
  for (size_t i = 0; i < points.size(); ++i) {
    if (i % 64 == 0) {
      RETURN_IF_ERROR(StopStatus(ctx));
      ReportProgress(ctx, static_cast<int64_t>(i), static_cast<int64_t>(points.size()),
                     "scoring points");
    }
    const Point& p = points[i];
    v1::SweepPoint* out = response.add_points();
    out->set_value(p.value);
    out->set_valid(p.invalid.empty());
    if (!p.invalid.empty()) {
      out->set_invalid_reason(p.invalid);
      continue;
    }
    if (p.gemm) {
      FillGemmPoint(*p.gemm, times.Get(*p.gemm), gpu, out);
    } else {
      const CandidateScore s =
          ScoreCandidate(*p.spec, gpu, times, BudgetParams(*p.spec, CountParams(*p.spec)));
      FillModelPoint(s, gpu, out);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::SweepResponse> RunSweep(const v1::SweepRequest& request,
                                           const CallContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> values, SweepValues(request));
  ASSIGN_OR_RETURN(const GpuTarget target, ResolveCallGpu(ctx, request.gpu(), "gpu"));
  const GpuSpec* gpu = target.spec;
  const v1::Mode mode =
      request.mode() == v1::MODE_UNSPECIFIED ? v1::MODE_PREDICTED : request.mode();
  if (!(request.max_gpu_seconds() >= 0 && request.max_gpu_seconds() <= 3600)) {
    return FieldError("max_gpu_seconds",
                      absl::StrCat("must be in [0, 3600]; got ", request.max_gpu_seconds()));
  }
  ASSIGN_OR_RETURN(const std::vector<Point> points, PointsOf(request, *gpu, values));
  v1::SweepResponse response;
  response.set_gpu(gpu->name);
  response.set_vary(request.vary());
  response.set_mode(mode);
  if (!IsGemmDimension(request.vary())) {
    // PointsOf checked the model: what every point assumes besides the varied dimension.
    if (absl::StatusOr<ModelSpec> base = SpecFromRequest(request.model(), "model."); base.ok()) {
      *response.mutable_assumed() = AssumedOf(*base);
    }
  }
  ScoreCache predicted([gpu](const GemmKey& k) {
    const GemmPrediction p = PredictGemm(*gpu, k);
    return GemmTime{p.time_s, 0, false, p.band_p10, p.band_p90};
  });
  const MeasureAvailability can = Availability(ctx, target);
  if (mode == v1::MODE_MEASURED && !can.can_measure) {
    if (!can.error.ok()) return can.error;
    return absl::UnavailableError(can.reason);
  }
  absl::flat_hash_map<GemmKey, GemmTime> measured;
  if (mode != v1::MODE_PREDICTED && can.can_measure) {
    ASSIGN_OR_RETURN(measured,
                     MeasurePoints(ctx, request, target, mode, points, predicted, response));
  } else if (mode == v1::MODE_AUTO) {
    response.add_notes(absl::StrCat(can.reason, ": every point is PREDICTED"));
  }
  // The points left predicted are scaled to agree with the ones measured beside them, so that a
  // curve does not jump where the budget ended.
  MixedTimes mixed(std::move(measured), predicted);
  ScoreCache times([&](const GemmKey& key) { return mixed.Get(key); });
  RETURN_IF_ERROR(ScorePoints(ctx, points, *gpu, times, response));
  response.set_gemms_predicted(mixed.unmeasured());
  if (std::string note = ScaledNote(mixed, "GEMMs of the points"); !note.empty()) {
    response.add_notes(std::move(note));
  }
  response.set_done(true);
  ReportProgress(ctx, static_cast<int64_t>(points.size()), static_cast<int64_t>(points.size()),
                 "done");
  return response;
}

absl::StatusOr<v1::SweepRequest> AcceptSweep(v1::SweepRequest request) {
  RETURN_IF_ERROR(ResolveHfConfig(&request));
  if (request.gpu().empty()) return FieldError("gpu", GpuRequired());
  RETURN_IF_ERROR(SweepValues(request).status());
  return request;
}

absl::StatusOr<MeasureCounts> StreamSweep(const v1::SweepRequest& request, const CallContext& ctx,
                                          const Send<v1::SweepResponse>& send) {
  ASSIGN_OR_RETURN(v1::SweepResponse response, RunSweep(request, ctx));
  const MeasureCounts counts = GemmCountsOf(response);
  send(std::move(response));
  return counts;
}

}  // namespace wavecrest
