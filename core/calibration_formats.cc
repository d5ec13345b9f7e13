// The measurement files a calibration reads: wavecrest's CSV, XLA's GEMM table and the torch
// sweep dialect (with its comment header), the time-ratio CSV, and writing wavecrest's CSV
// (core/calibration.h).
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

using csv::CsvRows;
using csv::Dim;
using csv::LineError;
using csv::Positive;
using csv::ReadSmallFile;

constexpr absl::string_view kXlaHeader = "gpu,b,m,n,k,dtype,flops_per_s";
// The device plan's GEMM sweep (bench/gpu/torch_gemm_sweep.py; ../shared/measurements/), as the
// device wrote it: a comment line "# device=NAME sms=N ... method=M dtype" and row-major PyTorch
// layouts, which are the project's layouts with the same m, n, k.
constexpr absl::string_view kTorchSweepHeader =
    "gpu,dtype,m,n,k,batch,layout,median_us,tflops,spread,samples";
constexpr absl::string_view kTorchSweepSource = "torch-gemm-sweep";
constexpr absl::string_view kRatiosHeader =
    "source,gpu,dtype,layout,m,n,k,batch,ref_m,ref_n,ref_k,ref_batch,time_ratio,method";

// XLA's GPU keys and dtype strings, mapped to the catalog and our dtypes.
absl::StatusOr<std::string> XlaGpu(absl::string_view key) {
  if (key == "sm_90") return std::string("h100-sxm");
  if (key == "sm_100" || key == "sm_100_B200") return std::string("b200");
  return absl::InvalidArgumentError(
      absl::StrCat("gpu: unknown XLA device key \"", key, "\"; known: sm_90, sm_100_B200"));
}

absl::StatusOr<DType> XlaDtype(absl::string_view s) {
  if (s == "bf16xbf16->bf16") return DType::kBf16;
  if (s == "f16xf16->f16") return DType::kFp16;
  // XLA's default precision lets f32 dots run on TF32 tensor cores.
  if (s == "f32xf32->f32") return DType::kTf32;
  if (absl::StartsWith(s, "f8e4m3fnx") || absl::StartsWith(s, "f8e5m2x")) return DType::kFp8E4M3;
  return absl::InvalidArgumentError(absl::StrCat(
      "dtype: unknown XLA dtype \"", s,
      "\"; known: bf16xbf16->bf16, f16xf16->f16, f32xf32->f32, f8e4m3fn/f8e5m2 pairs"));
}

absl::StatusOr<Measurement> ParseOurRow(absl::string_view origin, int line,
                                        const std::vector<std::string>& f) {
  RETURN_IF_ERROR(csv::FieldCount(origin, line, f, 13));
  Measurement m;
  m.source = f[0];
  ASSIGN_OR_RETURN(m.gpu, csv::GpuField(origin, line, f[1]));
  ASSIGN_OR_RETURN(m.key.dtype, csv::DTypeField(origin, line, f[2]));
  m.dtype_detail = f[3];
  absl::StatusOr<Layout> layout = ParseLayout(f[4]);
  if (!layout.ok()) return LineError(origin, line, layout.status().message());
  m.key.layout = *layout;
  ASSIGN_OR_RETURN(m.key.shape.m, Dim(origin, line, "m", f[5], 1));
  ASSIGN_OR_RETURN(m.key.shape.n, Dim(origin, line, "n", f[6], 1));
  ASSIGN_OR_RETURN(m.key.shape.k, Dim(origin, line, "k", f[7], 1));
  ASSIGN_OR_RETURN(m.key.shape.batch, Dim(origin, line, "batch", f[8], 1));
  ASSIGN_OR_RETURN(m.median_s, Positive(origin, line, "median_s", f[9]));
  m.method = f[11];
  m.device = f[12];
  return m;
}

absl::StatusOr<Measurement> ParseXlaRow(absl::string_view origin, int line,
                                        const std::vector<std::string>& f) {
  if (f.size() != 7) {
    return LineError(origin, line, absl::StrCat("expected 7 fields, got ", f.size()));
  }
  Measurement m;
  m.source = "xla-default-matmul-perf-table";
  absl::StatusOr<std::string> gpu = XlaGpu(f[0]);
  if (!gpu.ok()) return LineError(origin, line, gpu.status().message());
  m.gpu = *gpu;
  absl::StatusOr<DType> dtype = XlaDtype(f[5]);
  if (!dtype.ok()) return LineError(origin, line, dtype.status().message());
  m.key.dtype = *dtype;
  m.dtype_detail = f[5];
  m.key.layout = Layout::kNN;  // a row-major dot with no transposes
  ASSIGN_OR_RETURN(m.key.shape.batch, Dim(origin, line, "b", f[1], 1));
  ASSIGN_OR_RETURN(m.key.shape.m, Dim(origin, line, "m", f[2], 1));
  ASSIGN_OR_RETURN(m.key.shape.n, Dim(origin, line, "n", f[3], 1));
  ASSIGN_OR_RETURN(m.key.shape.k, Dim(origin, line, "k", f[4], 1));
  ASSIGN_OR_RETURN(const double flops, Positive(origin, line, "flops_per_s", f[6]));
  m.median_s = GemmFlops(m.key.shape) / flops;
  m.method = std::string(kXlaTableMethod);
  return m;
}

// The value of `key=` in the sweep's comment lines ("" when absent).
std::string CommentValue(absl::string_view text, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "#")) continue;
    for (absl::string_view word : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      if (absl::ConsumePrefix(&word, key) && absl::ConsumePrefix(&word, "=")) {
        return std::string(word);
      }
    }
  }
  return "";
}

struct SweepContext {
  int64_t sm_count = 0;
  std::string method;
};

