// Fitting the cost model to measurements: error statistics, the fitted parameters and their
// bounds, the optimiser, cross-validation and error bands, and the aligned/misaligned pair checks
// (core/calibration.h). The files it reads are core/calibration_formats.cc's; the calibration
// file, core/calibration_file.cc's; the whole run, core/calibrate.cc's.
#include "core/calibration.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/attention_calibration.h"
#include "core/cost_model.h"
#include "core/csv_fields.h"
#include "core/status_macros.h"
#include "core/timing_stats.h"
#include "nlohmann/json.hpp"

namespace wavecrest {

namespace {

// Percentile, 0 for no values.
double Quantile(std::vector<double> v, double q) {
  return v.empty() ? 0 : Percentile(std::move(v), q);
}

}  // namespace

ErrorStats ErrorsOf(const std::vector<double>& ratios) {
  ErrorStats e;
  e.rows = static_cast<int64_t>(ratios.size());
  if (ratios.empty()) return e;
  std::vector<double> abs, signed_err;
  for (double r : ratios) {
    abs.push_back(std::abs(r - 1));
    signed_err.push_back(r - 1);
  }
  e.median_abs = Quantile(abs, 0.5);
  e.p90_abs = Quantile(abs, 0.9);
  e.max_abs = *std::max_element(abs.begin(), abs.end());
  e.median_signed = Quantile(signed_err, 0.5);
  e.p10 = Quantile(signed_err, 0.1);
  e.p90 = Quantile(signed_err, 0.9);
  return e;
}

bool TimesWholeGemm(const GpuSpec& gpu, const Measurement& m) {
  return m.method != kXlaTableMethod || !Fp8NeedsTn(gpu, m.key.dtype) ||
         m.key.layout == Layout::kTN;
}

double PredictAsMeasured(const GpuSpec& gpu, const Measurement& m) {
  if (TimesWholeGemm(gpu, m)) return PredictGemmTime(gpu, m.key);
  const GemmKernelTimes k = PredictGemmKernels(gpu, m.key);
  return (k.gemm_s + k.transpose_s) / 2;
}

std::vector<double> Ratios(const GpuSpec& gpu, const std::vector<Measurement>& rows) {
  std::vector<double> out;
  out.reserve(rows.size());
  for (const Measurement& m : rows) out.push_back(m.median_s / PredictAsMeasured(gpu, m));
  return out;
}

const std::vector<FittedParam>& FittedParams() {
  // No kernel passes the datasheet's dense peak: the peak fraction is at most 1, and rows faster
  // than the peak are left out of a fit (FitAndValidate).
  static const std::vector<FittedParam>* p = new std::vector<FittedParam>{
      {"peak_fraction", &CostModelParams::peak_fraction, 0.2, 1.0},
      {"tile_reuse_exponent", &CostModelParams::tile_reuse_exponent, 0.0, 1.5},
      {"k_overhead", &CostModelParams::k_overhead, 0.0, 2048.0},
      {"wave_latency_s", &CostModelParams::wave_latency_s, 0.0, 20e-6},
      {"split_k_weight", &CostModelParams::split_k_weight, 0.0, 4.0},
      {"epilogue_weight", &CostModelParams::epilogue_weight, 0.0, 3.0},
      {"launch_s", &CostModelParams::launch_s, 0.5e-6, 30e-6},
      {"memory_efficiency", &CostModelParams::memory_efficiency, 0.2, 1.0},
      {"clock_drop", &CostModelParams::clock_drop, 0.0, 0.4},
      {"clock_tau_s", &CostModelParams::clock_tau_s, 1e-6, 5e-3},
      {"fp8_transpose_weight", &CostModelParams::fp8_transpose_weight, 0.0, 2.0,
       FitsOnly::kFp8Transpose},
      {"fp8_transpose_launch_s", &CostModelParams::fp8_transpose_launch_s, 0.0, 20e-6,
       FitsOnly::kFp8Transpose},
      {"stream_k_fixup_weight", &CostModelParams::stream_k_fixup_weight, 0.0, 8.0,
       FitsOnly::kStreamK},
      {"narrow_tn_efficiency", &CostModelParams::narrow_tn_efficiency, 0.02, 1.0,
       FitsOnly::kNarrowTn},
      {"narrow_tn_output_efficiency", &CostModelParams::narrow_tn_output_efficiency, 0.02, 1.0,
       FitsOnly::kNarrowTnOutput},
      {"narrow_nn_efficiency", &CostModelParams::narrow_nn_efficiency, 0.02, 1.0,
       FitsOnly::kNarrowNn},
      {"narrow_nt_efficiency", &CostModelParams::narrow_nt_efficiency, 0.02, 1.0,
       FitsOnly::kNarrowNt},
      {"vector_efficiency", &CostModelParams::vector_efficiency, 0.02, 1.0, FitsOnly::kVector},
      {"vector_k_overhead", &CostModelParams::vector_k_overhead, 0.0, 2048.0, FitsOnly::kVector},
      {"narrow_k_overhead", &CostModelParams::narrow_k_overhead, 0.0, 2048.0, FitsOnly::kNarrow},
      {"misaligned_memory_efficiency", &CostModelParams::misaligned_memory_efficiency, 0.05, 1.0,
       FitsOnly::kMisaligned},
  };
  return *p;
}

namespace {

// Maps an unbounded coordinate to a parameter in [lo, hi] and back.
double ToParam(const FittedParam& f, double x) { return f.lo + (f.hi - f.lo) / (1 + std::exp(-x)); }
double ToCoord(const FittedParam& f, double v) {
  const double t = std::clamp((v - f.lo) / (f.hi - f.lo), 1e-6, 1 - 1e-6);
  return std::log(t / (1 - t));
}

// A deterministic uniform in [0, 1) from 53 random bits (the same on every standard library).
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// The centroid of a simplex's vertices but `worst`.
std::vector<double> CentroidWithout(const std::vector<std::vector<double>>& pts, size_t worst) {
  const size_t d = pts.size() - 1;
  std::vector<double> c(d, 0);
  for (size_t i = 0; i <= d; ++i) {
    if (i == worst) continue;
    for (size_t j = 0; j < d; ++j) c[j] += pts[i][j] / static_cast<double>(d);
  }
  return c;
}

// Nelder-Mead's shrink: every vertex but `best` moves halfway towards it and is evaluated again.
// Returns the evaluations spent.
int ShrinkTowards(const std::function<double(const std::vector<double>&)>& f, size_t best,
                  std::vector<std::vector<double>>& pts, std::vector<double>& val) {
  const size_t d = pts.size() - 1;
  int evals = 0;
  for (size_t i = 0; i <= d; ++i) {
    if (i == best) continue;
    for (size_t j = 0; j < d; ++j) pts[i][j] = pts[best][j] + 0.5 * (pts[i][j] - pts[best][j]);
    val[i] = f(pts[i]);
    ++evals;
  }
  return evals;
}

// Minimises f over R^d from x0 with Nelder-Mead (standard coefficients), at most `budget`
// evaluations. Returns the best point.
std::vector<double> NelderMead(const std::function<double(const std::vector<double>&)>& f,
                               std::vector<double> x0, double step, int budget) {
  const size_t d = x0.size();
  std::vector<std::vector<double>> pts(d + 1, x0);
  std::vector<double> val(d + 1);
  for (size_t i = 0; i < d; ++i) pts[i + 1][i] += step;
  int evals = 0;
  for (size_t i = 0; i <= d; ++i, ++evals) val[i] = f(pts[i]);
  std::vector<size_t> order(d + 1);
  while (evals < budget) {
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return val[a] < val[b]; });
    const size_t best = order.front(), worst = order.back(), second = order[d - 1];
    if (std::abs(val[worst] - val[best]) < 1e-10 * (1 + std::abs(val[best]))) break;
    const std::vector<double> c = CentroidWithout(pts, worst);
    auto along = [&](double t) {
      std::vector<double> x(d);
      for (size_t j = 0; j < d; ++j) x[j] = c[j] + t * (pts[worst][j] - c[j]);
      return x;
    };
    std::vector<double> xr = along(-1);
    const double fr = f(xr);
    ++evals;
    if (fr < val[best]) {
      std::vector<double> xe = along(-2);
      const double fe = f(xe);
      ++evals;
      if (fe < fr) {
        pts[worst] = xe, val[worst] = fe;
      } else {
        pts[worst] = xr, val[worst] = fr;
      }
    } else if (fr < val[second]) {
      pts[worst] = xr, val[worst] = fr;
    } else {
      std::vector<double> xc = fr < val[worst] ? along(-0.5) : along(0.5);
      const double fc = f(xc);
      ++evals;
      if (fc < std::min(fr, val[worst])) {
        pts[worst] = xc, val[worst] = fc;
      } else {
        evals += ShrinkTowards(f, best, pts, val);
      }
    }
  }
  size_t best = 0;
  for (size_t i = 1; i <= d; ++i) {
    if (val[i] < val[best]) best = i;
  }
  return pts[best];
}

