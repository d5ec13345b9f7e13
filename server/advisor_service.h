// wavecrest.v1.Advisor on the gRPC callback API.
//
// The transport: each handler admits the caller (its token, before a byte of the request is
// parsed), decodes within the method's limits, calls the logic layer (service/) and encodes.
// Analyze, ListDevices, ParseModel, ExportModel and ListModels are answered on the callback thread:
// they are bounded, CPU-only work (inputs within core/json_limits.h), and queueing them would only
// add latency. TimeGemms, TimeLayers,
// Recommend and Sweep can run for seconds to minutes (GPU work): they take one road (StreamJob)
// through the bounded JobQueue, are refused with RESOURCE_EXHAUSTED and a retry delay when it is
// full, and poll cancellation and the deadline between units of work.
#ifndef WAVECREST_SERVER_ADVISOR_SERVICE_H_
#define WAVECREST_SERVER_ADVISOR_SERVICE_H_

#include <atomic>
#include <functional>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "server/auth.h"
#include "server/job_queue.h"
#include "server/metrics.h"
#include "server/request_gate.h"
#include "server/sqlite_store.h"
#include "server/self_calibration.h"
#include "server/stream_reactor.h"
#include "server/timing_service.h"
#include "service/advisor_logic.h"
#include "service/clock.h"
#include "service/measurer.h"
#include "wavecrest/v1/advisor.grpc.pb.h"

namespace wavecrest {

// Every Advisor method registered raw: gRPC hands over the request's bytes, and each handler
// admits the caller (its token) before it parses them (server/request_gate.h).
// clang-format off
// (In two parts: twelve '>' in a row would read as a merge conflict's marker.)
using RawAdvisorLastSix =
    v1::Advisor::WithRawCallbackMethod_ClearQuarantine<
    v1::Advisor::WithRawCallbackMethod_Sweep<
    v1::Advisor::WithRawCallbackMethod_TimeLayers<
    v1::Advisor::WithRawCallbackMethod_ParseModel<
    v1::Advisor::WithRawCallbackMethod_ExportModel<
    v1::Advisor::WithRawCallbackMethod_ListModels<v1::Advisor::Service>>>>>>;
using RawAdvisorService =
    v1::Advisor::WithRawCallbackMethod_Analyze<
    v1::Advisor::WithRawCallbackMethod_Recommend<
    v1::Advisor::WithRawCallbackMethod_TimeGemms<
    v1::Advisor::WithRawCallbackMethod_ListDevices<
    v1::Advisor::WithRawCallbackMethod_Recalibrate<
    v1::Advisor::WithRawCallbackMethod_ExportMeasurements<RawAdvisorLastSix>>>>>>;
// clang-format on

class AdvisorService final : public RawAdvisorService {
 public:
  // `calibration` and `store` may be null (no measurement store: Recalibrate and ExportMeasurements
  // answer FAILED_PRECONDITION). `clock`: what calls' deadlines and latencies are read on (the
  // wall clock unless a test gives its own).
  AdvisorService(TimingService* timing, JobQueue* jobs, Metrics* metrics, GpuWorkers* workers,
                 SelfCalibration* calibration = nullptr, MeasurementStore* store = nullptr,
                 const Auth* auth = nullptr, Clock* clock = &Clock::Real());

  using Unary = grpc::ServerUnaryReactor*;
  using Stream = grpc::ServerWriteReactor<grpc::ByteBuffer>*;
  using Ctx = grpc::CallbackServerContext;
  using Bytes = grpc::ByteBuffer;
  Unary Analyze(Ctx* ctx, const Bytes* request, Bytes* response) override;
  Unary ListDevices(Ctx* ctx, const Bytes* request, Bytes* response) override;
  Stream TimeGemms(Ctx* ctx, const Bytes* request) override;
  Stream Recommend(Ctx* ctx, const Bytes* request) override;
  Unary Recalibrate(Ctx* ctx, const Bytes* request, Bytes* response) override;
  Stream ExportMeasurements(Ctx* ctx, const Bytes* request) override;
  Unary ClearQuarantine(Ctx* ctx, const Bytes* request, Bytes* response) override;
  Stream Sweep(Ctx* ctx, const Bytes* request) override;
  Stream TimeLayers(Ctx* ctx, const Bytes* request) override;
  Unary ParseModel(Ctx* ctx, const Bytes* request, Bytes* response) override;
  Unary ExportModel(Ctx* ctx, const Bytes* request, Bytes* response) override;
  Unary ListModels(Ctx* ctx, const Bytes* request, Bytes* response) override;

  // The largest request message (--max_request_bytes; gRPC refuses larger ones itself).
  void SetMaxRequestBytes(int64_t bytes) { max_request_bytes_ = bytes; }

