// Calibration of the analytic cost model against measurements: the measurement CSV schema, the
// error statistics, the fitter (k-fold cross-validated, per GPU and dtype), and the versioned
// calibration file the catalog loads.
//
// Measurement CSV (data/measurements/README.md), one GEMM per row, '#' lines are comments (the
// device plan's torch GEMM sweep and XLA's table are read in their own schemas too):
//
//   source,gpu,dtype,dtype_detail,layout,m,n,k,batch,median_s,tflops,method,device
//
// Shapes are the paper's row-major C[M×N] = op(A)[M×K]·op(B)[K×N], repeated `batch` times; layout
// is cuBLAS's (core/gemm.h). XLA's published table (gpu,b,m,n,k,dtype,flops_per_s) is read too.
//
// Error convention: a row's error is measured_time / predicted_time − 1 (equivalently predicted /
// measured throughput − 1); "median error" is the median of its absolute value.
#ifndef WAVECREST_CORE_CALIBRATION_H_
#define WAVECREST_CORE_CALIBRATION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"

namespace wavecrest {

inline constexpr absl::string_view kMeasurementsHeader =
    "source,gpu,dtype,dtype_detail,layout,m,n,k,batch,median_s,tflops,method,device";
inline constexpr absl::string_view kCalibrationSchema = "wavecrest-calibration/1";

struct Measurement {
  std::string source;        // dataset id, e.g. "xla-default-matmul-perf-table"
  std::string gpu;           // catalog name
  GemmKey key;               // shape, layout, dtype
  std::string dtype_detail;  // as published ("f8e4m3fnxf8e5m2->bf16"); empty when = dtype
  double median_s = 0;
  std::string method;  // how it was measured
  std::string device;  // device fingerprint or name, when known
  double spread = 0;   // relative spread of the samples, where the source gives it (else 0)
};

// Parses our schema or XLA's table. INVALID_ARGUMENT names the line and the field.
absl::StatusOr<std::vector<Measurement>> ParseMeasurementsCsv(absl::string_view text,
                                                              absl::string_view origin);
absl::StatusOr<std::vector<Measurement>> ReadMeasurementsFile(const std::string& path);
std::string FormatMeasurementsCsv(const std::vector<Measurement>& rows);

// Published fused-attention times (schema and fit: core/attention_calibration.h).
inline constexpr absl::string_view kAttentionHeader =
    "source,gpu,dtype,pass,causal,batch,heads,seq,head_dim,tflops,median_s,method,device";
struct AttentionMeasurement {
  std::string source;
  std::string gpu;  // catalog name
  DType dtype = DType::kBf16;
  Pass pass = Pass::kForward;  // kForward or kBackward
  bool causal = false;
  int64_t batch = 0, heads = 0, seq = 0, head_dim = 0;
  double median_s = 0;
  std::string method, device;
};

// Published time ratios (data/measurements/README.md):
//   source,gpu,dtype,layout,m,n,k,batch,ref_m,ref_n,ref_k,ref_batch,time_ratio,method
// time_ratio = time(m,n,k,batch) / time(ref shape), same GPU, dtype and layout.
struct TimeRatio {
  Measurement row;  // median_s holds the ratio
  GemmShape reference;
};
absl::StatusOr<std::vector<TimeRatio>> ParseRatiosCsv(absl::string_view text,
                                                      absl::string_view origin);

// Errors of predictions against measurements.
struct ErrorStats {
  int64_t rows = 0;
  double median_abs = 0;  // median |measured/predicted − 1|
  double p90_abs = 0;
  double max_abs = 0;
  double median_signed = 0;  // > 0: the model is too fast
  double p10 = 0;            // of measured/predicted − 1
  double p90 = 0;
};
ErrorStats ErrorsOf(const std::vector<double>& ratios);  // ratios = measured / predicted time

// The method of XLA's published table (ParseMeasurementsCsv sets it on its rows).
inline constexpr absl::string_view kXlaTableMethod = "xla-perf-table";

// The model's prediction of what `m`'s method reports. Most methods time the GEMM as a whole
// (PredictGemmTime). XLA's table records the median duration of every kernel its profiler traced
// while running the dot (xla/tools/matmul_perf_table_gen.cc, Profile: getMedianKernelTimeNs over
// the runs): where the dot runs as two kernels, each as often, that median is the mean of the two,
// not their sum. FP8 on Hopper runs only as TN, so XLA's NN FP8 dots there run a transpose and
// then the GEMM, and the table reports about half the GEMM's time where the transpose is short:
// the 71 H100 rows "faster than the dense FP8 peak" (up to 2620 TFLOP/s, 1.32x the 1979 peak).
double PredictAsMeasured(const GpuSpec& gpu, const Measurement& m);
// Whether `m`'s figure is a GEMM's whole time, which no kernel makes faster than the datasheet
// peak (false for XLA's two-kernel rows above).
bool TimesWholeGemm(const GpuSpec& gpu, const Measurement& m);

// measured / predicted time for each row (PredictAsMeasured), on `gpu` as it is.
std::vector<double> Ratios(const GpuSpec& gpu, const std::vector<Measurement>& rows);

// The parameters the fitter moves, with their bounds. Some describe only some GEMMs: they move
// only when the data hold enough of those (kMinRowsToFitAClass), else keep their start value.
enum class FitsOnly {
  kAny,           // every GEMM
  kFp8Transpose,  // FP8 in a layout other than TN, on GPUs that run FP8 as TN only
  kNarrowTn,      // a leading dimension below 4 bytes of alignment, by layout (TN: the inputs')
  kNarrowTnOutput,  // TN with only the output's leading dimension below 4 bytes
  kNarrowNn,
  kNarrowNt,
  kVector,        // the smallest alignment 4 or 8 bytes
  kMisaligned,    // either of the above
  kNarrow,        // the smallest alignment below 4 bytes, any layout
  kStreamK,       // 16-byte aligned on a GPU with stream-K kernels (Hopper and later)
};
struct FittedParam {
  const char* name;
  double CostModelParams::*field;
  double lo, hi;
  FitsOnly only = FitsOnly::kAny;
};
inline constexpr int kMinRowsToFitAClass = 4;
const std::vector<FittedParam>& FittedParams();
// Whether a GEMM is of the class a parameter describes.
bool InClass(FitsOnly only, const GpuSpec& gpu, const GemmKey& key);
// The ones that change `dtype`'s predictions on `gpu` for these rows (the others are not fitted).
std::vector<FittedParam> FittedParamsFor(const GpuSpec& gpu, DType dtype,
                                         const std::vector<Measurement>& rows);

struct FitOptions {
  int folds = 5;
  uint64_t seed = 20261122;
  int max_evaluations = 1500;  // Nelder-Mead evaluations per start
  int starts = 3;              // the prior, then perturbed restarts around the best
  // Size classes of the error bands, by predicted time (the last class is unbounded).
  std::vector<double> band_edges_s = {10e-6, 40e-6};
  int min_rows_per_band = 15;
};

// Aligned/misaligned pairs: a GEMM with a leading dimension below 16 bytes of alignment and the
// nearest aligned GEMM that differs from it in that one dimension (within 2%, same layout and
// batch). A team's question is the ratio of their times ("pad the vocabulary?"); the error is
// predicted ratio / measured ratio − 1.
struct PairCheck {
  GemmKey misaligned, aligned;
  double measured_ratio = 0;   // time(misaligned) / time(aligned)
  double predicted_ratio = 0;
};
std::vector<PairCheck> AlignmentPairs(const std::vector<Measurement>& rows,
                                      const std::vector<double>& predicted_s);
// The measured ratios of `p`'s family among `pairs`, sorted: the pairs of the same layout, dtype
// and batch whose misaligned shape differs from p's only in the dimension p's pair differs in, by
// at most 2%, in the same kernel family (the cost model's: below 4 bytes or not; in TN, the
// output alone or not), p included. A model smooth in the shape predicts about one ratio for them
// all, and one ratio is within 20% of every member only if max/min <= 1.2/0.8 = 1.5: the
// measurements' own scatter, reported beside each pair outside 20%.
std::vector<double> PairFamilyRatios(const std::vector<PairCheck>& pairs, const PairCheck& p);

// The same pairs measured on another GPU as the prediction of these: of the pairs in `pairs` that
// `other` also has (same two shapes), how many measured ratios in `other` lie within 20% of the
// one in `pairs`. Between GPUs of one silicon and library (H100 and H200: 132 SMs, the same
// clocks and cuBLASLt), it is what a second measurement of the same kernels reaches: a floor for
// any model held to "every pair within 20%".
struct PairReproduction {
  int matched = 0;
  int within = 0;
};
PairReproduction ReproducePairs(const std::vector<PairCheck>& pairs,
                                const std::vector<PairCheck>& other);

struct FitResult {
  std::string gpu;
  DType dtype = DType::kBf16;
  int64_t rows = 0;             // the rows fitted
  int64_t misaligned_rows = 0;  // rows with a leading dimension below 16 bytes of alignment
  CostModelParams params;
  std::vector<FittedParam> fitted;  // the parameters the fit moved
  ErrorStats before;  // the prior, on all rows
  ErrorStats train;   // the final fit, on the rows it was fitted to
  ErrorStats cv;      // k-fold: each row predicted by a fit that never saw it
  ErrorStats cv_aligned, cv_misaligned;  // the same, split by alignment
  std::vector<PairCheck> cv_pairs;       // aligned/misaligned ratios from the CV predictions
  std::vector<CalibrationInfo::Band> bands;  // from the CV residuals
  std::optional<CalibrationInfo::Band> misaligned_band;  // the misaligned rows' (≥ min_rows_per_band)
  int64_t above_peak_rows = 0;  // rows faster than the datasheet peak: mis-timed, not fitted
};

// Fits `prior`'s parameters for `dtype` to `rows` (all of one GPU kind and dtype class) with a
// log-error loss, and cross-validates. Deterministic for given options.
FitResult FitAndValidate(const GpuSpec& prior, DType dtype, const std::vector<Measurement>& rows,
                         const FitOptions& options);
// Error bands (p10, p90 of ratio − 1) of `ratios` by size class of `predicted_s`, classes as in
// `options` (merged upward until each holds min_rows_per_band rows).
std::vector<CalibrationInfo::Band> ErrorBands(const std::vector<double>& predicted_s,
                                              const std::vector<double>& ratios,
                                              const FitOptions& options);

// The fit alone (what each fold runs).
CostModelParams FitParams(const GpuSpec& prior, DType dtype, const std::vector<Measurement>& rows,
                          const FitOptions& options);
// The fitter itself: `fields` of `dtype`'s parameters of `prior` moved within their bounds to
// minimise `loss` (Nelder-Mead in bounded coordinates, from the prior, then restarts around the
// best as `options` says); the other parameters stay the prior's. Deterministic.
CostModelParams FitFields(const GpuSpec& prior, DType dtype, const std::vector<FittedParam>& fields,
                          const std::function<double(const GpuSpec&)>& loss,
                          const FitOptions& options);

// The calibration file: what the catalog loads.
struct CalibrationEntry {
  std::string gpu;
  std::vector<DType> dtypes;  // the entry applies to each
  CostModelParams params;     // tiles, split-K and flash/elementwise fields stay the prior's
  CalibrationInfo info;
};
struct CalibrationFile {
  std::string schema = std::string(kCalibrationSchema);
  std::string model;                  // kCostModelName of the fit
  std::string created;                // UTC time
  std::string command;                // how to make it again
  std::vector<std::string> datasets;  // "path (N rows, sha256 …)"
  std::vector<CalibrationEntry> entries;
};
absl::StatusOr<CalibrationFile> ParseCalibration(absl::string_view json_text);
std::string SerializeCalibration(const CalibrationFile& file);
// Applies every entry to `catalog` (NOT_FOUND for a GPU the catalog lacks; FAILED_PRECONDITION
// for a file of another model version or schema).
absl::Status ApplyCalibration(const CalibrationFile& file, std::vector<GpuSpec>& catalog);
// The calibration built into the binary (data/calibration/wavecrest-calibration.json at build
// time); a malformed built-in file is a build error caught by the tests, and leaves the priors.
void ApplyBuiltinCalibration(std::vector<GpuSpec>& catalog);
absl::string_view BuiltinCalibrationJson();

// The dtype class a measurement is fitted in: BF16 data also serves FP16 (same tensor-core rate).
// FitClass maps a measurement's dtype to its class; DTypesServedBy, a class to the dtypes it serves.
DType FitClass(DType d);
std::vector<DType> DTypesServedBy(DType fitted);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_CALIBRATION_H_
