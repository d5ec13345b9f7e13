// Calibrate(): the whole `wavecrest calibrate` run, GPU-free (core/calibration.h).
#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/attention_calibration.h"
#include "core/calibration.h"
#include "core/cost_model.h"

namespace wavecrest {
namespace {

// The dtype a measurement's parameters are fitted under (FP16 rows share BF16's parameters).
DType FitClass(DType d) { return d == DType::kFp16 ? DType::kBf16 : d; }

std::string Pct(double x) { return absl::StrFormat("%.1f%%", 100 * x); }
std::string SignedPct(double x) { return absl::StrFormat("%+.1f%%", 100 * x); }

GpuSpec* Find(std::vector<GpuSpec>& catalog, absl::string_view name) {
  for (GpuSpec& g : catalog) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

// The fitted GPU whose structure a GPU without data borrows: the same generation where one was
// fitted (Blackwell from B200), else the H100 fit (the best-covered GPU).
std::string StructureSource(const GpuSpec& g, const std::set<std::string>& fitted) {
  if (g.architecture == "Blackwell" && fitted.count("b200")) return "b200";
  if (fitted.count("h100-sxm")) return "h100-sxm";
  return fitted.empty() ? "" : *fitted.begin();
}

// Copies what the fit learned about the kernels' structure (not the GPU's peak fraction).
void CopyStructure(const CostModelParams& from, CostModelParams& to) {
  to.tile_reuse_exponent = from.tile_reuse_exponent;
  to.k_overhead = from.k_overhead;
  to.epilogue_weight = from.epilogue_weight;
  to.launch_s = from.launch_s;
  to.wave_latency_s = from.wave_latency_s;
  to.split_k_weight = from.split_k_weight;
  to.fp8_transpose_weight = from.fp8_transpose_weight;
  to.fp8_transpose_launch_s = from.fp8_transpose_launch_s;
  to.memory_efficiency = from.memory_efficiency;
}

// GPUs before Hopper have no TMA and no warp-specialized persistent GEMM kernels: cuBLAS's
// Ampere-era kernels ("..._256x128_ldg8_f2f_stages_64x3_tn") fill a 3-stage pipeline of 64-element
// K tiles before the first multiply-add and write a wave's outputs after its mainloop. So their
// structure is not borrowed from a Hopper or Blackwell fit for these two terms: the prologue is
// two K tiles (k_overhead) and the epilogue is not hidden (epilogue_weight 1).
void PreHopperKernelStructure(const GpuSpec& g, DType d, CostModelParams& p) {
  if (g.compute_capability >= 90) return;
  p.k_overhead = 2.0 * static_cast<double>(p.k_tile_bytes / DTypeBytes(d));
  p.epilogue_weight = 1.0;
}

// The peak fraction at which `gpu` predicts the anchor's published time (bisection; the time
// falls as the fraction rises).
double AnchorPeakFraction(GpuSpec gpu, const Measurement& anchor) {
  DType d = FitClass(anchor.key.dtype);
  double lo = 0.2, hi = 2.5;
  for (int i = 0; i < 60; ++i) {
    const double mid = std::sqrt(lo * hi);
    gpu.Model(d).peak_fraction = mid;
    GemmKey key = anchor.key;
    key.dtype = d;
    if (PredictGemmTime(gpu, key) > anchor.median_s) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return std::sqrt(lo * hi);
}

const Measurement* AnchorFor(const std::vector<Measurement>& anchors, absl::string_view gpu,
                             DType d) {
  for (const Measurement& m : anchors) {
    if (m.gpu == gpu && FitClass(m.key.dtype) == d) return &m;
  }
  return nullptr;
}

// The misalignment factor that makes `gpu` reproduce a published ratio (bisection).
double SolveMisaligned(GpuSpec gpu, const TimeRatio& r) {
  const DType d = FitClass(r.row.key.dtype);
  GemmKey key = r.row.key, ref = r.row.key;
  key.dtype = ref.dtype = d;
  ref.shape = r.reference;
  double lo = 0.05, hi = 1.0;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    gpu.Model(d).misaligned_efficiency = mid;
    const double ratio = PredictGemmTime(gpu, key) / PredictGemmTime(gpu, ref);
    if (ratio > r.row.median_s) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

bool Misaligned(const GemmKey& key) {
  for (int64_t d : LeadingDims(key)) {
    if ((d * DTypeBytes(key.dtype)) % 16 != 0) return true;
  }
  return false;
}

std::string StatsRow(absl::string_view what, const ErrorStats& e) {
  return absl::StrFormat("  %-44s %5d  %7s  %7s  %7s  %8s\n", what, e.rows, Pct(e.median_abs),
                         Pct(e.p90_abs), Pct(e.max_abs), SignedPct(e.median_signed));
}
constexpr absl::string_view kStatsHeader =
    "  what                                          rows   median      p90      max  signed*\n";

std::string BandsText(const std::vector<CalibrationInfo::Band>& bands) {
  std::vector<std::string> parts;
  double lo = 0;
  for (const auto& b : bands) {
    parts.push_back(absl::StrFormat(
        "%s: [%s, %s]",
        std::isinf(b.max_time_s) ? absl::StrFormat("> %.0f us", lo * 1e6)
                                 : absl::StrFormat("%.0f-%.0f us", lo * 1e6, b.max_time_s * 1e6),
        SignedPct(b.p10), SignedPct(b.p90)));
    lo = b.max_time_s;
  }
  return absl::StrJoin(parts, "; ");
}

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

struct Group {
  std::string source;
  std::string gpu;
  DType dtype;
  std::vector<Measurement> rows;
};

// Rows grouped by (source, gpu, dtype), in first-seen order.
std::vector<Group> GroupRows(const std::vector<Measurement>& rows, bool by_fit_class) {
  std::vector<Group> groups;
  for (const Measurement& m : rows) {
    const DType d = by_fit_class ? FitClass(m.key.dtype) : m.key.dtype;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return g.source == m.source && g.gpu == m.gpu && g.dtype == d;
    });
    if (it == groups.end()) {
      groups.push_back({m.source, m.gpu, d, {}});
      it = groups.end() - 1;
    }
    it->rows.push_back(m);
  }
  return groups;
}

std::string ShapeText(const GemmKey& k) {
  return absl::StrFormat("%s %s %dx%dx%d b%d", DTypeName(k.dtype), LayoutName(k.layout), k.shape.m,
                         k.shape.n, k.shape.k, k.shape.batch);
}

// Per-row detail of a small check set: measured and predicted throughput.
std::string DetailRows(const GpuSpec& before, const GpuSpec& after,
                       const std::vector<Measurement>& rows) {
  std::string out = absl::StrFormat("    %-34s %10s %10s %8s %10s %8s\n", "GEMM (M x N x K)",
                                    "measured", "before", "error", "after", "error");
  for (const Measurement& m : rows) {
    const double f = GemmFlops(m.key.shape);
    const double tb = PredictGemmTime(before, m.key), ta = PredictGemmTime(after, m.key);
    absl::StrAppend(
        &out, absl::StrFormat("    %-34s %7.1f TF %7.1f TF %8s %7.1f TF %8s\n", ShapeText(m.key),
                              f / m.median_s / 1e12, f / tb / 1e12, SignedPct(m.median_s / tb - 1),
                              f / ta / 1e12, SignedPct(m.median_s / ta - 1)));
  }
  return out;
}

}  // namespace

CalibrateOutput Calibrate(const CalibrateInputs& in, const FitOptions& options,
                          const std::function<void(const std::string&)>& progress) {
  const std::vector<GpuSpec> prior = PriorCatalog();
  std::vector<GpuSpec> catalog = prior;
  CalibrateOutput out;
  CalibrationFile& file = out.file;
  file.model = std::string(kCostModelName);
  file.created = UtcNow();
  file.datasets = in.dataset_labels;
  std::string fits_text, transfer_text, checks_text;

  // 1. Fit every (GPU, dtype class) the fitting data covers.
  std::map<std::pair<std::string, DType>, FitResult> fits;
  std::set<std::string> fitted_gpus;
  for (const Group& g : GroupRows(in.fit_rows, /*by_fit_class=*/true)) {
    const GpuSpec* p = nullptr;
    for (const GpuSpec& x : prior) {
      if (x.name == g.gpu) p = &x;
    }
    if (p == nullptr || !p->Supports(g.dtype)) continue;
    auto key = std::make_pair(g.gpu, g.dtype);
    std::vector<Measurement> rows = g.rows;
    if (fits.count(key)) continue;  // one source per (GPU, dtype): the first given
    for (const Group& other : GroupRows(in.fit_rows, true)) {
      if (other.gpu == g.gpu && other.dtype == g.dtype && other.source != g.source) {
        rows.insert(rows.end(), other.rows.begin(), other.rows.end());
      }
    }
    progress(absl::StrCat("fitting ", g.gpu, " ", DTypeName(g.dtype), " (", rows.size(), " rows, ",
                          options.folds, "-fold cross-validation)"));
    FitResult r = FitAndValidate(*p, g.dtype, rows, options);
    fits.emplace(key, r);
    fitted_gpus.insert(g.gpu);
    for (DType d : DTypesServedBy(g.dtype)) {
      Find(catalog, g.gpu)->Model(d) = r.params;
      Find(catalog, g.gpu)->Calibration(d).max_measured_flops = r.max_measured_flops;
    }
  }

  // 2. The misalignment penalty from published ratios, per architecture that has them.
  std::map<std::string, double> misaligned_by_arch;
  std::string ratio_sources;
  {
    std::map<std::string, std::vector<double>> solved;
    for (const TimeRatio& r : in.ratios) {
      GpuSpec* g = Find(catalog, r.row.gpu);
      if (g == nullptr || !Misaligned(r.row.key)) continue;
      solved[g->architecture].push_back(SolveMisaligned(*g, r));
      ratio_sources = r.row.source;
    }
    for (auto& [arch, v] : solved) {
      double log_sum = 0;
      for (double x : v) log_sum += std::log(x);
      misaligned_by_arch[arch] = std::exp(log_sum / static_cast<double>(v.size()));
    }
  }
  auto misaligned_for = [&](const GpuSpec& g, std::string* why) {
    auto it = misaligned_by_arch.find(g.architecture);
    if (it != misaligned_by_arch.end()) {
      *why = absl::StrCat("misalignment factor fitted to ", ratio_sources);
      return it->second;
    }
    if (!misaligned_by_arch.empty()) {
      *why =
          absl::StrCat("misalignment factor carried from the ", misaligned_by_arch.begin()->first,
                       " fit (no ", g.architecture, " evidence)");
      return misaligned_by_arch.begin()->second;
    }
    *why = "misalignment factor a prior";
    return g.Model(DType::kBf16).misaligned_efficiency;
  };

  // 3. Entries for the fitted GPUs, and for GPUs that share their silicon (H200 from H100).
  auto add_entry = [&](const std::string& gpu, DType fitted, const CostModelParams& params,
                       CalibrationInfo info) {
    GpuSpec* g = Find(catalog, gpu);
    std::string why;
    CalibrationEntry e;
    e.gpu = gpu;
    e.dtypes = DTypesServedBy(fitted);
    e.params = params;
    e.params.misaligned_efficiency = misaligned_for(*g, &why);
    info.label = absl::StrCat(info.label, "; ", why);
    e.info = std::move(info);
    for (DType d : e.dtypes) {
      g->Model(d) = e.params;
      g->Calibration(d) = e.info;
    }
    file.entries.push_back(std::move(e));
  };
  absl::StrAppend(&fits_text, "Fits (", options.folds,
                  "-fold cross-validation: every row predicted by a fit that never saw it)\n",
                  kStatsHeader);
  for (auto& [key, r] : fits) {
    // Named copies, not structured bindings: lambdas below capture them (clang 14).
    const std::string gpu = key.first;
    const DType dtype = key.second;
    CalibrationInfo info;
    info.calibrated = true;
    info.bands = r.bands;
    info.max_measured_flops = r.max_measured_flops;
    const std::string sources = [&] {
      std::set<std::string> s;
      for (const Measurement& m : in.fit_rows) {
        if (m.gpu == gpu && FitClass(m.key.dtype) == dtype) s.insert(m.source);
      }
      return absl::StrJoin(s, " + ");
    }();
    info.label =
        absl::StrFormat("fitted to %s (%s %s, %d rows), %d-fold CV median error %s", sources, gpu,
                        DTypeName(dtype), r.rows, options.folds, Pct(r.cv.median_abs));
    if (r.max_measured_flops > Find(catalog, gpu)->PeakFlops(dtype)) {
      absl::StrAppend(
          &info.label,
          absl::StrFormat("; WARNING: these data run up to %.0f%% of the datasheet "
                          "peak, which no GPU can: treat large-GEMM predictions as "
                          "suspect (bench/results/calibration.txt)",
                          100 * r.max_measured_flops / Find(catalog, gpu)->PeakFlops(dtype)));
    }
    add_entry(gpu, dtype, r.params, info);
    if (gpu == "h100-sxm" && Find(catalog, "h200") != nullptr && !fits.count({"h200", dtype})) {
      CalibrationInfo h200 = info;
      h200.label = absl::StrCat(info.label,
                                "; H200 has H100's SMs, clocks and tensor rate, with its own "
                                "memory bandwidth");
      add_entry("h200", dtype, r.params, h200);
    }
    const std::string what = absl::StrCat(gpu, " ", DTypeName(dtype));
    absl::StrAppend(&fits_text, StatsRow(absl::StrCat(what, "  before (priors)"), r.before),
                    StatsRow(absl::StrCat(what, "  fitted, on its own rows"), r.train),
                    StatsRow(absl::StrCat(what, "  cross-validated"), r.cv));
    absl::StrAppend(&fits_text, "    error band by predicted time: ", BandsText(r.bands), "\n");
    if (r.max_measured_flops > Find(catalog, gpu)->PeakFlops(dtype)) {
      absl::StrAppend(
          &fits_text,
          absl::StrFormat("    NOTE: the data reach %.0f TFLOP/s, above the datasheet dense peak "
                          "of %.0f TFLOP/s: the source's timing of these rows is suspect (see "
                          "data/measurements/README.md); they are fitted as published\n",
                          r.max_measured_flops / 1e12,
                          Find(catalog, gpu)->PeakFlops(dtype) / 1e12));
    }
    std::string params = "    parameters:";
    for (const FittedParam& f : FittedParamsFor(*Find(catalog, gpu), dtype)) {
      absl::StrAppend(&params, absl::StrFormat(" %s=%.4g", f.name, r.params.*(f.field)));
    }
    absl::StrAppend(&fits_text, params, "\n");
  }
  for (const auto& [arch, v] : misaligned_by_arch) {
    absl::StrAppend(&fits_text,
                    absl::StrFormat("  misaligned_efficiency (%s) = %.3f, fitted to %s\n", arch, v,
                                    ratio_sources));
  }

  // 4. How wrong a GPU without data is: predict each fitted GPU with another's structure and
  // (where published) its own anchored peak fraction.
  std::map<DType, std::vector<double>> transfer_anchored, transfer_unanchored;
  absl::StrAppend(&transfer_text,
                  "Transfer: each fitted GPU predicted with another fitted GPU's structure (what "
                  "a GPU without data gets)\n",
                  kStatsHeader);
  for (const auto& [to_key, to_fit] : fits) {
    for (const auto& [from_key, from_fit] : fits) {
      if (from_key.first == to_key.first || from_key.second != to_key.second) continue;
      const DType d = to_key.second;
      GpuSpec g = *Find(catalog, to_key.first);
      g.Calibration(d).max_measured_flops = 0;  // what a GPU without data has
      std::vector<Measurement> rows;
      for (const Measurement& m : in.fit_rows) {
        if (m.gpu == to_key.first && FitClass(m.key.dtype) == d) rows.push_back(m);
      }
      for (Measurement& m : rows) m.key.dtype = d;
      CopyStructure(from_fit.params, g.Model(d));
      g.Model(d).peak_fraction = from_fit.params.peak_fraction;
      const std::vector<double> un = Ratios(g, rows);
      transfer_unanchored[d].insert(transfer_unanchored[d].end(), un.begin(), un.end());
      absl::StrAppend(&transfer_text,
                      StatsRow(absl::StrCat(to_key.first, " ", DTypeName(d), " from ",
                                            from_key.first, ", its peak fraction"),
                               ErrorsOf(un)));
      if (const Measurement* a = AnchorFor(in.anchor_rows, to_key.first, d)) {
        g.Model(d).peak_fraction = AnchorPeakFraction(g, *a);
        const std::vector<double> an = Ratios(g, rows);
        transfer_anchored[d].insert(transfer_anchored[d].end(), an.begin(), an.end());
        absl::StrAppend(&transfer_text,
                        StatsRow(absl::StrCat(to_key.first, " ", DTypeName(d), " from ",
                                              from_key.first, ", peak anchored to ", a->source),
                                 ErrorsOf(an)));
      }
    }
  }

  // How much faster than the fit an anchor figure is, on the fitted GPUs that have one: a
  // "best shape of a sweep" figure is the luckiest of many (winner's curse), so an unfitted GPU's
  // peak is anchored to its figure slowed by this much (mean log ratio per dtype).
  std::map<DType, double> anchor_bias;
  {
    std::map<DType, std::vector<double>> logs;
    for (const Measurement& a : in.anchor_rows) {
      const DType d = FitClass(a.key.dtype);
      if (!fits.count({a.gpu, d})) continue;
      const GpuSpec* g = Find(catalog, a.gpu);
      GemmKey key = a.key;
      key.dtype = d;
      logs[d].push_back(std::log(PredictGemmTime(*g, key) / a.median_s));
    }
    for (auto& [d, v] : logs) {
      double sum = 0;
      for (double x : v) sum += x;
      anchor_bias[d] = sum / static_cast<double>(v.size());
      absl::StrAppend(
          &transfer_text,
          absl::StrFormat("  %s anchor figures are %+.1f%% faster than the fits predict them "
                          "(mean of %d fitted GPUs; negative: slower): unfitted GPUs' anchors "
                          "are corrected by that much\n",
                          DTypeName(d), 100 * (std::exp(anchor_bias[d]) - 1), v.size()));
    }
  }

  // 5. GPUs without data: the fitted structure, a peak fraction anchored to a published figure
  // where there is one, and the transfer error as their band.
  for (GpuSpec& g : catalog) {
    if (fitted_gpus.count(g.name) || g.name == "h200") continue;
    const std::string src = StructureSource(g, fitted_gpus);
    if (src.empty()) break;
    for (DType d : {DType::kBf16, DType::kTf32, DType::kFp8E4M3}) {
      if (!g.Supports(d) || !fits.count({src, d})) continue;
      CostModelParams params = g.Model(d);
      CopyStructure(fits.at({src, d}).params, params);
      PreHopperKernelStructure(g, d, params);
      CalibrationInfo info;
      info.calibrated = false;
      std::string peak_why;
      std::vector<double> transfer = transfer_unanchored[d];
      GpuSpec probe = g;
      probe.Model(d) = params;
      if (const Measurement* a = AnchorFor(in.anchor_rows, g.name, d)) {
        Measurement target = *a;
        target.median_s *= std::exp(anchor_bias[d]);
        params.peak_fraction = AnchorPeakFraction(probe, target);
        peak_why = absl::StrFormat(
            "peak fraction %.3f set to reproduce %s (%s, %.1f TFLOP/s) less the %.1f%% that "
            "anchors beat the fits by",
            params.peak_fraction, a->source, ShapeText(a->key),
            GemmFlops(a->key.shape) / a->median_s / 1e12, 100 * (std::exp(anchor_bias[d]) - 1));
        transfer = transfer_anchored[d];
      } else {
        peak_why = absl::StrFormat("peak fraction %.2f a prior (no published figure)",
                                   params.peak_fraction);
      }
      std::vector<double> pred(transfer.size(), 1.0);  // one band for all sizes
      info.bands = ErrorBands(pred, transfer, FitOptions{.band_edges_s = {}});
      info.label = absl::StrFormat(
          "uncalibrated prior: no %s measurements of this GPU; kernel structure from the %s %s "
          "fit%s, %s; error band from predicting one fitted GPU with another's structure",
          DTypeName(d), src, DTypeName(d),
          g.compute_capability < 90 ? " (prologue and epilogue as pre-Hopper kernels run them)"
                                    : "",
          peak_why);
      add_entry(g.name, d, params, info);
    }
  }

  // 6. Checks the fit never saw: published sets kept for checking, and anchors of fitted GPUs.
  std::vector<Measurement> checks = in.check_rows;
  for (const Measurement& a : in.anchor_rows) {
    if (fitted_gpus.count(a.gpu) || (a.gpu == "h200" && fitted_gpus.count("h100-sxm"))) {
      checks.push_back(a);
    }
  }
  absl::StrAppend(&checks_text,
                  "Checks on published measurements never fitted (before = built-in priors, "
                  "after = this calibration)\n",
                  kStatsHeader);
  for (const Group& g : GroupRows(checks, /*by_fit_class=*/false)) {
    const GpuSpec* before = nullptr;
    for (const GpuSpec& x : prior) {
      if (x.name == g.gpu) before = &x;
    }
    const GpuSpec* after = Find(catalog, g.gpu);
    if (before == nullptr || after == nullptr || !after->Supports(g.dtype)) continue;
    const std::string what = absl::StrCat(g.source, " ", g.gpu, " ", DTypeName(g.dtype));
    absl::StrAppend(&checks_text,
                    StatsRow(absl::StrCat(what, " before"), ErrorsOf(Ratios(*before, g.rows))),
                    StatsRow(absl::StrCat(what, " after"), ErrorsOf(Ratios(*after, g.rows))));
    if (g.rows.size() <= 24) absl::StrAppend(&checks_text, DetailRows(*before, *after, g.rows));
  }
  if (!in.ratios.empty()) {
    absl::StrAppend(
        &checks_text, "  Published time ratios (time / time of the reference shape)\n",
        absl::StrFormat("    %-40s %10s %10s %10s\n", "GEMM", "published", "before", "after"));
    for (const TimeRatio& r : in.ratios) {
      const GpuSpec* after = Find(catalog, r.row.gpu);
      const GpuSpec* before = nullptr;
      for (const GpuSpec& x : prior) {
        if (x.name == r.row.gpu) before = &x;
      }
      if (after == nullptr || before == nullptr) continue;
      GemmKey ref = r.row.key;
      ref.shape = r.reference;
      auto ratio = [&](const GpuSpec& g) {
        return PredictGemmTime(g, r.row.key) / PredictGemmTime(g, ref);
      };
      absl::StrAppend(&checks_text,
                      absl::StrFormat("    %-40s %10.3f %10.3f %10.3f\n", ShapeText(r.row.key),
                                      r.row.median_s, ratio(*before), ratio(*after)));
    }
  }

  // 5. Fused attention, where attention data exist: each fit's constants and band go into the
  // entries of the GPUs it applies to (its own, and H200's from H100); a GPU on priors with
  // held-out checks of its own gets the band they give.
  std::string attention_text;
  if (!in.attention_rows.empty()) {
    progress("fitting fused attention");
    const AttentionCalibration attention =
        CalibrateAttention(catalog, in.attention_rows, in.attention_checks, options);
    auto covers = [](const CalibrationEntry& e, DType dtype) {
      return std::find(e.dtypes.begin(), e.dtypes.end(), dtype) != e.dtypes.end();
    };
    for (const AttentionCalibration::Group& g : attention.groups) {
      for (CalibrationEntry& e : file.entries) {
        if (!AttentionFitApplies(g.fit.gpu, e.gpu) || !covers(e, g.fit.dtype)) continue;
        for (const FittedParam& f : AttentionFittedParams()) {
          e.params.*(f.field) = g.fit.params.*(f.field);
        }
        e.params.flash_band_p10 = g.band_p10;
        e.params.flash_band_p90 = g.band_p90;
      }
    }
    // GPUs on the H100 constants as priors, with held-out checks of their own: their band.
    for (const AttentionCalibration::PriorBand& b : attention.prior_bands) {
      for (CalibrationEntry& e : file.entries) {
        if (e.gpu != b.gpu || !covers(e, b.dtype)) continue;
        e.params.flash_band_p10 = b.band_p10;
        e.params.flash_band_p90 = b.band_p90;
      }
    }
    attention_text = "\n" + attention.report;
  }

  out.report = absl::StrCat(
      "# wavecrest calibrate, ", file.created, ": model ", kCostModelName, "\n",
      "# error = measured time / predicted time - 1; median, p90 and max of |error|; signed* = "
      "median of error (> 0: the model is too fast)\n",
      "# datasets:\n",
      absl::StrJoin(file.datasets, "\n",
                    [](std::string* o, const std::string& d) { absl::StrAppend(o, "#   ", d); }),
      "\n\n", fits_text, "\n", transfer_text, "\n", checks_text, attention_text);
  return out;
}

}  // namespace wavecrest
