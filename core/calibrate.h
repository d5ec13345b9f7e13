// The whole `wavecrest calibrate` run, GPU-free (core/calibrate.cc); the pieces it uses (files,
// fits, the calibration file) are core/calibration.h's.
#ifndef WAVECREST_CORE_CALIBRATE_H_
#define WAVECREST_CORE_CALIBRATE_H_

#include <functional>
#include <string>
#include <vector>

#include "core/attention_calibration.h"
#include "core/calibration.h"

namespace wavecrest {

// Everything `wavecrest calibrate` does, GPU-free: fits each (GPU, dtype) the data covers, carries
// fits to GPUs that share the silicon (H200 from H100), gives GPUs without data priors with the
// fitted structure of the nearest fitted GPU and a peak fraction anchored to a published figure
// where one exists, fits the misalignment penalty to published ratios, and checks every dataset.
struct CalibrateInputs {
  std::vector<Measurement> fit_rows;     // fitted (by GPU and dtype class)
  std::vector<Measurement> anchor_rows;  // one figure per GPU: sets an unfitted GPU's peak
  std::vector<Measurement> check_rows;   // never fitted: reported as held-out checks
  std::vector<TimeRatio> ratios;         // published ratios: fit the misalignment penalty
  // Fused-attention times (core/attention_calibration.h): fitted per GPU and dtype class, and
  // held-out checks; their error band is the wider of the fit's cross-validation and the checks.
  std::vector<AttentionMeasurement> attention_rows;
  std::vector<AttentionMeasurement> attention_checks;
  std::vector<std::string> dataset_labels;
};
struct CalibrateOutput {
  CalibrationFile file;
  std::string report;  // the human-readable report (bench/results/calibration.txt)
};
CalibrateOutput Calibrate(const CalibrateInputs& in, const FitOptions& options,
                          const std::function<void(const std::string&)>& progress);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_CALIBRATE_H_
