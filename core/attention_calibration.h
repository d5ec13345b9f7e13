// Calibration of the fused-attention model (attention_cost.h, PredictFusedAttention) against
// published attention timings: the CSV schema, the fit, and its cross-validation.
//
// Attention CSV (data/measurements/README.md), one kernel run per row, '#' lines are comments:
//
//   source,gpu,dtype,pass,causal,batch,heads,seq,head_dim,tflops,median_s,method,device
//
// `pass` is forward or backward, `causal` true or false; self-attention of `seq` tokens,
// `batch` × `heads` heads of `head_dim`. FLOPs are counted as FlashAttention counts them
// (4·batch·heads·seq²·head_dim forward, half under a causal mask, 2.5× that backward):
// median_s = FLOPs / tflops, and the parser checks the two agree.
#ifndef WAVECREST_CORE_ATTENTION_CALIBRATION_H_
#define WAVECREST_CORE_ATTENTION_CALIBRATION_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/calibration.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"

namespace wavecrest {

// AttentionMeasurement and kAttentionHeader: core/calibration.h.

// INVALID_ARGUMENT names the line and the field.
absl::StatusOr<std::vector<AttentionMeasurement>> ParseAttentionCsv(absl::string_view text,
                                                                    absl::string_view origin);
absl::StatusOr<std::vector<AttentionMeasurement>> ReadAttentionFile(const std::string& path);

// The FLOPs the row's source counts (the convention above).
double AttentionWorkFlops(const AttentionMeasurement& row);
// The fused-attention kernel of a row, as the model predicts it.
Gemm AttentionGemm(const AttentionMeasurement& row);
// "forward causal d128": the series a row belongs to (what cross-validation leaves out whole).
std::string AttentionSeries(const AttentionMeasurement& row);

// The parameters the attention fit moves (gpu_catalog.h: flash_*), with their bounds.
const std::vector<FittedParam>& AttentionFittedParams();

struct AttentionFit {
  std::string gpu;
  DType dtype = DType::kBf16;
  int64_t rows = 0;
  CostModelParams params;  // the prior's, with the attention fields fitted
  ErrorStats train;        // the fit, on the rows it was fitted to
  // Each sequence length predicted by a fit to the other lengths only.
  ErrorStats cv;
  // Harder: each series (pass, mask, head dim) predicted by a fit to the other series only, how
  // well the model carries to a head dim or mask it was not fitted to. A series whose pass has
  // no other head dim cannot inform the head-dim exponent of that pass: it is predicted with the
  // uncalibrated exponent, and says so by its error.
  ErrorStats cv_series;
  std::vector<std::pair<std::string, ErrorStats>> cv_by_series;
};

// Fits the attention parameters of `prior` for `dtype` to `rows` (one GPU kind, one dtype class)
// with a log-error loss, from the uncalibrated constants (so that no fit starts from values fitted
// to the rows it is judged on), and cross-validates by sequence length and by series.
// Deterministic.
AttentionFit FitAttention(const GpuSpec& prior, DType dtype,
                          const std::vector<AttentionMeasurement>& rows, const FitOptions& options);

// Whether a fit to `fit_gpu`'s rows is the fit `gpu` uses: its own, and H100's for H200 (the same
// chip). Every other GPU keeps the built-in constants (the H100 fit) as priors.
bool AttentionFitApplies(absl::string_view fit_gpu, absl::string_view gpu);

// `wavecrest calibrate`'s attention step: each GPU and dtype class in `rows` fitted once (on its
// spec in `catalog`), its band (the cross-validation by length, widened by the held-out `checks`
// of the GPUs the fit applies to, predicted with the fit), and the report: the fit, its
// cross-validations, the catalog's constants beside it, the model before this calibration (full
// work under a causal mask, fraction scaled by d/128: cost model v2's priors), and the checks.
// Checks of a GPU no fit applies to measure how the priors transfer: that GPU's band is the
// H100 fit's band widened by them (`prior_bands`); they leave the fitted GPUs' bands alone.
struct AttentionCalibration {
  struct Group {
    AttentionFit fit;
    double band_p10 = 0, band_p90 = 0;
  };
  std::vector<Group> groups;
  struct PriorBand {
    std::string gpu;
    DType dtype = DType::kBf16;
    double band_p10 = 0, band_p90 = 0;
  };
  std::vector<PriorBand> prior_bands;
  std::string report;
};
AttentionCalibration CalibrateAttention(const std::vector<GpuSpec>& catalog,
                                        const std::vector<AttentionMeasurement>& rows,
                                        const std::vector<AttentionMeasurement>& checks,
                                        const FitOptions& options);

// measured / predicted time of each row on `gpu` as it is.
std::vector<double> AttentionRatios(const GpuSpec& gpu,
                                    const std::vector<AttentionMeasurement>& rows);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_ATTENTION_CALIBRATION_H_
