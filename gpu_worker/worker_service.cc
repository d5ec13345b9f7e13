#include "gpu_worker/worker_service.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/cost_model.h"
#include "nlohmann/json.hpp"
#include "service/convert.h"
#include "service/errors.h"

namespace wavecrest {

absl::StatusOr<GemmKey> KeyFromWorkerGemm(const v1::WorkerGemm& g, const std::string& field) {
  GemmKey key;
  const v1::GemmShape& s = g.shape();
  auto dim = [&](const char* name, int64_t v, int64_t lo) -> absl::Status {
    if (v < lo || v > kMaxWorkerGemmDim) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".shape.", name, ": ", v, " is outside [", lo, ", ", kMaxWorkerGemmDim, "]"));
    }
    return absl::OkStatus();
  };
  for (absl::Status st :
       {dim("m", s.m(), 1), dim("n", s.n(), 1), dim("k", s.k(), 1), dim("batch", s.batch(), 0)}) {
    if (!st.ok()) return st;
  }
  key.shape = {s.m(), s.n(), s.k(), std::max<int64_t>(s.batch(), 1)};
  absl::StatusOr<Layout> layout = FromProto(g.layout());
  if (!layout.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".layout: ", layout.status().message()));
  }
  key.layout = *layout;
  absl::StatusOr<DType> dtype = FromProto(g.dtype());
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".dtype: ", dtype.status().message()));
  }
  key.dtype = *dtype;
  return key;
}

WorkerService::WorkerService(TimingBackend* backend, const std::string& request_log,
                             std::function<void()> on_broken, Clock* clock)
    : backend_(backend), on_broken_(std::move(on_broken)), clock_(clock) {
  if (!request_log.empty()) log_ = std::fopen(request_log.c_str(), "a");
}

WorkerService::~WorkerService() {
  if (log_) std::fclose(log_);
}

void WorkerService::LogRequest(const GemmKey& key, const TimingParams& params) {
  LogLine({{"m", key.shape.m},
           {"n", key.shape.n},
           {"k", key.shape.k},
           {"batch", key.shape.batch},
           {"layout", std::string(LayoutName(key.layout))},
           {"dtype", std::string(DTypeName(key.dtype))},
           {"autotune", params.autotune},
           {"warm_l2", params.warm_l2}});
}

void WorkerService::LogLine(nlohmann::json fields) {
  if (!log_) return;
  nlohmann::json j = {{"unix_ms", absl::ToUnixMillis(clock_->Now())},
                      {"pid", static_cast<int64_t>(getpid())}};
  j.update(fields);
  std::lock_guard<std::mutex> lock(log_mu_);
  std::fputs((j.dump() + "\n").c_str(), log_);
  std::fflush(log_);
}

namespace {

// How often a call's heartbeats go out: at most one a second and four per watchdog period (the
// server's watchdog sees them).
absl::Duration WorkerHeartbeatInterval(const TimingParams& params) {
  return params.watchdog_s > 0 ? std::min(absl::Seconds(1), absl::Seconds(params.watchdog_s / 4))
                               : absl::Seconds(1);
}

// The events of one TimeEach call on its stream (Response: a TimeGemms or TimeLayers event), all
// written from the thread that times: each item's started when the engine first takes it up,
// heartbeats naming the item on the device, each item's result once. It notes whether the caller
// went away and the sticky error that ends the call.
template <typename Response>
class WorkerItemStream {
 public:
  WorkerItemStream(grpc::ServerContext* ctx, grpc::ServerWriter<Response>* writer, size_t n,
                   const Clock& clock, absl::Duration interval,
                   const std::function<void(size_t)>& log)
      : ctx_(ctx),
        writer_(writer),
        clock_(clock),
        interval_(interval),
        log_(log),
        begin_(clock.Now()),
        last_beat_(begin_),
        started_(n, false),
        answered_(n, false) {}

