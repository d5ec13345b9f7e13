// Self-calibration from the fleet: the result cache's GPU measurements refit the cost model for
// their device kinds (at start, and on request), and can be exported in the measurement CSV
// schema (data/measurements/README.md) for `wavecrest calibrate`.
#ifndef WAVECREST_SERVER_SELF_CALIBRATION_H_
#define WAVECREST_SERVER_SELF_CALIBRATION_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/calibration.h"
#include "server/result_cache.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {

struct SelfCalibrationOptions {
  // GPU measurements a (kind, dtype class) needs before it is refitted; 0 = never refit.
  int64_t min_rows = 64;
  FitOptions fit;
};

// The cache's GPU measurements as measurement rows (source "wavecrest-result-cache").
std::vector<Measurement> CachedMeasurements(ResultCache& cache, absl::string_view kind);

class SelfCalibration {
 public:
  SelfCalibration(ResultCache* cache, SelfCalibrationOptions options)
      : cache_(cache), options_(std::move(options)) {}

  // Refits every (kind, dtype class) with at least `min_rows` measurements (options' when 0),
  // only `kind` when not empty, and publishes the new catalog (core/gpu_catalog.h). Predictions
  // for a refitted kind then name this deployment's measurements as their calibration.
  v1::RecalibrateResponse Run(absl::string_view kind, int64_t min_rows);

 private:
  ResultCache* cache_;
  SelfCalibrationOptions options_;
  std::mutex mu_;  // one refit at a time
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_SELF_CALIBRATION_H_
