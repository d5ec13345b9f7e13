// The commands that only ask a server: devices, health, export-measurements, recalibrate.
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "client/cli_commands.h"
#include "client/format.h"
#include "core/model_spec.h"
#include "nlohmann/json.hpp"
#include "service/convert.h"

namespace wavecrest {
namespace cli {

int DoDevices(const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (absl::Status st = NeedServer(o); !st.ok()) return Fail(err, st);
  absl::StatusOr<v1::ListDevicesResponse> r = ClientFor(o).ListDevices(o.internal);
  if (!r.ok()) return Fail(err, r.status());
  out << (o.format == "json" ? FormatJson(*r) + "\n" : FormatDevices(*r));
  return 0;
}

int DoHealth(const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (absl::Status st = NeedServer(o); !st.ok()) return Fail(err, st);
  const bool json = o.format == "json";
  AdvisorClient client = ClientFor(o);
  const int not_serving = 10 + static_cast<int>(absl::StatusCode::kUnavailable);
  if (o.health_service_given) {  // one service: a probe's question (containers, workers)
    absl::StatusOr<std::string> h = client.Health(o.health_service);
    if (!h.ok()) return Fail(err, h.status());
    if (json) {
      out << nlohmann::json{{"service", o.health_service}, {"status", *h}}.dump() << "\n";
    } else {
      out << (o.health_service.empty() ? "(overall)" : o.health_service) << ": " << *h << "\n";
    }
    return *h == "SERVING" ? 0 : not_serving;
  }
  // Exit 0 only when all three are SERVING (answering and measuring); a load balancer's
  // question ("can it answer?") is --service=wavecrest.v1.Advisor.
  bool all_serving = true;
  nlohmann::json j;
  const std::pair<const char*, const char*> services[] = {
      {"", "overall"},
      {"wavecrest.v1.Advisor", "advisor"},
      {"wavecrest.v1.Advisor/measure", "measure"}};
  for (const auto& [service, key] : services) {
    absl::StatusOr<std::string> h = client.Health(service);
    if (!h.ok()) return Fail(err, h.status());
    j[key] = *h;
    if (!json) out << (*service ? service : "(overall)") << ": " << *h << "\n";
    all_serving &= *h == "SERVING";
  }
  if (json) out << j.dump() << "\n";
  return all_serving ? 0 : not_serving;
}

int DoExportMeasurements(const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (absl::Status st = NeedServer(o); !st.ok()) return Fail(err, st);
  v1::ExportMeasurementsRequest request;
  if (o.gpu_given) request.set_gpu(o.gpu);
  absl::StatusOr<std::string> csv = ClientFor(o).ExportMeasurements(request);
  if (!csv.ok()) return Fail(err, csv.status());
  if (o.out.empty()) {
    out << *csv;
  } else if (absl::Status st = WriteFile(o.out, *csv); !st.ok()) {
    return Fail(err, st);
  }
  return 0;
}

int DoRecalibrate(const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (absl::Status st = NeedServer(o); !st.ok()) return Fail(err, st);
  v1::RecalibrateRequest request;
  if (o.gpu_given) request.set_gpu(o.gpu);
  request.set_min_rows(o.min_rows);
  absl::StatusOr<v1::RecalibrateResponse> r = ClientFor(o).Recalibrate(request);
  if (!r.ok()) return Fail(err, r.status());
  if (o.format == "json") {
    out << FormatJson(*r) << "\n";
    return 0;
  }
  if (r->results().empty()) out << "no GPU measurements in the server's measurement store\n";
  for (const v1::RecalibrationResult& x : r->results()) {
    out << x.gpu() << " " << DTypeName(*FromProto(x.dtype())) << ": " << x.rows()
        << " measurements; "
        << (x.applied() ? absl::StrFormat("refitted, CV median error %.1f%%, p90 %.1f%%",
                                          100 * x.cv_median_error(), 100 * x.cv_p90_error())
                        : "not refitted (" + x.reason() + ")")
        << "\n";
  }
  return 0;
}

}  // namespace cli
}  // namespace wavecrest
