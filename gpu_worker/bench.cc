#include "gpu_worker/bench.h"

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "core/cost_model.h"
#include "core/gpu_catalog.h"
#include "core/timing_stats.h"
#include "google/protobuf/util/json_util.h"
#include "service/advisor_logic.h"
#include "service/spec_io.h"

namespace wavecrest {

absl::StatusOr<std::vector<BenchGemm>> ParseGemmCsv(absl::string_view text, DType dtype) {
  std::vector<BenchGemm> out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#' || line[0] == 'm' || line[0] == 'M') continue;
    std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    for (auto& x : f) x = absl::StripAsciiWhitespace(x);
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_no, " (\"", line, "\"): ", why));
    };
    if (f.size() < 3 || f.size() > 5) return bad("want m,n,k[,batch[,layout]]");
    BenchGemm g;
    g.key.dtype = dtype;
    int64_t* dims[] = {&g.key.shape.m, &g.key.shape.n, &g.key.shape.k, &g.key.shape.batch};
    for (size_t i = 0; i < std::min<size_t>(f.size(), 4); ++i) {
      if (!absl::SimpleAtoi(f[i], dims[i]) || *dims[i] < 1 || *dims[i] > (int64_t{1} << 31) - 1) {
        return bad(absl::StrCat("field ", i + 1, " must be an integer in [1, 2^31)"));
      }
    }
    if (f.size() == 5) {
      absl::StatusOr<Layout> layout = ParseLayout(absl::AsciiStrToUpper(f[4]));
      if (!layout.ok()) return bad("layout must be TN, NN or NT");
      g.key.layout = *layout;
    }
    out.push_back(g);
  }
  if (out.empty()) return absl::InvalidArgumentError("no GEMMs in the CSV");
  return out;
}

absl::StatusOr<std::vector<BenchGemm>> ModelGemms(const std::string& path) {
  absl::StatusOr<v1::ModelSpec> proto = LoadModelFile(path);
  if (!proto.ok()) return proto.status();
  absl::StatusOr<ModelSpec> spec = SpecFromRequest(*proto, "model.");
  if (!spec.ok()) return spec.status();
  std::vector<BenchGemm> out;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int, int>, size_t> index;
  for (const Gemm& g : BuildGemms(*spec)) {
    if (g.fused_attention) continue;
    const GemmKey k = g.key();
    auto [it, fresh] = index.try_emplace({k.shape.m, k.shape.n, k.shape.k, k.shape.batch,
                                          static_cast<int>(k.layout), static_cast<int>(k.dtype)},
                                         out.size());
    if (fresh) out.push_back({k, {}});
    out[it->second].used_by.push_back(absl::StrCat(g.name, " ", PassName(g.pass)));
  }
  return out;
}

namespace {
nlohmann::json ProtoJson(const google::protobuf::Message& m) {
  std::string s;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &s, o);
  return nlohmann::json::parse(s, nullptr, false);
}

// A bench row's result: time, throughput, source and statistics, or the error.
template <typename Timing>
void AddResult(const absl::StatusOr<Timing>& t, nlohmann::json* row) {
  if (!t.ok()) {
    (*row)["error"] = {{"code", absl::StatusCodeToString(t.status().code())},
                       {"message", std::string(t.status().message())}};
    return;
  }
  (*row)["time_s"] = t->time_s();
  (*row)["tflops"] = t->tflops();
  (*row)["source"] = v1::Source_Name(t->provenance().source());
  if (t->has_stats()) (*row)["stats"] = ProtoJson(t->stats());
}

// The catalog's entry for the backend's device, when it has one.
const GpuSpec* CatalogGpu(const TimingBackend& backend) {
  absl::StatusOr<const GpuSpec*> gpu = FindGpu(backend.Fingerprint().catalog_name());
  return gpu.ok() ? *gpu : nullptr;
}