  // A heartbeat naming the item on the device, unless the last event went out less than an
  // interval ago.
  void Heartbeat(absl::string_view phase) {
    const absl::Time now = clock_.Now();
    if (now - last_beat_ < interval_) return;
    last_beat_ = now;
    Response beat;
    beat.set_index(static_cast<int32_t>(current_));
    beat.mutable_heartbeat()->set_phase(std::string(phase));
    beat.mutable_heartbeat()->set_elapsed_s(absl::ToDoubleSeconds(now - begin_));
    writer_->Write(beat);
  }

  // The engine works on item `i`: the first time, its started event and log line. False (stop
  // the batch) once the caller went away or cancelled.
  bool OnItem(size_t i) {
    if (gone_ || ctx_->IsCancelled()) return !(gone_ = true);
    current_ = i;
    if (started_[i]) return true;
    started_[i] = true;
    Response s;
    s.set_index(static_cast<int32_t>(i));
    s.set_started(true);
    if (!writer_->Write(s)) return !(gone_ = true);
    log_(i);
    last_beat_ = clock_.Now();
    return true;
  }

  // Item `i`'s result goes out as soon as it is final, once (`timed` counts the timings); none
  // after the caller went away or a sticky error. An INTERNAL error while `backend` is broken is
  // sticky: it ends the stream after the item it came with (the server charges that item).
  template <typename Timing>
  void Answer(size_t i, const absl::StatusOr<Timing>& t, const TimingBackend& backend,
              std::atomic<int64_t>* timed) {
    if (gone_ || sticky_ || answered_[i]) return;
    answered_[i] = true;
    Response out;
    out.set_index(static_cast<int32_t>(i));
    if (t.ok()) {
      ++*timed;
      *out.mutable_timing() = *t;
      out.mutable_timing()->set_index(static_cast<int32_t>(i));
    } else {
      out.mutable_error()->set_code(static_cast<int32_t>(t.status().code()));
      out.mutable_error()->set_message(std::string(t.status().message()));
    }
    if (!writer_->Write(out)) gone_ = true;
    if (backend.Broken() && !t.ok() && t.status().code() == absl::StatusCode::kInternal) {
      sticky_ = true;
      sticky_message_ = std::string(t.status().message());
    }
  }

  bool gone() const { return gone_; }  // the caller went away or cancelled
  bool sticky() const { return sticky_; }
  const std::string& sticky_message() const { return sticky_message_; }

 private:
  grpc::ServerContext* ctx_;
  grpc::ServerWriter<Response>* writer_;
  const Clock& clock_;
  const absl::Duration interval_;
  const std::function<void(size_t)> log_;  // the request log's line for an item
  const absl::Time begin_;
  absl::Time last_beat_;
  size_t current_ = 0;  // the item the engine works on
  std::vector<bool> started_, answered_;
  bool gone_ = false;
  bool sticky_ = false;
  std::string sticky_message_;
};

}  // namespace

template <typename Response, typename TimeFn>
grpc::Status WorkerService::TimeEach(grpc::ServerContext* ctx, grpc::ServerWriter<Response>* writer,
                                     size_t n, const TimingParams& params,
                                     const std::function<void(size_t)>& log,
                                     const TimeFn& together) {
  if (broken_.load()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the worker's CUDA context is unusable");
  }
  WorkerItemStream<Response> stream(ctx, writer, n, *clock_, WorkerHeartbeatInterval(params), log);
  TimingParams p = params;
  p.deadline = absl::FromChrono(ctx->deadline());
  p.heartbeat = [&](absl::string_view phase) { stream.Heartbeat(phase); };
  const TimingBackend::OnItem on_item = [&](size_t i) { return stream.OnItem(i); };
  auto answer = [&](size_t i, const auto& t) { stream.Answer(i, t, *backend_, &timed_); };
  const auto results = together(p, on_item, answer);
  for (size_t i = 0; i < results.size(); ++i) answer(i, results[i]);
  if (stream.sticky() || backend_->Broken()) {
    if (!broken_.exchange(true) && on_broken_) on_broken_();
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        absl::StrCat("sticky CUDA error: ", stream.sticky_message()));
  }
  if (stream.gone()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled or caller gone");
  return grpc::Status::OK;
}

