// `wavecrest time`: GEMMs (--gemm, or every GEMM of --model) or a model's layers whole
// (--layers), timed through --server, in request order, as a table or one JSON object.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "client/cli_commands.h"
#include "client/format.h"
#include "core/gemm.h"
#include "core/layers.h"
#include "core/model_spec.h"
#include "core/moe_routing.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"
#include "service/convert.h"
#include "service/errors.h"

namespace wavecrest {
namespace cli {
namespace {

// Results in request order.
template <typename Timing>
void SortByIndex(std::vector<Timing>* results) {
  std::sort(results->begin(), results->end(),
            [](const Timing& a, const Timing& b) { return a.index() < b.index(); });
}

// One object, like every command's JSON: the GPU, the results under `list` (protobuf JSON
// mapping) and the notes.
template <typename Timing>
std::string TimingsEnvelope(const std::string& gpu, const char* list,
                            const std::vector<Timing>& results,
                            const std::vector<std::string>& notes) {
  nlohmann::json envelope = {{"gpu", gpu}, {list, nlohmann::json::array()}, {"notes", notes}};
  for (const Timing& r : results) envelope[list].push_back(nlohmann::json::parse(FormatJson(r)));
  return envelope.dump(1) + "\n";
}

// The TimeLayers request the flags ask for: --model's layers, of --layer_kinds when given.
absl::StatusOr<v1::TimeLayersRequest> TimeLayersRequestFromFlags(const CliOptions& o) {
  if (o.model.empty()) {
    return FieldError("--model", "--layers times a model's layers: give --model FILE");
  }
  if (!o.gemm.empty()) return FieldError("--gemm", "not with --layers");
  if (o.autotune) {
    return FieldError("--autotune",
                      "not with --layers: a layer runs the heuristic's algorithms, as a "
                      "framework does");
  }
  v1::TimeLayersRequest request;
  request.set_gpu(o.gpu);
  request.set_warm_l2(o.warm_l2);
  if (absl::StatusOr<MoeRouting> r = ParseRouting(o.routing, ""); !r.ok()) {
    return FieldError("--routing", r.status().message());
  }
  request.set_routing(o.routing);
  ASSIGN_OR_RETURN(const v1::Mode mode, ParseMode(o.mode));
  request.set_mode(mode);
  for (absl::string_view name : absl::StrSplit(o.layer_kinds, ',', absl::SkipWhitespace())) {
    absl::StatusOr<LayerKind> kind = ParseLayerKind(absl::StripAsciiWhitespace(name));
    if (!kind.ok()) return FieldError("--layer_kinds", kind.status().message());
    request.add_kinds(ToProto(*kind));
  }
  ASSIGN_OR_RETURN(*request.mutable_model(), LoadSpecWithOverrides(o));
  return request;
}

// `time --layers`: the model's layers timed whole, beside the sum of their parts.
int DoTimeLayers(const CliOptions& o, std::ostream& out, std::ostream& err) {
  absl::StatusOr<v1::TimeLayersRequest> request = TimeLayersRequestFromFlags(o);
  if (!request.ok()) return Fail(err, request.status());
  const bool json = o.format == "json";
  ProgressBar bar(!json);
  std::vector<v1::LayerTiming> results;
  std::vector<std::string> notes;
  absl::Status st = ClientFor(o).TimeLayers(*request, [&](const v1::TimeLayersResponse& m) {
    if (m.has_progress()) bar.Update(m.progress());
    for (const std::string& n : m.notes()) notes.push_back(n);
    if (m.has_timing()) results.push_back(m.timing());
  });
  bar.Clear();
  if (!st.ok()) return Fail(err, st);
  SortByIndex(&results);
  if (json) {
    out << TimingsEnvelope(o.gpu, "layers", results, notes);
  } else {
    out << FormatLayerTimings(results);
    for (const auto& n : notes) out << "note: " << n << "\n";
  }
  return 0;
}

// The TimeGemms request the flags ask for: every GEMM of --model, or the --gemm list (bf16 TN
// unless --dtype and --layout say otherwise).
absl::StatusOr<v1::TimeGemmsRequest> TimeGemmsRequestFromFlags(const CliOptions& o) {
  v1::TimeGemmsRequest request;
  request.set_gpu(o.gpu);
  request.set_autotune(o.autotune);
  request.set_warm_l2(o.warm_l2);
  ASSIGN_OR_RETURN(const v1::Mode mode, ParseMode(o.mode));
  request.set_mode(mode);
  if (!o.model.empty()) {
    ASSIGN_OR_RETURN(*request.mutable_model(), LoadSpecWithOverrides(o));
    return request;
  }
  ASSIGN_OR_RETURN(std::vector<v1::GemmShape> gemms, ParseGemms(o.gemm));
  for (auto& g : gemms) *request.add_gemms() = g;
  ASSIGN_OR_RETURN(const DType d, ParseDType(o.dtype.empty() ? "bf16" : o.dtype));
  request.set_dtype(ToProto(d));
  ASSIGN_OR_RETURN(const Layout l, ParseLayout(o.layout.empty() ? "TN" : o.layout));
  request.set_layout(ToProto(l));
  return request;
}

// The GEMMs' rows and the notes the stream's progress carried ("note: ..."), as asked.
void WriteGemmTimings(const CliOptions& o, const std::vector<v1::GemmTiming>& results,
                      const std::vector<std::string>& notes, std::ostream& out) {
  if (o.format == "json") {
    std::vector<std::string> bare;
    for (const auto& n : notes) bare.push_back(n.substr(6));  // without "note: "
    out << TimingsEnvelope(o.gpu, "timings", results, bare);
    return;
  }
  out << FormatTimingHeader();
  for (const auto& r : results) out << FormatTiming(r);
  for (const auto& n : notes) out << n << "\n";
}

}  // namespace

int DoTime(const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (absl::Status st = NeedServer(o); !st.ok()) return Fail(err, st);
  if (o.layers) return DoTimeLayers(o, out, err);
  if (!o.routing.empty()) return Fail(err, FieldError("--routing", "only with --layers"));
  if (!o.layer_kinds.empty()) {
    return Fail(err, FieldError("--layer_kinds", "only with --layers"));
  }
  absl::StatusOr<v1::TimeGemmsRequest> request = TimeGemmsRequestFromFlags(o);
  if (!request.ok()) return Fail(err, request.status());
  ProgressBar bar(o.format != "json");
  std::vector<v1::GemmTiming> results;
  std::vector<std::string> notes;
  absl::Status st = ClientFor(o).TimeGemms(*request, [&](const v1::TimeGemmsResponse& m) {
    if (m.has_progress()) {
      bar.Update(m.progress());
      if (m.progress().message().rfind("note: ", 0) == 0) {
        notes.push_back(m.progress().message());
      }
    }
    if (m.has_timing()) results.push_back(m.timing());
  });
  bar.Clear();
  if (!st.ok()) return Fail(err, st);
  SortByIndex(&results);
  WriteGemmTimings(o, results, notes, out);
  return 0;
}

}  // namespace cli
}  // namespace wavecrest