// Mean squared log error of `gpu` (with `dtype`'s parameters as set) on `rows`.
double Loss(const GpuSpec& gpu, const std::vector<Measurement>& rows) {
  double sum = 0;
  for (const Measurement& m : rows) {
    const double e = std::log(PredictAsMeasured(gpu, m) / m.median_s);
    sum += e * e;
  }
  return rows.empty() ? 0 : sum / static_cast<double>(rows.size());
}

// The measurements keep their own dtype (TF32 data predicts TF32); the GPU's parameters for the
// fitted dtype serve every dtype of the class (FP16 rows are fitted with the BF16 parameters).
std::vector<Measurement> AsDtype(const std::vector<Measurement>& rows, DType dtype) {
  std::vector<Measurement> out = rows;
  for (Measurement& m : out) m.key.dtype = dtype;
  return out;
}

}  // namespace

std::vector<CalibrationInfo::Band> ErrorBands(const std::vector<double>& predicted_s,
                                              const std::vector<double>& ratios,
                                              const FitOptions& options) {
  std::vector<CalibrationInfo::Band> bands;
  std::vector<double> edges = options.band_edges_s;
  edges.push_back(std::numeric_limits<double>::infinity());
  double lo = 0;
  std::vector<double> pending;
  for (size_t e = 0; e < edges.size(); ++e) {
    for (size_t i = 0; i < ratios.size(); ++i) {
      if (predicted_s[i] > lo && predicted_s[i] <= edges[e]) pending.push_back(ratios[i] - 1);
    }
    lo = edges[e];
    const bool last = e + 1 == edges.size();
    if (static_cast<int>(pending.size()) < options.min_rows_per_band && !last) continue;
    if (pending.empty()) {
      if (!bands.empty()) bands.back().max_time_s = edges[e];
      continue;
    }
    bands.push_back({edges[e], Quantile(pending, 0.1), Quantile(pending, 0.9)});
    pending.clear();
  }
  if (!bands.empty()) bands.back().max_time_s = std::numeric_limits<double>::infinity();
  return bands;
}

