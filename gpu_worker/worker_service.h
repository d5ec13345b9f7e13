// wavecrest.v1.GemmWorker over one TimingBackend. A request's GEMMs (or layers) are timed together
// (TimingBackend::TimeTogether: interleaved on a GPU; a second call waits for the device), and
// each one is appended to the request log, when there is one, when the engine first takes it up:
// the log is the audit of what the device was asked to do. Heartbeats, their elapsed time and the
// log's timestamps are read on one Clock (service/clock.h; tests give a fake one).
#ifndef WAVECREST_GPU_WORKER_WORKER_SERVICE_H_
#define WAVECREST_GPU_WORKER_WORKER_SERVICE_H_

#include <atomic>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "gpu_worker/backend.h"
#include "nlohmann/json.hpp"
#include "service/clock.h"
#include "wavecrest/v1/worker.grpc.pb.h"

namespace wavecrest {

// Most GEMMs in one worker request; each dimension is in [1, kMaxWorkerGemmDim] (core/gemm_plan.h).
inline constexpr int kMaxWorkerGemms = 4096;
// Most layers in one worker request.
inline constexpr int kMaxWorkerLayers = 64;

// Validates and converts one request GEMM (`field` names it in errors).
absl::StatusOr<GemmKey> KeyFromWorkerGemm(const v1::WorkerGemm& g, const std::string& field);

class WorkerService final : public v1::GemmWorker::Service {
 public:
  // `on_broken` runs (once) after a sticky error was reported: the process must go. `clock`
  // (not owned) times heartbeats and stamps the request log.
  WorkerService(TimingBackend* backend, const std::string& request_log,
                std::function<void()> on_broken, Clock* clock = &Clock::Real());
  ~WorkerService() override;

  grpc::Status Describe(grpc::ServerContext* ctx, const v1::DescribeRequest* request,
                        v1::DescribeResponse* response) override;
  grpc::Status TimeGemms(grpc::ServerContext* ctx, const v1::GemmWorkerTimeGemmsRequest* request,
                         grpc::ServerWriter<v1::GemmWorkerTimeGemmsResponse>* writer) override;
  grpc::Status TimeLayers(grpc::ServerContext* ctx, const v1::GemmWorkerTimeLayersRequest* request,
                          grpc::ServerWriter<v1::GemmWorkerTimeLayersResponse>* writer) override;

 private:
  // Times items 0..n-1 together (the device lock held; TimingBackend::TimeTogether): each item's
  // started when the engine first works on it, heartbeats naming the item on the device, then
  // the timing or error of each in order; a sticky error ends the call (and the process, through
  // on_broken_) after the item it came with.
  template <typename Response, typename TimeFn>
  grpc::Status TimeEach(grpc::ServerContext* ctx, grpc::ServerWriter<Response>* writer, size_t n,
                        const TimingParams& params, const std::function<void(size_t)>& log,
                        const TimeFn& together);
  void LogRequest(const GemmKey& key, const TimingParams& params);
  void LogLine(nlohmann::json fields);

  TimingBackend* backend_;
  std::function<void()> on_broken_;
  Clock* clock_;
  std::mutex device_mu_;  // one GEMM on the device at a time
  std::atomic<int64_t> timed_{0};
  std::atomic<bool> broken_{false};
  std::mutex log_mu_;
  FILE* log_ = nullptr;
};

}  // namespace wavecrest

#endif  // WAVECREST_GPU_WORKER_WORKER_SERVICE_H_