nlohmann::json BenchHeader(const TimingBackend& backend, const std::string& method,
                           const TimingParams& params) {
  nlohmann::json doc;
  doc["device"] = ProtoJson(backend.Fingerprint());
  doc["method"] = method;
  doc["options"] = {{"autotune", params.autotune},
                    {"top_k", params.top_k},
                    {"warm_l2", params.warm_l2},
                    {"target_relative_spread", params.target_spread},
                    {"max_seconds_per_gemm", params.max_seconds},
                    {"hot_window_s", params.hot_window_s},
                    {"hot_warmup_s", params.hot_warmup_s},
                    {"hot_min_sampled_s", params.hot_min_sampled_s}};
  doc["started_at"] = absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone());
  return doc;
}
}  // namespace

nlohmann::json RunBench(TimingBackend& backend, const std::vector<BenchGemm>& gemms,
                        const TimingParams& params, std::ostream* progress) {
  nlohmann::json doc = BenchHeader(
      backend, TimingMethod(backend.Fingerprint().backend(), params.autotune, params.warm_l2),
      params);
  // Datasheet dense peaks of the catalogued device, TFLOP/s, for targets relative to the device.
  if (const GpuSpec* gpu = CatalogGpu(backend); gpu != nullptr) {
    nlohmann::json peaks = nlohmann::json::object();
    for (DType d : {DType::kBf16, DType::kFp16, DType::kTf32, DType::kFp32, DType::kFp8E4M3}) {
      if (gpu->Supports(d)) peaks[std::string(DTypeName(d))] = gpu->PeakFlops(d) / 1e12;
    }
    doc["peak_tflops"] = std::move(peaks);
  }
  // The whole list together (TimingBackend::TimeTogether: interleaved on a GPU). A row's wall_s
  // is the list's wall time over its GEMMs: what measuring one costs in a sweep.
  std::vector<GemmKey> keys;
  for (const BenchGemm& g : gemms) keys.push_back(g.key);
  const absl::Time start = absl::Now();
  const std::vector<absl::StatusOr<v1::GemmTiming>> timed =
      backend.TimeTogether(keys, params, [](size_t) { return true; });
  doc["wall_s"] = absl::ToDoubleSeconds(absl::Now() - start);
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < gemms.size(); ++i) {
    const GemmKey& key = gemms[i].key;
    const absl::StatusOr<v1::GemmTiming>& t = timed[i];
    nlohmann::json row = {{"m", key.shape.m},
                          {"n", key.shape.n},
                          {"k", key.shape.k},
                          {"batch", key.shape.batch},
                          {"layout", std::string(LayoutName(key.layout))},
                          {"dtype", std::string(DTypeName(key.dtype))}};
    if (!gemms[i].used_by.empty()) row["used_by"] = gemms[i].used_by;
    AddResult(t, &row);
    row["wall_s"] = doc["wall_s"].get<double>() / static_cast<double>(gemms.size());
    if (progress) {
      *progress << absl::StrFormat(
          "[%zu/%zu] %s: %s\n", i + 1, gemms.size(), GemmKeyString(key),
          t.ok() ? absl::StrFormat("%.2f us, %.1f TFLOP/s", t->time_s() * 1e6, t->tflops())
                 : t.status().ToString());
    }
    rows.push_back(std::move(row));
  }
  doc["gemms"] = std::move(rows);
  return doc;
}

absl::StatusOr<std::vector<LayerKey>> ModelLayers(const std::string& path) {
  absl::StatusOr<v1::ModelSpec> proto = LoadModelFile(path);
  if (!proto.ok()) return proto.status();
  absl::StatusOr<ModelSpec> spec = SpecFromRequest(*proto, "model.");
  if (!spec.ok()) return spec.status();
  return LayerKeysOf(*spec);
}