bool InClass(FitsOnly only, const GpuSpec& gpu, const GemmKey& key) {
  const int64_t align = only == FitsOnly::kAny || only == FitsOnly::kFp8Transpose ||
                                only == FitsOnly::kStreamK
                            ? 16
                            : MinAlignmentBytes(key);
  switch (only) {
    case FitsOnly::kAny:
      return true;
    case FitsOnly::kFp8Transpose:
      return Fp8NeedsTn(gpu, key.dtype) && key.layout != Layout::kTN;
    case FitsOnly::kNarrowTn:
    case FitsOnly::kNarrowTnOutput:
      return align < 4 && key.layout == Layout::kTN &&
             NarrowOutputOnly(key) == (only == FitsOnly::kNarrowTnOutput);
    case FitsOnly::kNarrowNn:
      return align < 4 && key.layout == Layout::kNN;
    case FitsOnly::kNarrowNt:
      return align < 4 && key.layout == Layout::kNT;
    case FitsOnly::kVector:
      return align >= 4 && align < 16;
    case FitsOnly::kMisaligned:
      return align < 16;
    case FitsOnly::kNarrow:
      return align < 4;
    case FitsOnly::kStreamK:
      return HasStreamK(gpu, AlignmentCostOf(key, gpu));
  }
  return false;
}

std::vector<FittedParam> FittedParamsFor(const GpuSpec& gpu, DType dtype,
                                         const std::vector<Measurement>& rows) {
  std::vector<FittedParam> out;
  for (const FittedParam& f : FittedParams()) {
    int in_class = 0;
    for (const Measurement& m : rows) {
      GemmKey key = m.key;
      key.dtype = dtype;
      if (InClass(f.only, gpu, key) && ++in_class >= kMinRowsToFitAClass) break;
    }
    if (in_class >= kMinRowsToFitAClass) out.push_back(f);
  }
  return out;
}

