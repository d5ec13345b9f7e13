// The CLI's rendering shared by every command: short names, JSON, human units, devices, timings,
// sweeps and errors (an Analyze answer: format_analysis.cc and format_step.cc).
#include "client/format.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"
#include "client/format_internal.h"
#include "client/table.h"
#include "service/errors.h"

namespace wavecrest {
namespace {

std::string Shape(const v1::GemmShape& s) {
  return absl::StrCat(s.m(), "x", s.n(), "x", s.k(),
                      s.batch() > 1 ? absl::StrCat(" b", s.batch()) : "");
}

}  // namespace

std::string LayoutShort(v1::Layout l) {
  switch (l) {
    case v1::LAYOUT_TN:
      return "TN";
    case v1::LAYOUT_NN:
      return "NN";
    case v1::LAYOUT_NT:
      return "NT";
    default:
      return "?";
  }
}
std::string DtypeShort(v1::Dtype d) {
  switch (d) {
    case v1::DTYPE_BF16:
      return "bf16";
    case v1::DTYPE_FP16:
      return "fp16";
    case v1::DTYPE_FP32:
      return "fp32";
    case v1::DTYPE_TF32:
      return "tf32";
    case v1::DTYPE_FP8_E4M3:
      return "fp8";
    default:
      return "?";
  }
}

std::string SourceName(v1::Source s) {
  switch (s) {
    case v1::SOURCE_MEASURED:
      return "MEASURED";
    case v1::SOURCE_CACHED:
      return "CACHED";
    case v1::SOURCE_PREDICTED:
      return "PREDICTED";
    default:
      return "?";
  }
}

std::string FormatJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

std::string HumanSeconds(double s) {
  if (s >= 1) return absl::StrFormat("%.3f s", s);
  if (s >= 1e-3) return absl::StrFormat("%.3f ms", s * 1e3);
  return absl::StrFormat("%.1f us", s * 1e6);
}

std::string HumanCount(double n) {
  if (n >= 1e12) return absl::StrFormat("%.2fT", n / 1e12);
  if (n >= 1e9) return absl::StrFormat("%.2fB", n / 1e9);
  if (n >= 1e6) return absl::StrFormat("%.1fM", n / 1e6);
  if (n >= 1e3) return absl::StrFormat("%.1fK", n / 1e3);
  return absl::StrFormat("%.0f", n);
}

std::string FormatDevices(const v1::ListDevicesResponse& r) {
  std::string out;
  if (r.workers().empty()) {
    absl::StrAppend(&out, "workers: none (measurements unavailable; predictions only)\n\n");
  } else {
    Table w({"worker", "kind", "device", "backend", "cc", "SMs", "up", "pid", "restarts",
             "last reason"});
    for (const auto& d : r.workers()) {
      w.Add({d.id(), d.device().catalog_name(), d.device().name(), d.device().backend(),
             absl::StrCat(d.device().compute_capability()), absl::StrCat(d.device().sm_count()),
             d.up() ? "yes" : "no", d.pid() > 0 ? absl::StrCat(d.pid()) : "-",
             absl::StrCat(d.restarts()),
             d.last_restart_reason().empty() ? "-" : d.last_restart_reason()});
    }
    absl::StrAppend(&out, w.Render(), "\n");
  }
  Table c({"gpu", "name", "arch", "SMs", "bf16 TFLOP/s", "fp8 TFLOP/s", "HBM GB/s", "L2 MiB",
           "align B"});
  for (const auto& g : r.catalog()) {
    c.Add({g.name(), g.display_name(), g.architecture(), absl::StrCat(g.sm_count()),
           g.peak_bf16_tflops() > 0 ? absl::StrFormat("%.0f", g.peak_bf16_tflops()) : "-",
           g.peak_fp8_tflops() > 0 ? absl::StrFormat("%.0f", g.peak_fp8_tflops()) : "-",
           absl::StrFormat("%.0f", g.memory_bandwidth_gbps()), absl::StrCat(g.l2_bytes() >> 20),
           absl::StrCat(g.alignment_bytes())});
  }
  absl::StrAppend(&out, c.Render());
  return out;
}

absl::string_view StorageNote(v1::StorageFate f) {
  switch (f) {
    case v1::STORAGE_FATE_SPOOLED:
      return " (spooled)";
    case v1::STORAGE_FATE_NOT_STORED:
      return " (not stored)";
    default:
      return "";
  }
}

std::string FormatTimingHeader() {
  return absl::StrFormat("%-5s %-28s %-6s %-5s %12s %9s %7s %7s %6s %7s  %s\n", "#", "shape",
                         "layout", "dtype", "time", "TFLOP/s", "samples", "spread", "algo",
                         "SM MHz", "source");
}

std::string FormatTiming(const v1::GemmTiming& t) {
  const v1::TimingStats& s = t.stats();
  std::string line = absl::StrFormat(
      "%-5d %-28s %-6s %-5s %12s %9.1f %7s %7s %6s %7s  %s", t.index(), Shape(t.shape()),
      LayoutShort(t.layout()), DtypeShort(t.dtype()), HumanSeconds(t.time_s()), t.tflops(),
      s.samples() > 0 ? absl::StrCat(s.samples()) : "-",
      s.samples() > 0 ? absl::StrFormat("%.2f%%", 100 * s.relative_spread()) : "-",
      s.samples() > 0 ? absl::StrCat(s.algorithm_id()) : "-",
      s.sm_clock_mhz() > 0 ? absl::StrCat(s.sm_clock_mhz()) : "-",
      absl::StrCat(SourceName(t.provenance().source()),
                   t.provenance().from_cache() && t.provenance().source() != v1::SOURCE_CACHED
                       ? " (cache)"
                       : "",
                   StorageNote(t.provenance().storage())));
  if (!t.used_by().empty()) absl::StrAppend(&line, "  ", absl::StrJoin(t.used_by(), ", "));
  return line + "\n";
}

std::string FormatSweep(const v1::SweepResponse& r, absl::string_view dimension) {
  int64_t valid = 0;
  for (const v1::SweepPoint& p : r.points()) valid += p.valid();
  std::string out = absl::StrFormat("sweep of %s on %s: %d points (%d legal)\n", dimension,
                                    r.gpu(), r.points_size(), valid);
  if (r.has_assumed()) {
    absl::StrAppend(&out, "assumes: ", r.assumed().summary(), " (", dimension, " as each row says)\n");
  }
  absl::StrAppend(&out, "\n");
  const bool model = r.vary() != v1::SWEEP_DIMENSION_GEMM_M &&
                     r.vary() != v1::SWEEP_DIMENSION_GEMM_N &&
                     r.vary() != v1::SWEEP_DIMENSION_GEMM_K;
  std::vector<std::string> header = {dimension.empty() ? "value" : std::string(dimension), "time",
                                     "TFLOP/s", "MFU"};
  if (model) header.insert(header.end(), {"tok/s/GPU", "params"});
  header.insert(header.end(), {"band", "source", "rules broken"});
  Table t(header);
  for (const v1::SweepPoint& p : r.points()) {
    if (!p.valid()) {
      std::vector<std::string> row = {absl::StrCat(p.value()), "-", "-", "-"};
      if (model) row.insert(row.end(), {"-", "-"});
      row.insert(row.end(), {"-", "not legal", p.invalid_reason()});
      t.Add(std::move(row));
      continue;
    }
    std::vector<std::string> row = {absl::StrCat(p.value()), HumanSeconds(p.time_s()),
                                    absl::StrFormat("%.1f", p.tflops()),
                                    absl::StrFormat("%.1f%%", 100 * p.mfu())};
    if (model) {
      row.insert(row.end(), {HumanCount(p.tokens_per_second_per_gpu()),
                             HumanCount(static_cast<double>(p.total_params()))});
    }
    row.insert(
        row.end(),
        {p.source() == v1::SOURCE_PREDICTED
             ? absl::StrFormat("%+.0f/%+.0f%%", 100 * p.error_band_p10(), 100 * p.error_band_p90())
             : "",
         SourceName(p.source()),
         p.rules_broken().empty() ? "none" : absl::StrJoin(p.rules_broken(), ",")});
    t.Add(std::move(row));
  }
  absl::StrAppend(&out, t.Render());
  for (const auto& n : r.notes()) absl::StrAppend(&out, "note: ", n, "\n");
  return out;
}

std::string FormatError(const absl::Status& status) {
  std::string out = absl::StrCat(absl::StatusCodeToString(status.code()), ": ");
  std::vector<FieldViolation> v = ViolationsOf(status);
  if (v.empty()) {
    absl::StrAppend(&out, status.message());
  } else {
    absl::StrAppend(&out, absl::StrJoin(v, "; ", [](std::string* o, const FieldViolation& f) {
      absl::StrAppend(o, f.field, ": ", f.description);
    }));
  }
  const absl::Duration retry = RetryDelayOf(status);
  if (retry > absl::ZeroDuration()) {
    absl::StrAppend(&out, " (retry after ", absl::FormatDuration(retry), ")");
  }
  return out;
}

}  // namespace wavecrest
