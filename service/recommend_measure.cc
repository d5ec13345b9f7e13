// Recommend's measuring stage: the best K by the analytic model and the baseline, as many as
// the GPU-time budget covers, their GEMMs and whole layers timed through the measurer, re-scored
// and re-ranked ahead of the rest.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/cost_model.h"
#include "core/layers.h"
#include "core/status_macros.h"
#include "service/recommend_logic.h"
#include "service/recommend_ranking.h"

namespace wavecrest {
namespace recommend_internal {
namespace {

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

// The plan's GEMMs as measured (or cached) by key, and how many of them were measured.
struct MeasuredGemms {
  absl::flat_hash_map<GemmKey, GemmTime> by_key;
  int64_t measured_keys = 0;
};

// Times the plan's GEMMs through the measurer; their counts and notes go into the response.
// Nullopt when measuring failed in MODE_AUTO: the ranking stays PREDICTED (a note says why).
absl::StatusOr<std::optional<MeasuredGemms>> MeasurePlannedGemms(const CallContext& ctx,
                                                                 const MeasurePlan& plan,
                                                                 absl::Time measure_by,
                                                                 Ranking& r) {
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
    return std::nullopt;
  }
  MeasuredGemms out;
  for (size_t i = 0; i < plan.gemms.size(); ++i) {
    if (!(*times)[i]) continue;
    out.by_key[plan.gemms[i]] = *(*times)[i];
    out.measured_keys += (*times)[i]->measured;
  }
  return out;
}

// The chosen rows re-scored with the measured times and ranked, each change undone again where
// measured it no longer earns its keep; returns how many rest on whole-layer measurements.
int64_t RescoreChosen(const MeasurePlan& plan, ScoreCache& measured,
                      const LayerTimeFn& layer_times, Ranking& r) {
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
  return whole;
}

// The rows not chosen keep their predicted ranking, after the measured ones.
void KeepTheRestPredicted(const MeasurePlan& plan, Ranking& r) {
  std::vector<CandidateScore> rest;
  for (size_t i = 0; i < r.scores.size(); ++i) {
    if (std::find(plan.chosen.begin(), plan.chosen.end(), i) == plan.chosen.end()) {
      rest.push_back(std::move(r.scores[i]));
    }
  }
  r.scores = std::move(rest);
}

}  // namespace

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
  ASSIGN_OR_RETURN(std::optional<MeasuredGemms> gemms,
                   MeasurePlannedGemms(ctx, plan, measure_by, r));
  if (!gemms) return absl::OkStatus();
  // The GEMMs of these rows left predicted (the budget ended, or a GEMM failed) are scaled to
  // agree with the ones measured beside them, so that no row gains from being measured.
  MixedTimes mixed(std::move(gemms->by_key), predicted);
  ScoreCache measured([&](const GemmKey& key) { return mixed.Get(key); });
  ASSIGN_OR_RETURN(const LayerTimeFn layer_times,
                   MeasureLayers(ctx, r.gpu, r.mode, plan.layers, measure_by, &r.response));
  const int64_t whole = RescoreChosen(plan, measured, layer_times, r);
  if (std::string note = ScaledNote(mixed, "GEMMs of the measured rows"); !note.empty()) {
    r.response.add_notes(std::move(note));
  }
  KeepTheRestPredicted(plan, r);
  AddMeasuringNotes(static_cast<int64_t>(r.measured_group.size()), gemms->measured_keys,
                    plan.gemms.size(), whole, r.response);
  return absl::OkStatus();
}

}  // namespace recommend_internal
}  // namespace wavecrest
