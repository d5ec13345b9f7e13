// wavecrest.v1.Advisor on the gRPC callback API.
//
// Analyze and ListDevices are answered on the callback thread: they are bounded, CPU-only work of
// tens of microseconds, and queueing them would only add latency. TimeGemms and Recommend can run
// for seconds to minutes (GPU work): they go through the bounded JobQueue, are refused with
// RESOURCE_EXHAUSTED and a retry delay when it is full, and poll cancellation and the deadline
// between units of work.
#ifndef WAVECREST_SERVER_ADVISOR_SERVICE_H_
#define WAVECREST_SERVER_ADVISOR_SERVICE_H_

#include <atomic>
#include <functional>

#include "server/job_queue.h"
#include "server/metrics.h"
#include "server/result_cache.h"
#include "server/self_calibration.h"
#include "server/timing_service.h"
#include "wavecrest/v1/advisor.grpc.pb.h"

namespace wavecrest {

// Most GEMMs one TimeGemms request may ask for.
inline constexpr int kMaxGemmsPerRequest = 4096;
// Largest GEMM dimension accepted (cuBLASLt takes 32-bit sizes).
inline constexpr int64_t kMaxGemmDim = (int64_t{1} << 31) - 1;
// Largest FLOPs of one GEMM accepted (about a minute at petaflop rates).
inline constexpr double kMaxGemmFlops = 1e17;
// GPU time one TimeGemms request may ask for, predicted before any work, seconds.
inline constexpr double kMaxGpuSecondsPerRequest = 1800;

class WorkerDirectory {
 public:
  virtual ~WorkerDirectory() = default;
  virtual void AddWorkers(v1::ListDevicesResponse* response) const = 0;
};

// Hook for the Recommend RPC: runs on a job thread; `progress` streams messages; `cancelled` is
// polled. Set by the recommender (server/recommend_handler.h).
using RecommendHandler = std::function<absl::StatusOr<v1::RecommendResponse>(
    const v1::RecommendRequest&, absl::Time deadline,
    const std::function<void(const v1::Progress&)>& progress,
    const std::function<bool()>& cancelled)>;

class AdvisorService final : public v1::Advisor::CallbackService {
 public:
  // `calibration` and `cache` may be null (no result cache: Recalibrate and ExportMeasurements
  // answer FAILED_PRECONDITION).
  AdvisorService(TimingService* timing, JobQueue* jobs, Metrics* metrics,
                 const WorkerDirectory* workers, RecommendHandler recommend,
                 SelfCalibration* calibration = nullptr, ResultCache* cache = nullptr);

  grpc::ServerUnaryReactor* Analyze(grpc::CallbackServerContext* ctx,
                                    const v1::AnalyzeRequest* request,
                                    v1::AnalyzeResponse* response) override;
  grpc::ServerUnaryReactor* ListDevices(grpc::CallbackServerContext* ctx,
                                        const v1::ListDevicesRequest* request,
                                        v1::ListDevicesResponse* response) override;
  grpc::ServerWriteReactor<v1::TimeGemmsResponse>* TimeGemms(
      grpc::CallbackServerContext* ctx, const v1::TimeGemmsRequest* request) override;
  grpc::ServerWriteReactor<v1::RecommendResponse>* Recommend(
      grpc::CallbackServerContext* ctx, const v1::RecommendRequest* request) override;
  grpc::ServerUnaryReactor* Recalibrate(grpc::CallbackServerContext* ctx,
                                        const v1::RecalibrateRequest* request,
                                        v1::RecalibrateResponse* response) override;
  grpc::ServerWriteReactor<v1::ExportMeasurementsResponse>* ExportMeasurements(
      grpc::CallbackServerContext* ctx, const v1::ExportMeasurementsRequest* request) override;

  // Graceful shutdown: from now on new calls get UNAVAILABLE (retryable) while the ones in flight,
  // queued ones included, run to completion.
  void StartDraining() { draining_.store(true); }
  // Calls accepted and not yet finished.
  int in_flight() const { return in_flight_.load(); }

 private:
  // UNAVAILABLE with a retry hint when draining, else OK.
  absl::Status CheckAccepting() const;
  // Metrics and the final status of one RPC.
  std::function<void(const grpc::Status&)> Track(const char* method);

  TimingService* timing_;
  JobQueue* jobs_;
  Metrics* metrics_;
  const WorkerDirectory* workers_;
  RecommendHandler recommend_;
  SelfCalibration* calibration_;
  ResultCache* cache_;
  std::atomic<bool> draining_{false};
  std::atomic<int> in_flight_{0};
};

// The validated work of a TimeGemms request.
struct TimeGemmsPlan {
  TimingTask task;
  std::vector<std::vector<std::string>> used_by;  // per distinct GEMM: "qkv forward", ...
};
absl::StatusOr<TimeGemmsPlan> PlanTimeGemms(const v1::TimeGemmsRequest& request,
                                            const TimingService& timing);

// QUEUE_FULL error with a retry hint.
absl::Status QueueFullError(const JobQueue& jobs);

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_ADVISOR_SERVICE_H_