grpc::Status WorkerService::Describe(grpc::ServerContext*, const v1::DescribeRequest*,
                                     v1::DescribeResponse* response) {
  const v1::DeviceFingerprint fp = backend_->Fingerprint();
  *response->mutable_device() = fp;
  response->set_pid(getpid());
  response->set_gemms_timed(timed_.load());
  response->set_method(fp.backend() == "analytic" ? std::string(kCostModelName)
                                                  : std::string(kCublasLtMethod));
  if (!broken_.load()) {
    std::unique_lock<std::mutex> lock(device_mu_, std::try_to_lock);
    if (lock.owns_lock()) response->set_free_memory_bytes(backend_->FreeMemoryBytes());
  }
  return grpc::Status::OK;
}

grpc::Status WorkerService::TimeGemms(grpc::ServerContext* ctx,
                                      const v1::GemmWorkerTimeGemmsRequest* request,
                                      grpc::ServerWriter<v1::GemmWorkerTimeGemmsResponse>* writer) {
  if (request->gemms_size() == 0 || request->gemms_size() > kMaxWorkerGemms) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("gemms: ", request->gemms_size(), " GEMMs; give 1 to ", kMaxWorkerGemms));
  }
  absl::StatusOr<TimingParams> params = ParamsFromProto(request->options());
  if (!params.ok()) return ToGrpcStatus(params.status());
  std::vector<GemmKey> keys;
  for (int i = 0; i < request->gemms_size(); ++i) {
    absl::StatusOr<GemmKey> key =
        KeyFromWorkerGemm(request->gemms(i), absl::StrCat("gemms[", i, "]"));
    if (!key.ok()) return ToGrpcStatus(key.status());
    keys.push_back(*key);
  }
  std::lock_guard<std::mutex> device(device_mu_);
  return TimeEach<v1::GemmWorkerTimeGemmsResponse>(
      ctx, writer, keys.size(), *params, [&](size_t i) { LogRequest(keys[i], *params); },
      [&](const TimingParams& p, const TimingBackend::OnItem& on_item, const auto& on_done) {
        return backend_->TimeTogether(keys, p, on_item, on_done);
      });
}

grpc::Status WorkerService::TimeLayers(
    grpc::ServerContext* ctx, const v1::GemmWorkerTimeLayersRequest* request,
    grpc::ServerWriter<v1::GemmWorkerTimeLayersResponse>* writer) {
  if (request->layers_size() == 0 || request->layers_size() > kMaxWorkerLayers) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("layers: ", request->layers_size(), " layers; give 1 to ", kMaxWorkerLayers));
  }
  absl::StatusOr<TimingParams> params = ParamsFromProto(request->options());
  if (!params.ok()) return ToGrpcStatus(params.status());
  std::vector<LayerKey> keys;
  for (int i = 0; i < request->layers_size(); ++i) {
    absl::StatusOr<LayerKey> key =
        LayerKeyFromProto(request->layers(i), absl::StrCat("layers[", i, "]"));
    if (!key.ok()) return ToGrpcStatus(key.status());
    keys.push_back(*std::move(key));
  }
  std::lock_guard<std::mutex> device(device_mu_);
  return TimeEach<v1::GemmWorkerTimeLayersResponse>(
      ctx, writer, keys.size(), *params,
      [&](size_t i) {
        LogLine({{"layer", LayerKeyString(keys[i])}, {"warm_l2", params->warm_l2}});
      },
      [&](const TimingParams& p, const TimingBackend::OnItem& on_item, const auto& on_done) {
        return backend_->TimeLayersTogether(keys, p, on_item, on_done);
      });
}

}  // namespace wavecrest