  // The example models ListModels offers (empty: none).
  void SetModelsDir(std::string dir) { models_dir_ = std::move(dir); }

  // Streaming calls at once, in all and per client address (0 = no limit).
  void SetStreamLimits(int max_streams, int max_per_client) {
    max_streams_ = max_streams;
    max_streams_per_client_ = max_per_client;
  }

  // Graceful shutdown: from now on new calls get UNAVAILABLE (retryable) while the ones in flight,
  // queued ones included, run to completion.
  void StartDraining() { draining_.store(true); }
  // Calls accepted and not yet finished.
  int in_flight() const { return in_flight_.load(); }

 private:
  // The call's gRPC deadline on the service's clock: the same time left, counted from its now.
  absl::Time DeadlineOf(const grpc::CallbackServerContext* ctx) const;
  // Cached GPU measurements of whole layers, for Analyze's measured_step (null without a store).
  MeasuredLayerLookup MeasuredLayers() const;
  // The one admission check of every call: authentication and role (server/auth.h), then
  // UNAVAILABLE with a retry hint while draining.
  absl::Status Admit(const grpc::CallbackServerContext* ctx, Role role) const;
  // The GEMM counts of a call, for its access-log line (measured < 0: none to report).
  struct CallGemms {
    bool layers = false;  // the counts are of layers timed whole (TimeLayers)
    std::atomic<int64_t> measured{-1}, cached{0}, predicted{0};
  };
  // Counts the call in flight; the callback records its end (metrics and the access log line,
  // with `gemms` when the call filled them).
  std::function<void(const grpc::Status&)> Track(const char* method,
                                                 const grpc::ServerContextBase& ctx,
                                                 std::shared_ptr<CallGemms> gemms = nullptr);
  // Takes a stream slot for the caller (RESOURCE_EXHAUSTED with a retry hint when none is free)
  // and returns the Track callback that gives it back when the call is over.
  absl::StatusOr<std::function<void(const grpc::Status&)>> TrackStream(
      const char* method, const grpc::CallbackServerContext* ctx,
      std::shared_ptr<CallGemms> gemms = nullptr);
  // A streaming call's reactor, always made (the call must be finished through it); not OK when
  // the call may not proceed (Admit, then a stream slot).
  // Queues `job` (RESOURCE_EXHAUSTED on the stream when the queue is full; a "queued" progress
  // message otherwise), with the queue's metrics.
  // `method`'s request from its bytes, within its limits (server/request_gate.h).
  absl::Status Parse(const char* method, const grpc::ByteBuffer& in,
                     google::protobuf::Message* request) const;
  // A unary call answered on the callback thread: Admit as `role` before the request is parsed,
  // then `handle` (a Request -> StatusOr<Response>), the response serialized, Track.
  template <typename Request, typename Handle>
  grpc::ServerUnaryReactor* Inline(const char* method, grpc::CallbackServerContext* ctx,
                                   const grpc::ByteBuffer* in, grpc::ByteBuffer* out, Role role,
                                   const Handle& handle);
  template <typename Response>
  void Enqueue(const std::shared_ptr<StreamReactor<Response>>& reactor, std::function<void()> job);
  template <typename Response>
  absl::Status OpenStream(const char* method, grpc::CallbackServerContext* ctx, Role role,
                          std::shared_ptr<StreamReactor<Response>>* reactor,
                          std::shared_ptr<CallGemms> gemms = nullptr);
  // Every streaming RPC in one shape: admitted (auth, a stream slot), `accept` on the callback
  // thread (validation and planning in the logic layer: a request that cannot succeed fails
  // before it is queued), then `run` on a job thread with a CallContext (deadline, cancellation,
  // progress, the Measurer); its messages go out through the stream as they come.
  template <typename Request, typename Response, typename Plan>
  Stream StreamJob(
      const char* method, grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
      const std::function<absl::StatusOr<Plan>(const Request&)>& accept,
      absl::StatusOr<MeasureCounts> (*run)(const Plan&, const CallContext&, const Send<Response>&));

  TimingService* timing_;
  JobQueue* jobs_;
  Metrics* metrics_;
  GpuWorkers* workers_;
  SelfCalibration* calibration_;
  MeasurementStore* store_;
  Auth no_auth_;
  const Auth* auth_;
  Clock* clock_;
  std::atomic<bool> draining_{false};
  int max_streams_ = 0;
  int max_streams_per_client_ = 0;
  std::mutex streams_mu_;
  int streams_ = 0;
  absl::flat_hash_map<std::string, int> streams_by_client_;
  std::atomic<int> in_flight_{0};
  std::string models_dir_;
  int64_t max_request_bytes_ = int64_t{4} << 20;
};

// QUEUE_FULL error with a retry hint.
absl::Status QueueFullError(const JobQueue& jobs);

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_ADVISOR_SERVICE_H_
