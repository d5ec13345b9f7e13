#include "client/advisor_client.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "service/errors.h"

namespace wavecrest {

AdvisorClient::AdvisorClient(const std::string& address, absl::Duration deadline,
                             const ClientSecurity& security)
    : token_(security.token), deadline_(deadline) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10'000);
  args.SetMaxReceiveMessageSize(64 << 20);
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      ChannelCredentialsFor(security.tls);
  if (!credentials.ok()) {
    setup_ = absl::InvalidArgumentError(absl::StrCat("--tls_*: ", credentials.status().message()));
    credentials = grpc::InsecureChannelCredentials();  // never used: every call fails first
  }
  channel_ = grpc::CreateCustomChannel(address, *credentials, args);
  stub_ = v1::Advisor::NewStub(channel_);
}

void AdvisorClient::Prepare(grpc::ClientContext* ctx) const {
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + deadline_));
  if (!token_.empty()) ctx->AddMetadata("authorization", absl::StrCat("Bearer ", token_));
}

absl::StatusOr<v1::AnalyzeResponse> AdvisorClient::Analyze(const v1::AnalyzeRequest& request) {
  if (!setup_.ok()) return setup_;
  grpc::ClientContext ctx;
  Prepare(&ctx);
  v1::AnalyzeResponse response;
  grpc::Status st = stub_->Analyze(&ctx, request, &response);
  if (!st.ok()) return FromGrpcStatus(st);
  return response;
}

absl::StatusOr<v1::ListDevicesResponse> AdvisorClient::ListDevices(bool include_internal) {
  if (!setup_.ok()) return setup_;
  grpc::ClientContext ctx;
  Prepare(&ctx);
  v1::ListDevicesResponse response;
  v1::ListDevicesRequest request;
  request.set_include_internal(include_internal);
  grpc::Status st = stub_->ListDevices(&ctx, request, &response);
  if (!st.ok()) return FromGrpcStatus(st);
  return response;
}

absl::StatusOr<v1::RecalibrateResponse> AdvisorClient::Recalibrate(
    const v1::RecalibrateRequest& request) {
  if (!setup_.ok()) return setup_;
  grpc::ClientContext ctx;
  Prepare(&ctx);
  v1::RecalibrateResponse response;
  grpc::Status st = stub_->Recalibrate(&ctx, request, &response);
  if (!st.ok()) return FromGrpcStatus(st);
  return response;
}

absl::StatusOr<v1::ClearQuarantineResponse> AdvisorClient::ClearQuarantine(
    const v1::ClearQuarantineRequest& request) {
  if (!setup_.ok()) return setup_;
  grpc::ClientContext ctx;
  Prepare(&ctx);
  v1::ClearQuarantineResponse response;
  grpc::Status st = stub_->ClearQuarantine(&ctx, request, &response);
  if (!st.ok()) return FromGrpcStatus(st);
  return response;
}

absl::StatusOr<std::string> AdvisorClient::ExportMeasurements(
    const v1::ExportMeasurementsRequest& request) {
  if (!setup_.ok()) return setup_;
  grpc::ClientContext ctx;
  Prepare(&ctx);
  auto reader = stub_->ExportMeasurements(&ctx, request);
  v1::ExportMeasurementsResponse msg;
  std::string csv;
  while (reader->Read(&msg)) csv += msg.csv();
  grpc::Status st = reader->Finish();
  if (!st.ok()) return FromGrpcStatus(st);
  return csv;
}

template <typename Response, typename Start>
absl::Status AdvisorClient::ReadStream(const Start& start,
                                       const std::function<void(const Response&)>& on_message) {
  if (!setup_.ok()) return setup_;
  grpc::ClientContext ctx;
  Prepare(&ctx);
  auto reader = start(&ctx);
  Response msg;
  while (reader->Read(&msg)) on_message(msg);
  return FromGrpcStatus(reader->Finish());
}

absl::Status AdvisorClient::TimeGemms(
    const v1::TimeGemmsRequest& request,
    const std::function<void(const v1::TimeGemmsResponse&)>& on_message) {
  return ReadStream<v1::TimeGemmsResponse>(
      [&](grpc::ClientContext* ctx) { return stub_->TimeGemms(ctx, request); }, on_message);
}

absl::Status AdvisorClient::TimeLayers(
    const v1::TimeLayersRequest& request,
    const std::function<void(const v1::TimeLayersResponse&)>& on_message) {
  return ReadStream<v1::TimeLayersResponse>(
      [&](grpc::ClientContext* ctx) { return stub_->TimeLayers(ctx, request); }, on_message);
}

absl::Status AdvisorClient::Recommend(
    const v1::RecommendRequest& request,
    const std::function<void(const v1::RecommendResponse&)>& on_message) {
  return ReadStream<v1::RecommendResponse>(
      [&](grpc::ClientContext* ctx) { return stub_->Recommend(ctx, request); }, on_message);
}

absl::Status AdvisorClient::Sweep(const v1::SweepRequest& request,
                                  const std::function<void(const v1::SweepResponse&)>& on_message) {
  return ReadStream<v1::SweepResponse>(
      [&](grpc::ClientContext* ctx) { return stub_->Sweep(ctx, request); }, on_message);
}

absl::StatusOr<std::string> AdvisorClient::Health(const std::string& service) {
  if (!setup_.ok()) return setup_;
  grpc::ClientContext ctx;
  Prepare(&ctx);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status st = grpc::health::v1::Health::NewStub(channel_)->Check(&ctx, request, &response);
  if (!st.ok()) return FromGrpcStatus(st);
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
}

}  // namespace wavecrest
