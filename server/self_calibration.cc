#include "server/self_calibration.h"

#include <algorithm>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "core/cost_model.h"
#include "service/convert.h"
#include "service/log.h"

namespace wavecrest {

std::vector<Measurement> StoredMeasurements(MeasurementStore& store, absl::string_view kind) {
  return MeasurementRows(store.Measurements(kind));
}

absl::StatusOr<std::vector<Measurement>> StoredMeasurementsBy(MeasurementStore& store,
                                                              absl::string_view kind,
                                                              absl::Time deadline) {
  auto stored = store.MeasurementsBy(kind, deadline);
  if (!stored.ok()) return stored.status();
  return MeasurementRows(*stored);
}

std::vector<Measurement> MeasurementRows(
    const std::vector<std::pair<std::string, v1::GemmTiming>>& stored) {
  std::vector<Measurement> out;
  for (const auto& [k, t] : stored) {
    const absl::StatusOr<DType> dtype = FromProto(t.dtype());
    const absl::StatusOr<Layout> layout = FromProto(t.layout());
    if (!dtype.ok() || !layout.ok() || !FindGpu(k).ok()) continue;
    // Only what a framework gets (the heuristic's choice) by the current timing method: autotuned
    // figures and those of an older method do not describe what the model predicts.
    const std::string& method = t.provenance().method();
    if (!absl::StartsWith(method, absl::StrCat(kCublasLtMethod, " ")) ||
        !absl::StrContains(method, " heuristic")) {
      continue;
    }
    Measurement m;
    m.source = "wavecrest-result-cache";
    m.gpu = k;
    m.key.shape = {t.shape().m(), t.shape().n(), t.shape().k(),
                   std::max<int64_t>(1, t.shape().batch())};
    m.key.layout = *layout;
    m.key.dtype = *dtype;
    m.median_s = t.time_s();
    m.method = t.provenance().method();
    m.device = t.provenance().device().name();
    out.push_back(std::move(m));
  }
  return out;
}

namespace {

// The fitted parameters and their label on `gpu` for every dtype `dtype`'s rows serve; what the
// rows could not show (no misaligned GEMM of a kind, say) stays as it was. The entry to store.
CalibrationEntry ApplyFit(const FitResult& fit, DType dtype, const CalibrationInfo& info,
                          GpuSpec& gpu) {
  CalibrationEntry entry;
  entry.gpu = gpu.name;
  for (DType d : DTypesServedBy(dtype)) {
    CostModelParams params = fit.params;
    for (const FittedParam& f : FittedParams()) {
      const bool moved = std::any_of(fit.fitted.begin(), fit.fitted.end(),
                                     [&](const FittedParam& m) { return m.field == f.field; });
      if (!moved) params.*(f.field) = gpu.Model(d).*(f.field);
    }
    gpu.Model(d) = params;
    const std::optional<CalibrationInfo::Band> kept = gpu.Calibration(d).misaligned_band;
    gpu.Calibration(d) = info;
    if (!info.misaligned_band) gpu.Calibration(d).misaligned_band = kept;
    entry.dtypes.push_back(d);
    entry.params = gpu.Model(d);
    entry.info = gpu.Calibration(d);
  }
  return entry;
}

}  // namespace

v1::RecalibrateResponse SelfCalibration::Run(absl::string_view kind, int64_t min_rows) {
  std::lock_guard<std::mutex> lock(mu_);
  if (min_rows <= 0) min_rows = options_.min_rows;
  v1::RecalibrateResponse response;
  // Rows by (kind, dtype class): FP16 measurements are fitted with BF16's parameters.
  std::map<std::pair<std::string, DType>, std::vector<Measurement>> groups;
  for (Measurement& m : StoredMeasurements(*store_, kind)) {
    const DType cls = FitClass(m.key.dtype);
    groups[{m.gpu, cls}].push_back(std::move(m));
  }
  std::vector<GpuSpec> catalog = GpuCatalog();
  bool changed = false;
  CalibrationFile refit;  // what changed, for the store
  refit.model = std::string(kCostModelName);
  refit.created = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", clock_->Now(), absl::UTCTimeZone());
  refit.command = absl::StrCat("self-calibration by ", owner_.empty() ? "a server" : owner_);
  for (auto& [key, rows] : groups) {
    changed |= RefitGroup(key.first, key.second, rows, min_rows, catalog, refit,
                          response.add_results());
  }
  if (changed) Publish(std::move(catalog), refit, response);
  return response;
}

bool SelfCalibration::RefitGroup(const std::string& gpu_name, DType dtype,
                                 const std::vector<Measurement>& rows, int64_t min_rows,
                                 std::vector<GpuSpec>& catalog, CalibrationFile& refit,
                                 v1::RecalibrationResult* r) {
  r->set_gpu(gpu_name);
  r->set_dtype(ToProto(dtype));
  r->set_rows(static_cast<int64_t>(rows.size()));
  auto it = std::find_if(catalog.begin(), catalog.end(),
                         [&](const GpuSpec& g) { return g.name == gpu_name; });
  if (it == catalog.end() || !it->Supports(dtype)) {
    r->set_reason("not a catalogued GPU and dtype");
    return false;
  }
  if (static_cast<int64_t>(rows.size()) < min_rows || min_rows <= 0) {
    r->set_reason(absl::StrCat("needs at least ", min_rows, " measurements to refit"));
    return false;
  }
  // Start from the built-in priors so that a refit never compounds an earlier one.
  const std::vector<GpuSpec> priors = PriorCatalog();
  const GpuSpec& prior = *std::find_if(priors.begin(), priors.end(),
                                       [&](const GpuSpec& g) { return g.name == gpu_name; });
  const FitResult fit = FitAndValidate(prior, dtype, rows, options_.fit);
  CalibrationInfo info;
  info.calibrated = true;
  info.bands = fit.bands;
  info.misaligned_band = fit.misaligned_band;
  info.label = absl::StrFormat(
      "fitted to this deployment's own measurements (wavecrest-result-cache, %s %s, %d rows), "
      "%d-fold CV median error %.1f%%",
      gpu_name, DTypeName(dtype), fit.rows, options_.fit.folds, 100 * fit.cv.median_abs);
  CalibrationEntry entry = ApplyFit(fit, dtype, info, *it);
  refit.datasets.push_back(absl::StrCat("wavecrest-result-cache: ", gpu_name, " ",
                                        DTypeName(dtype), ", ", fit.rows, " rows"));
  refit.entries.push_back(std::move(entry));
  r->set_applied(true);
  r->set_cv_median_error(fit.cv.median_abs);
  r->set_cv_p90_error(fit.cv.p90_abs);
  r->set_label(info.label);
  LogInfo("recalibrated", {{"gpu", gpu_name},
                           {"dtype", std::string(DTypeName(dtype))},
                           {"rows", fit.rows},
                           {"cv_median_error", absl::StrFormat("%.4f", fit.cv.median_abs)}});
  return true;
}

void SelfCalibration::Publish(std::vector<GpuSpec> catalog, const CalibrationFile& refit,
                              v1::RecalibrateResponse& response) {
  PublishCatalog(std::move(catalog));
  absl::StatusOr<int64_t> version = store_->PublishCalibration(SerializeCalibration(refit), owner_);
  if (version.ok()) {
    applied_version_ = *version;
    response.set_calibration_version(*version);
    LogInfo("calibration stored", {{"version", *version}, {"store", store_->Describe()}});
  } else {
    LogWarning("calibration not stored: other replicas keep theirs",
               {{"error", std::string(version.status().message())}});
  }
}

bool SelfCalibration::Adopt() {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<StoredCalibration> latest = store_->LatestCalibration();
  if (!latest || latest->version <= applied_version_) return false;
  absl::StatusOr<CalibrationFile> file = ParseCalibration(latest->file_json);
  std::vector<GpuSpec> catalog = GpuCatalog();
  absl::Status st = file.ok() ? ApplyCalibration(*file, catalog) : file.status();
  // A version this build cannot apply (another cost model) is skipped, not retried.
  applied_version_ = latest->version;
  if (!st.ok()) {
    LogWarning("stored calibration not applied",
               {{"version", latest->version}, {"error", std::string(st.message())}});
    return false;
  }
  PublishCatalog(std::move(catalog));
  LogInfo("calibration adopted from the store", {{"version", latest->version},
                                                  {"refitted_by", latest->created_by},
                                                  {"entries", file->entries.size()}});
  return true;
}

int64_t SelfCalibration::AppliedVersion() {
  std::lock_guard<std::mutex> lock(mu_);
  return applied_version_;
}

}  // namespace wavecrest