nlohmann::json RunLayerBench(TimingBackend& backend, const std::vector<LayerKey>& layers,
                             const TimingParams& params, std::ostream* progress) {
  nlohmann::json doc = BenchHeader(
      backend, LayerTimingMethod(backend.Fingerprint().backend(), params.warm_l2), params);
  const GpuSpec* gpu = CatalogGpu(backend);
  nlohmann::json rows = nlohmann::json::array();
  const absl::Time start = absl::Now();
  const std::vector<absl::StatusOr<v1::LayerTiming>> timed =
      backend.TimeLayersTogether(layers, params, [](size_t) { return true; });
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerKey& key = layers[i];
    nlohmann::json row = {{"key", LayerKeyString(key)},
                          {"kind", std::string(LayerKindName(key.kind))}};
    if (gpu != nullptr) row["predicted_sum_s"] = PredictLayer(*gpu, key).time_s;
    const absl::StatusOr<v1::LayerTiming>& t = timed[i];
    AddResult(t, &row);
    if (progress) {
      *progress << absl::StrFormat(
          "[%zu/%zu] %s: %s\n", i + 1, layers.size(), LayerKeyString(key),
          t.ok() ? absl::StrFormat("%.3f ms, %.1f TFLOP/s", t->time_s() * 1e3, t->tflops())
                 : t.status().ToString());
    }
    rows.push_back(std::move(row));
  }
  doc["wall_s"] = absl::ToDoubleSeconds(absl::Now() - start);
  doc["layers"] = std::move(rows);
  return doc;
}

std::string LayerBenchTable(const nlohmann::json& doc) {
  std::string out = absl::StrFormat("device: %s (%s)\nmethod: %s\n%12s %12s %9s %8s %7s  %s\n",
                                    doc["device"].value("name", ""),
                                    doc["device"].value("backend", ""), doc.value("method", ""),
                                    "time_ms", "sum_ms", "TFLOP/s", "spread%", "samples", "layer");
  for (const auto& r : doc["layers"]) {
    const std::string key = r.value("key", "");
    const double sum_ms = r.value("predicted_sum_s", 0.0) * 1e3;
    if (r.contains("error")) {
      out += absl::StrFormat("%12s %12.3f %9s %8s %7s  %s\n    error: %s\n", "-", sum_ms, "-", "-",
                             "-", key, r["error"].value("message", ""));
      continue;
    }
    const nlohmann::json stats = r.value("stats", nlohmann::json::object());
    out +=
        absl::StrFormat("%12.3f %12.3f %9.1f %8.2f %7d  %s\n", r.value("time_s", 0.0) * 1e3, sum_ms,
                        r.value("tflops", 0.0), stats.value("relative_spread", 0.0) * 100,
                        stats.value("samples", 0), key);
  }
  out += absl::StrFormat("wall time: %.2f s\n", doc.value("wall_s", 0.0));
  return out;
}

std::string BenchTable(const nlohmann::json& doc) {
  std::string out = absl::StrFormat(
      "device: %s (%s)\nmethod: %s\n%8s %8s %8s %6s %3s %-8s %12s %9s %8s %7s %12s  %s\n",
      doc["device"].value("name", ""), doc["device"].value("backend", ""), doc.value("method", ""),
      "m", "n", "k", "batch", "lay", "dtype", "median_us", "TFLOP/s", "spread%", "samples", "algo",
      "stopped (the JSON has what the stopping rule saw)");
  for (const auto& r : doc["gemms"]) {
    out += absl::StrFormat("%8d %8d %8d %6d %3s %-8s ", r["m"].get<int64_t>(),
                           r["n"].get<int64_t>(), r["k"].get<int64_t>(), r["batch"].get<int64_t>(),
                           r["layout"].get<std::string>(), r["dtype"].get<std::string>());
    if (r.contains("error")) {
      out += absl::StrCat("error: ", r["error"]["message"].get<std::string>(), "\n");
      continue;
    }
    const nlohmann::json stats = r.value("stats", nlohmann::json::object());
    // "median stable to ±0.50% after ..." -> "median"; "spread at most ..." -> "spread".
    const std::string stop = stats.value("stop_rule", "");
    out += absl::StrFormat(
        "%12.2f %9.1f %8.2f %7d %12s  %s\n", r["time_s"].get<double>() * 1e6,
        r["tflops"].get<double>(),
        stats.value("relative_spread", 0.0) * 100, stats.value("samples", 0),
        stats.contains("algorithm_id")
            ? (stats["algorithm_id"].is_string() ? stats["algorithm_id"].get<std::string>()
                                                 : stats["algorithm_id"].dump())
            : std::string(r.value("source", "") == "SOURCE_PREDICTED" ? "predicted" : "-"),
        stop.empty() ? "-" : stop.substr(0, stop.find(' ')));
  }
  out += absl::StrFormat("wall time: %.2f s\n", doc.value("wall_s", 0.0));
  return out;
}

