// Self-calibration from the fleet: the measurement store's GPU measurements refit the cost model
// for their device kinds (at start, and on request), and can be exported in the measurement CSV
// schema (data/measurements/README.md) for `wavecrest calibrate`.
#ifndef WAVECREST_SERVER_SELF_CALIBRATION_H_
#define WAVECREST_SERVER_SELF_CALIBRATION_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/calibration.h"
#include "server/measurement_store.h"
#include "service/clock.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {

struct SelfCalibrationOptions {
  // GPU measurements a (kind, dtype class) needs before it is refitted; 0 = never refit.
  int64_t min_rows = 64;
  FitOptions fit;
};

// The store's GPU measurements as measurement rows (source "wavecrest-result-cache").
std::vector<Measurement> StoredMeasurements(MeasurementStore& store, absl::string_view kind);
// The same, read by `deadline`; the store's error when it could not give them all by then.
absl::StatusOr<std::vector<Measurement>> StoredMeasurementsBy(MeasurementStore& store,
                                                              absl::string_view kind,
                                                              absl::Time deadline);
// Stored GPU timings (with their kinds) as measurement rows: those of the current cuBLASLt
// heuristic method on a catalogued kind.
std::vector<Measurement> MeasurementRows(
    const std::vector<std::pair<std::string, v1::GemmTiming>>& stored);

// A refit is versioned in the store: the refitted entries (a calibration file, core/
// calibration.h) are stored as the newest version, and every replica of a shared store applies
// the newest it has not applied (Adopt, polled by the server), so that all of them answer from
// the same calibration. Each entry starts from the built-in priors, so adopting a version never
// compounds an earlier one.
class SelfCalibration {
 public:
  // `clock` dates the refits stored (the wall clock unless a test gives its own).
  SelfCalibration(MeasurementStore* store, SelfCalibrationOptions options, std::string owner = "",
                  Clock* clock = &Clock::Real())
      : store_(store), options_(std::move(options)), owner_(std::move(owner)), clock_(clock) {}

  // Refits every (kind, dtype class) with at least `min_rows` measurements (options' when 0),
  // only `kind` when not empty, publishes the new catalog (core/gpu_catalog.h) and stores the
  // refit as the newest calibration version. Predictions for a refitted kind then name this
  // deployment's measurements as their calibration.
  v1::RecalibrateResponse Run(absl::string_view kind, int64_t min_rows);

  // Applies the store's newest calibration when it is newer than the one applied here (another
  // replica refitted). True when it applied one.
  bool Adopt();

  // The calibration version this process answers from (0: none from the store).
  int64_t AppliedVersion();

 private:
  // One (kind, dtype class)'s refit into `catalog` and `refit`, its outcome in `r`; true when it
  // was refitted.
  bool RefitGroup(const std::string& gpu_name, DType dtype, const std::vector<Measurement>& rows,
                  int64_t min_rows, std::vector<GpuSpec>& catalog, CalibrationFile& refit,
                  v1::RecalibrationResult* r);
  // Publishes the refitted catalog and stores `refit` as the newest calibration version.
  void Publish(std::vector<GpuSpec> catalog, const CalibrationFile& refit,
               v1::RecalibrateResponse& response);

  MeasurementStore* store_;
  SelfCalibrationOptions options_;
  std::string owner_;
  Clock* clock_;
  std::mutex mu_;  // one refit or adoption at a time
  int64_t applied_version_ = 0;
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_SELF_CALIBRATION_H_