CostModelParams FitFields(const GpuSpec& prior, DType dtype, const std::vector<FittedParam>& fields,
                          const std::function<double(const GpuSpec&)>& loss,
                          const FitOptions& options) {
  GpuSpec gpu = prior;
  std::vector<double> x(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    // A start on a bound sits where the logistic is flat: no simplex step moves the parameter
    // measurably and the fit never leaves it (the fused-attention block overhead, 0 before
    // calibration, stayed 0 in a cross-validation fold). Starts begin 1% of the range inside.
    const FittedParam& f = fields[i];
    const double margin = 0.01 * (f.hi - f.lo);
    x[i] = ToCoord(f, std::clamp(gpu.Model(dtype).*(f.field), f.lo + margin, f.hi - margin));
  }
  auto objective = [&](const std::vector<double>& c) {
    for (size_t i = 0; i < fields.size(); ++i) {
      gpu.Model(dtype).*(fields[i].field) = ToParam(fields[i], c[i]);
    }
    return loss(gpu);
  };
  std::mt19937_64 rng(options.seed);
  std::vector<double> best = x;
  double best_loss = objective(x);
  for (int s = 0; s < std::max(1, options.starts); ++s) {
    std::vector<double> start = best;
    if (s > 0) {
      for (double& v : start) v += 1.5 * (Uniform(rng) - 0.5);
    }
    std::vector<double> found = NelderMead(objective, start, 0.6, options.max_evaluations);
    const double l = objective(found);
    if (l < best_loss) best_loss = l, best = found;
  }
  CostModelParams out = prior.Model(dtype);
  for (size_t i = 0; i < fields.size(); ++i) out.*(fields[i].field) = ToParam(fields[i], best[i]);
  return out;
}

CostModelParams FitParams(const GpuSpec& prior, DType dtype, const std::vector<Measurement>& rows,
                          const FitOptions& options) {
  const std::vector<Measurement> data = AsDtype(rows, dtype);
  return FitFields(
      prior, dtype, FittedParamsFor(prior, dtype, data),
      [&](const GpuSpec& g) { return Loss(g, data); },
      options);
}

namespace {

// k folds over a fixed shuffle: each row is predicted by a fit that never saw it. Sets each row's
// cross-validated prediction (`cv_pred`) and measured/predicted ratio (`cv_ratio`).
void CrossValidate(const GpuSpec& prior, DType dtype, const std::vector<Measurement>& data,
                   const FitOptions& options, std::vector<double>& cv_ratio,
                   std::vector<double>& cv_pred) {
  std::vector<size_t> order(data.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(options.seed ^ 0x9e3779b97f4a7c15ULL);
  for (size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[static_cast<size_t>(rng() % i)]);
  }
  const int folds = std::max(2, std::min<int>(options.folds, static_cast<int>(data.size())));
  cv_ratio.assign(data.size(), 1);
  cv_pred.assign(data.size(), 0);
  for (int f = 0; f < folds; ++f) {
    std::vector<Measurement> train, test;
    std::vector<size_t> test_idx;
    for (size_t i = 0; i < order.size(); ++i) {
      if (static_cast<int>(i % static_cast<size_t>(folds)) == f) {
        test.push_back(data[order[i]]);
        test_idx.push_back(order[i]);
      } else {
        train.push_back(data[order[i]]);
      }
    }
    GpuSpec fold = prior;
    fold.Model(dtype) = FitParams(prior, dtype, train, options);
    for (size_t j = 0; j < test.size(); ++j) {
      cv_pred[test_idx[j]] = PredictAsMeasured(fold, test[j]);
      cv_ratio[test_idx[j]] = test[j].median_s / cv_pred[test_idx[j]];
    }
  }
}

}  // namespace

FitResult FitAndValidate(const GpuSpec& prior, DType dtype, const std::vector<Measurement>& rows,
                         const FitOptions& options) {
  FitResult r;
  r.gpu = prior.name;
  r.dtype = dtype;
  // A GEMM's whole time faster than the datasheet's dense peak was not timed right (no kernel can
  // pass it): it is counted and left out, never fitted.
  std::vector<Measurement> data;
  for (const Measurement& m : AsDtype(rows, dtype)) {
    if (TimesWholeGemm(prior, m) && GemmFlops(m.key.shape) / m.median_s > prior.PeakFlops(dtype)) {
      ++r.above_peak_rows;
    } else {
      data.push_back(m);
    }
  }
  r.rows = static_cast<int64_t>(data.size());
  r.before = ErrorsOf(Ratios(prior, data));
  std::vector<double> cv_ratio, cv_pred;
  CrossValidate(prior, dtype, data, options, cv_ratio, cv_pred);
  r.cv = ErrorsOf(cv_ratio);
  std::vector<double> aligned, misaligned;
  for (size_t i = 0; i < data.size(); ++i) {
    (AlignedGemm(data[i].key) ? aligned : misaligned).push_back(cv_ratio[i]);
  }
  r.misaligned_rows = static_cast<int64_t>(misaligned.size());
  r.cv_aligned = ErrorsOf(aligned);
  r.cv_misaligned = ErrorsOf(misaligned);
  r.cv_pairs = AlignmentPairs(data, cv_pred);
  r.bands = ErrorBands(cv_pred, cv_ratio, options);
  if (static_cast<int>(misaligned.size()) >= options.min_rows_per_band) {
    for (double& x : misaligned) x -= 1;
    r.misaligned_band = CalibrationInfo::Band{0, Quantile(misaligned, 0.1), Quantile(misaligned, 0.9)};
  }
  GpuSpec fitted = prior;
  fitted.Model(dtype) = FitParams(prior, dtype, data, options);
  r.fitted = FittedParamsFor(prior, dtype, data);
  r.params = fitted.Model(dtype);
  r.train = ErrorsOf(Ratios(fitted, data));
  return r;
}