absl::StatusOr<Measurement> ParseTorchSweepRow(absl::string_view origin, int line,
                                               const SweepContext& ctx,
                                               const std::vector<std::string>& f) {
  RETURN_IF_ERROR(csv::FieldCount(origin, line, f, 11));
  Measurement m;
  m.source = std::string(kTorchSweepSource);
  m.device = f[0];
  // The memory size only tells A100s apart; a sweep names its H100/H200 by name and SM count.
  m.gpu = CatalogNameForDevice(f[0], ctx.sm_count, 0);
  if (m.gpu.empty()) {
    return LineError(origin, line,
                     absl::StrCat("gpu: \"", f[0], "\" with ", ctx.sm_count,
                                  " SMs is not a catalogued GPU (the comment line gives sms=)"));
  }
  ASSIGN_OR_RETURN(m.key.dtype, csv::DTypeField(origin, line, f[1]));
  ASSIGN_OR_RETURN(m.key.shape.m, Dim(origin, line, "m", f[2], 1));
  ASSIGN_OR_RETURN(m.key.shape.n, Dim(origin, line, "n", f[3], 1));
  ASSIGN_OR_RETURN(m.key.shape.k, Dim(origin, line, "k", f[4], 1));
  ASSIGN_OR_RETURN(m.key.shape.batch, Dim(origin, line, "batch", f[5], 1));
  absl::StatusOr<Layout> layout = ParseLayout(f[6]);
  if (!layout.ok()) return LineError(origin, line, layout.status().message());
  m.key.layout = *layout;
  ASSIGN_OR_RETURN(const double median_us, Positive(origin, line, "median_us", f[7]));
  m.median_s = median_us * 1e-6;
  if (!absl::SimpleAtod(f[9], &m.spread) || !(m.spread >= 0)) {
    return LineError(origin, line, absl::StrCat("spread: not a number >= 0: \"", f[9], "\""));
  }
  m.method = ctx.method.empty() ? "torch" : ctx.method;
  return m;
}

}  // namespace

absl::StatusOr<std::vector<Measurement>> ParseMeasurementsCsv(absl::string_view text,
                                                              absl::string_view origin) {
  std::string header;
  auto rows = CsvRows(text, &header);
  const bool ours = header == kMeasurementsHeader;
  const bool xla = header == kXlaHeader;
  const bool sweep = header == kTorchSweepHeader;
  if (!ours && !xla && !sweep) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": header \"", header, "\" is not \"", kMeasurementsHeader,
                     "\", XLA's \"", kXlaHeader, "\" or the device sweep's \"",
                     kTorchSweepHeader, "\""));
  }
  SweepContext ctx;
  if (sweep) {
    const std::string sms = CommentValue(text, "sms");
    if (!absl::SimpleAtoi(sms, &ctx.sm_count) || ctx.sm_count <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ": a device sweep needs its comment line's sms=N (SM count); got \"", sms, "\""));
    }
    ctx.method = CommentValue(text, "method");
  }
  std::vector<Measurement> out;
  out.reserve(rows.size());
  for (const auto& [line, fields] : rows) {
    absl::StatusOr<Measurement> m = ours    ? ParseOurRow(origin, line, fields)
                                    : xla   ? ParseXlaRow(origin, line, fields)
                                            : ParseTorchSweepRow(origin, line, ctx, fields);
    if (!m.ok()) return m.status();
    out.push_back(*std::move(m));
  }
  return out;
}

absl::StatusOr<std::vector<Measurement>> ReadMeasurementsFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path));
  return ParseMeasurementsCsv(text, path);
}

std::string FormatMeasurementsCsv(const std::vector<Measurement>& rows) {
  std::string out = absl::StrCat(kMeasurementsHeader, "\n");
  for (const Measurement& m : rows) {
    const GemmShape& s = m.key.shape;
    absl::StrAppend(&out, m.source, ",", m.gpu, ",", DTypeName(m.key.dtype), ",", m.dtype_detail,
                    ",", LayoutName(m.key.layout), ",", s.m, ",", s.n, ",", s.k, ",", s.batch, ",",
                    absl::StrFormat("%.6g", m.median_s), ",",
                    absl::StrFormat("%.4g", GemmFlops(s) / m.median_s / 1e12), ",", m.method, ",",
                    m.device, "\n");
  }
  return out;
}

absl::StatusOr<std::vector<TimeRatio>> ParseRatiosCsv(absl::string_view text,
                                                      absl::string_view origin) {
  std::string header;
  auto rows = CsvRows(text, &header);
  if (header != kRatiosHeader) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": header \"", header, "\" is not \"", kRatiosHeader, "\""));
  }
  std::vector<TimeRatio> out;
  for (const auto& [line, f] : rows) {
    if (f.size() != 14) {
      return LineError(origin, line, absl::StrCat("expected 14 fields, got ", f.size()));
    }
    // The first nine fields read like a measurement row without dtype_detail.
    std::vector<std::string> as_row = {f[0], f[1], f[2],  "", f[3],  f[4], f[5],
                                       f[6], f[7], f[12], "", f[13], ""};
    ASSIGN_OR_RETURN(Measurement m, ParseOurRow(origin, line, as_row));
    TimeRatio r;
    r.row = std::move(m);
    ASSIGN_OR_RETURN(r.reference.m, Dim(origin, line, "ref_m", f[8], 1));
    ASSIGN_OR_RETURN(r.reference.n, Dim(origin, line, "ref_n", f[9], 1));
    ASSIGN_OR_RETURN(r.reference.k, Dim(origin, line, "ref_k", f[10], 1));
    ASSIGN_OR_RETURN(r.reference.batch, Dim(origin, line, "ref_batch", f[11], 1));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace wavecrest
