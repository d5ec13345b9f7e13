// The calibration file: its JSON (serialize, parse with every field checked), applying it to the
// catalog, and the built-in one (core/calibration.h).
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

using nlohmann::json;

// The parameter fields the file carries (the fitted ones and the cited alignment constants; the
// fused-attention ones, optional so that files written before them still load, and its error
// band, whose low end is negative).
struct FileField {
  const char* name;
  double CostModelParams::*field;
  bool optional = false;
  bool may_be_negative = false;
};
const std::vector<FileField>& FileFields() {
  static const std::vector<FileField>* f = [] {
    auto* v = new std::vector<FileField>;
    for (const FittedParam& p : FittedParams()) v->push_back({p.name, p.field});
    v->push_back({"sub_alignment_efficiency", &CostModelParams::sub_alignment_efficiency});
    for (const FittedParam& p : AttentionFittedParams()) v->push_back({p.name, p.field, true});
    v->push_back({"flash_band_p10", &CostModelParams::flash_band_p10, true, true});
    v->push_back({"flash_band_p90", &CostModelParams::flash_band_p90, true});
    return v;
  }();
  return *f;
}

double Finite(double v) { return std::isfinite(v) ? v : 1e300; }

}  // namespace

std::string SerializeCalibration(const CalibrationFile& file) {
  json j;
  j["schema"] = file.schema;
  j["model"] = file.model;
  j["created"] = file.created;
  j["command"] = file.command;
  j["datasets"] = file.datasets;
  json entries = json::array();
  for (const CalibrationEntry& e : file.entries) {
    json je;
    je["gpu"] = e.gpu;
    json dts = json::array();
    for (DType d : e.dtypes) dts.push_back(std::string(DTypeName(d)));
    je["dtypes"] = dts;
    je["calibrated"] = e.info.calibrated;
    je["label"] = e.info.label;
    json params;
    for (const FileField& f : FileFields()) params[f.name] = e.params.*(f.field);
    params["k_tile_bytes"] = e.params.k_tile_bytes;
    je["params"] = params;
    json bands = json::array();
    for (const auto& b : e.info.bands) {
      bands.push_back({{"max_time_s", Finite(b.max_time_s)}, {"p10", b.p10}, {"p90", b.p90}});
    }
    je["bands"] = bands;
    if (e.info.misaligned_band) {
      je["misaligned_band"] = {{"p10", e.info.misaligned_band->p10},
                               {"p90", e.info.misaligned_band->p90}};
    }
    entries.push_back(je);
  }
  j["entries"] = entries;
  return j.dump(1) + "\n";
}

namespace {

// One entry of a calibration file: its GPU and dtypes, provenance, parameters (each finite and,
// unless it may be negative, >= 0) and error bands. A missing or mistyped field throws
// json::exception, which ParseCalibration turns into INVALID_ARGUMENT.
absl::StatusOr<CalibrationEntry> ParseCalibrationEntry(const json& je) {
  CalibrationEntry e;
  e.gpu = je.at("gpu").get<std::string>();
  for (const json& d : je.at("dtypes")) {
    ASSIGN_OR_RETURN(DType dt, ParseDType(d.get<std::string>()));
    e.dtypes.push_back(dt);
  }
  e.info.calibrated = je.at("calibrated").get<bool>();
  e.info.label = je.at("label").get<std::string>();
  const json& params = je.at("params");
  for (const FileField& f : FileFields()) {
    if (f.optional && !params.contains(f.name)) continue;  // the prior's
    const double v = params.at(f.name).get<double>();
    if (!std::isfinite(v) || (v < 0 && !f.may_be_negative)) {
      return absl::InvalidArgumentError(
          absl::StrCat("calibration: ", e.gpu, " ", f.name, " = ", v, " is not >= 0"));
    }
    e.params.*(f.field) = v;
  }
  e.params.k_tile_bytes = params.at("k_tile_bytes").get<int64_t>();
  if (e.params.k_tile_bytes < 1 || e.params.k_tile_bytes > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("calibration: ", e.gpu, " k_tile_bytes must be in [1, 4096]"));
  }
  if (!(e.params.peak_fraction > 0) || !(e.params.memory_efficiency > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "calibration: ", e.gpu, " peak_fraction and memory_efficiency must be > 0"));
  }
  for (const json& b : je.at("bands")) {
    double max_t = b.at("max_time_s").get<double>();
    if (max_t >= 1e299) max_t = std::numeric_limits<double>::infinity();
    e.info.bands.push_back({max_t, b.at("p10").get<double>(), b.at("p90").get<double>()});
  }
  if (je.contains("misaligned_band")) {
    const json& mb = je.at("misaligned_band");
    e.info.misaligned_band =
        CalibrationInfo::Band{0, mb.at("p10").get<double>(), mb.at("p90").get<double>()};
  }
  return e;
}

}  // namespace

absl::StatusOr<CalibrationFile> ParseCalibration(absl::string_view json_text) {
  json j = json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("calibration: not a JSON object");
  }
  CalibrationFile file;
  try {
    file.schema = j.at("schema").get<std::string>();
    if (file.schema != kCalibrationSchema) {
      return absl::FailedPreconditionError(absl::StrCat("calibration: schema \"", file.schema,
                                                        "\"; this build reads \"",
                                                        kCalibrationSchema, "\""));
    }
    file.model = j.at("model").get<std::string>();
    file.created = j.value("created", "");
    file.command = j.value("command", "");
    if (j.contains("datasets")) file.datasets = j["datasets"].get<std::vector<std::string>>();
    for (const json& je : j.at("entries")) {
      ASSIGN_OR_RETURN(CalibrationEntry e, ParseCalibrationEntry(je));
      file.entries.push_back(std::move(e));
    }
  } catch (const json::exception& ex) {
    return absl::InvalidArgumentError(absl::StrCat("calibration: ", ex.what()));
  }
  return file;
}

absl::Status ApplyCalibration(const CalibrationFile& file, std::vector<GpuSpec>& catalog) {
  if (file.model != kCostModelName) {
    return absl::FailedPreconditionError(
        absl::StrCat("calibration: fitted for model \"", file.model, "\"; this build runs \"",
                     kCostModelName, "\" (run `wavecrest calibrate` again)"));
  }
  for (const CalibrationEntry& e : file.entries) {
    auto it = std::find_if(catalog.begin(), catalog.end(),
                           [&](const GpuSpec& g) { return g.name == e.gpu; });
    if (it == catalog.end()) {
      return absl::NotFoundError(absl::StrCat("calibration: unknown gpu \"", e.gpu, "\""));
    }
    // The GPU itself, and its variants that take its calibration (GpuSpec::calibrated_as).
    for (GpuSpec& g : catalog) {
      if (g.name != e.gpu && g.calibrated_as != e.gpu) continue;
      for (DType d : e.dtypes) {
        CostModelParams& p = g.Model(d);
        for (const FileField& f : FileFields()) p.*(f.field) = e.params.*(f.field);
        p.k_tile_bytes = e.params.k_tile_bytes;
        g.Calibration(d) = e.info;
      }
    }
  }
  return absl::OkStatus();
}

void ApplyBuiltinCalibration(std::vector<GpuSpec>& catalog) {
  absl::StatusOr<CalibrationFile> file = ParseCalibration(BuiltinCalibrationJson());
  if (!file.ok()) return;  // the tests assert that the built-in file parses and applies
  std::vector<GpuSpec> copy = catalog;
  if (ApplyCalibration(*file, copy).ok()) catalog = std::move(copy);
}

}  // namespace wavecrest