std::vector<PairCheck> AlignmentPairs(const std::vector<Measurement>& rows,
                                      const std::vector<double>& predicted_s) {
  std::vector<PairCheck> out;
  auto dims = [](const GemmShape& s) { return std::array<int64_t, 3>{s.m, s.n, s.k}; };
  for (size_t i = 0; i < rows.size(); ++i) {
    const GemmKey& mis = rows[i].key;
    if (AlignedGemm(mis)) continue;
    size_t best = rows.size();
    double best_gap = 0.02;
    for (size_t j = 0; j < rows.size(); ++j) {
      const GemmKey& al = rows[j].key;
      if (!AlignedGemm(al) || al.layout != mis.layout || al.dtype != mis.dtype ||
          al.shape.batch != mis.shape.batch) {
        continue;
      }
      const auto a = dims(mis.shape), b = dims(al.shape);
      int differing = 0;
      double gap = 0;
      for (int d = 0; d < 3; ++d) {
        if (a[d] == b[d]) continue;
        ++differing;
        gap = std::abs(static_cast<double>(a[d] - b[d])) / static_cast<double>(a[d]);
      }
      if (differing == 1 && gap <= best_gap) best = j, best_gap = gap;
    }
    if (best == rows.size()) continue;
    PairCheck p;
    p.misaligned = mis;
    p.aligned = rows[best].key;
    p.measured_ratio = rows[i].median_s / rows[best].median_s;
    p.predicted_ratio = predicted_s[i] / predicted_s[best];
    out.push_back(p);
  }
  return out;
}

namespace {
// The dimension (0 m, 1 n, 2 k) in which a pair's misaligned shape differs from its aligned one.
int PairDim(const PairCheck& p) {
  const GemmShape &a = p.misaligned.shape, &b = p.aligned.shape;
  return a.m != b.m ? 0 : a.n != b.n ? 1 : 2;
}
}  // namespace

std::vector<double> PairFamilyRatios(const std::vector<PairCheck>& pairs, const PairCheck& p) {
  auto family = [](const GemmKey& k) {
    return std::make_pair(MinAlignmentBytes(k) >= 4, NarrowOutputOnly(k));
  };
  auto dims = [](const GemmShape& s) { return std::array<int64_t, 3>{s.m, s.n, s.k}; };
  const int d = PairDim(p);
  const auto pd = dims(p.misaligned.shape);
  std::vector<double> out;
  for (const PairCheck& q : pairs) {
    const auto qd = dims(q.misaligned.shape);
    if (q.misaligned.layout != p.misaligned.layout || q.misaligned.dtype != p.misaligned.dtype ||
        q.misaligned.shape.batch != p.misaligned.shape.batch || PairDim(q) != d ||
        family(q.misaligned) != family(p.misaligned)) {
      continue;
    }
    bool same = true;
    for (int i = 0; i < 3; ++i) {
      if (i != d && qd[i] != pd[i]) same = false;
    }
    if (same && std::abs(static_cast<double>(qd[d] - pd[d])) <= 0.02 * static_cast<double>(pd[d])) {
      out.push_back(q.measured_ratio);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

PairReproduction ReproducePairs(const std::vector<PairCheck>& pairs,
                                const std::vector<PairCheck>& other) {
  PairReproduction r;
  for (const PairCheck& p : pairs) {
    const auto it = std::find_if(other.begin(), other.end(), [&](const PairCheck& q) {
      return q.misaligned == p.misaligned && q.aligned == p.aligned;
    });
    if (it == other.end()) continue;
    ++r.matched;
    r.within += std::abs(it->measured_ratio / p.measured_ratio - 1) <= 0.2;
  }
  return r;
}

DType FitClass(DType d) { return d == DType::kFp16 ? DType::kBf16 : d; }

std::vector<DType> DTypesServedBy(DType fitted) {
  if (fitted == DType::kBf16 || fitted == DType::kFp16) return {DType::kBf16, DType::kFp16};
  return {fitted};
}

}  // namespace wavecrest
