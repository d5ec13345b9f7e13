// A small C++ client for wavecrest.v1.Advisor: deadlines on every call, errors as absl::Status
// carrying the server's field violations and retry hints (see service/errors.h).
#ifndef WAVECREST_CLIENT_ADVISOR_CLIENT_H_
#define WAVECREST_CLIENT_ADVISOR_CLIENT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "service/tls.h"
#include "wavecrest/v1/advisor.grpc.pb.h"

namespace wavecrest {

// How a client proves itself: TLS (ca: the server's CA; cert and key for mutual TLS) and a bearer
// token.
struct ClientSecurity {
  TlsFiles tls;
  std::string token;
};

class AdvisorClient {
 public:
  // `address` is host:port (or any gRPC target). Bad TLS files make every call fail with the
  // reason.
  explicit AdvisorClient(const std::string& address, absl::Duration deadline = absl::Seconds(60),
                         const ClientSecurity& security = {});

  absl::StatusOr<v1::AnalyzeResponse> Analyze(const v1::AnalyzeRequest& request);
  // `include_internal`: workers' socket paths, addresses and PIDs too (an admin's call).
  absl::StatusOr<v1::ListDevicesResponse> ListDevices(bool include_internal = false);
  // Streams: every message goes to `on_message`; returns the final status.
  absl::Status TimeGemms(const v1::TimeGemmsRequest& request,
                         const std::function<void(const v1::TimeGemmsResponse&)>& on_message);
  absl::Status TimeLayers(const v1::TimeLayersRequest& request,
                          const std::function<void(const v1::TimeLayersResponse&)>& on_message);
  absl::Status Recommend(const v1::RecommendRequest& request,
                         const std::function<void(const v1::RecommendResponse&)>& on_message);
  absl::Status Sweep(const v1::SweepRequest& request,
                     const std::function<void(const v1::SweepResponse&)>& on_message);
  absl::StatusOr<v1::RecalibrateResponse> Recalibrate(const v1::RecalibrateRequest& request);
  absl::StatusOr<v1::ClearQuarantineResponse> ClearQuarantine(
      const v1::ClearQuarantineRequest& request);
  // The cache's GPU measurements as one CSV text (the chunks joined).
  absl::StatusOr<std::string> ExportMeasurements(const v1::ExportMeasurementsRequest& request);
  // grpc.health.v1 Check of `service` ("" = overall): "SERVING", "NOT_SERVING", ...
  absl::StatusOr<std::string> Health(const std::string& service);

  std::shared_ptr<grpc::Channel> channel() const { return channel_; }

 private:
  void Prepare(grpc::ClientContext* ctx) const;
  // One server-streaming call: `start(ctx)` opens it; every message goes to `on_message`.
  template <typename Response, typename Start>
  absl::Status ReadStream(const Start& start,
                          const std::function<void(const Response&)>& on_message);
  absl::Status setup_;
  std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Advisor::Stub> stub_;
  absl::Duration deadline_;
};

}  // namespace wavecrest

#endif  // WAVECREST_CLIENT_ADVISOR_CLIENT_H_