std::string SamplesLogLine(absl::string_view key, const std::vector<double>& samples_s,
                           const StoppingRule& rule, double sampling_wall_s,
                           absl::string_view stopped, const std::vector<int>& nvml_mhz,
                           const std::vector<int>& probe_mhz) {
  nlohmann::json j;
  j["key"] = std::string(key);
  // Everything of the rule but the policy knobs replay takes from its flags.
  j["rule"] = {{"min_samples", rule.min_samples},
               {"max_samples", rule.max_samples},
               {"min_sampled_s", rule.min_sampled_s},
               {"launches_per_sample", rule.sample_scale},
               {"median_precision", rule.median_precision}};
  j["sampling_wall_s"] = sampling_wall_s;
  j["stopped"] = std::string(stopped);
  j["samples_s"] = samples_s;
  if (!nvml_mhz.empty()) j["nvml_mhz"] = nvml_mhz;
  if (!probe_mhz.empty()) j["probe_mhz"] = probe_mhz;
  return j.dump() + "\n";
}

absl::StatusOr<std::string> ReplaySamplesLog(absl::string_view log, const TimingParams& params) {
  std::string out = absl::StrFormat("%-44s %8s %-8s %8s %-7s %9s\n", "key", "recorded", "stopped",
                                    "replayed", "why", "median Δ");
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n', absl::SkipWhitespace())) {
    ++line_no;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("samples_s") || !j["samples_s"].is_array() ||
        j["samples_s"].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--samples_log line ", line_no, ": not a record (want key, samples_s, sampling_wall_s)"));
    }
    std::vector<double> samples;
    for (const auto& v : j["samples_s"]) {
      if (!v.is_number()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--samples_log line ", line_no, ": samples_s holds a non-number"));
      }
      samples.push_back(v.get<double>());
    }
    // The rule the stream was taken under (the engine's per-GEMM schedule: minimum samples and
    // sampled time for long launches), with this replay's target spread and budget.
    StoppingRule rule;
    const nlohmann::json recorded = j.value("rule", nlohmann::json::object());
    rule.min_samples = recorded.value("min_samples", rule.min_samples);
    rule.max_samples = recorded.value("max_samples", rule.max_samples);
    rule.min_sampled_s = recorded.value("min_sampled_s", rule.min_sampled_s);
    rule.sample_scale = recorded.value("launches_per_sample", rule.sample_scale);
    rule.median_precision = recorded.value("median_precision", rule.median_precision);
    rule.target_spread = params.target_spread;
    rule.budget_s = params.max_seconds;
    const Replayed r = ReplayStop(rule, samples, j.value("sampling_wall_s", 0.0));
    const double all = Percentile(samples, 0.5);
    const double at_stop =
        Percentile(std::vector<double>(samples.begin(), samples.begin() + r.samples), 0.5);
    const std::string stopped = j.value("stopped", "");
    out += absl::StrFormat("%-44s %8d %-8s %8d %-7s %+8.2f%%\n", j.value("key", "?"),
                           samples.size(), stopped.substr(0, stopped.find(' ')), r.samples,
                           StopReasonName(r.why), all > 0 ? 100 * (at_stop / all - 1) : 0.0);
  }
  return out;
}

}  // namespace wavecrest
