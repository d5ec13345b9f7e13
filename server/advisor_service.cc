#include "server/advisor_service.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/analysis.h"
#include "core/status_macros.h"
#include "server/stream_reactor.h"
#include "service/advisor_logic.h"
#include "service/convert.h"
#include "service/errors.h"
#include "service/log.h"
#include "service/recommend_logic.h"
#include "service/spec_io.h"
#include "service/sweep_logic.h"

namespace wavecrest {
namespace {

absl::Time DeadlineOf(const grpc::CallbackServerContext* ctx) {
  const auto d = ctx->deadline();
  if (d == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(d);
}

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

// A unary reactor that finishes at once with `status`.
grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* ctx,
                                      const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

absl::Status CheckShape(const v1::GemmShape& s, const std::string& field,
                        std::vector<FieldViolation>* v) {
  auto dim = [&](const char* name, int64_t x, int64_t lo) {
    if (x < lo || x > kMaxGemmDim) {
      v->push_back({absl::StrCat(field, ".", name),
                    absl::StrCat("must be in [", lo, ", ", kMaxGemmDim, "]; got ", x)});
      return false;
    }
    return true;
  };
  // Every dimension is checked (each bad one is a violation), then whether all were good.
  const bool dims_ok[] = {dim("m", s.m(), 1), dim("n", s.n(), 1), dim("k", s.k(), 1),
                          dim("batch", s.batch(), 0)};
  const bool ok = std::all_of(std::begin(dims_ok), std::end(dims_ok), [](bool b) { return b; });
  if (ok) {
    const double flops = GemmFlops({s.m(), s.n(), s.k(), std::max<int64_t>(s.batch(), 1)});
    if (flops > kMaxGemmFlops) {
      v->push_back({field, absl::StrCat("2·m·n·k·batch = ", flops, " FLOPs; at most ",
                                        kMaxGemmFlops, " allowed")});
    }
  }
  return absl::OkStatus();
}

// The first message of an accepted streaming call: it is queued.
template <typename Response>
Response QueuedMessage(int depth) {
  Response r;
  r.mutable_progress()->set_message(absl::StrCat("queued (", depth, " jobs waiting)"));
  return r;
}

}  // namespace

absl::Status QueueFullError(const JobQueue& jobs) {
  return WithRetryDelay(absl::ResourceExhaustedError(absl::StrCat(
                            "job queue full (", jobs.capacity(), " jobs waiting); retry later")),
                        absl::Seconds(1), "QUEUE_FULL");
}

absl::Status CheckGpuWork(const TimingTask& task, absl::string_view field, bool gpu_may_run) {
  // A model's GEMMs get the cap given shapes get.
  for (const GemmKey& k : task.gemms) {
    if (GemmFlops(k.shape) > kMaxGemmFlops) {
      return FieldError(field, absl::StrCat(GemmKeyString(k), " is ", GemmFlops(k.shape),
                                            " FLOPs; at most ", kMaxGemmFlops, " per GEMM"));
    }
  }
  if (task.mode == v1::MODE_PREDICTED || !gpu_may_run) return absl::OkStatus();
  // Measuring costs about kMeasureCostFactor runs of each GEMM: refuse, before any work, what
  // would hold a GPU longer than a request may.
  double seconds = 0;
  for (const GemmKey& k : task.gemms) seconds += PredictGemmTime(*task.gpu, k) * kMeasureCostFactor;
  if (seconds > kMaxGpuSecondsPerRequest) {
    return FieldError(
        field,
        absl::StrCat("measuring these GEMMs would take about ", static_cast<int64_t>(seconds),
                     " s of GPU time (predicted); at "
                     "most ",
                     kMaxGpuSecondsPerRequest,
                     " s per request: split the request or ask for MODE_PREDICTED"));
  }
  return absl::OkStatus();
}

absl::StatusOr<TimeGemmsPlan> PlanTimeGemms(const v1::TimeGemmsRequest& request,
                                            const TimingService& timing) {
  std::vector<FieldViolation> v;
  const bool has_model = request.has_model();
  if (has_model == (request.gemms_size() > 0)) {
    v.push_back({"gemms", "give either gemms (1 to 4096 shapes) or model, not both or neither"});
  }
  if (request.gemms_size() > kMaxGemmsPerRequest) {
    v.push_back({"gemms", absl::StrCat("at most ", kMaxGemmsPerRequest, " shapes; got ",
                                       request.gemms_size())});
  }
  if (!v1::Mode_IsValid(request.mode())) {
    v.push_back({"mode", absl::StrCat("unknown value ", request.mode(),
                                      "; allowed: MODE_AUTO, MODE_MEASURED, MODE_PREDICTED")});
  }
  absl::StatusOr<DType> dtype = FromProto(request.dtype());
  if (!dtype.ok()) v.push_back({"dtype", std::string(dtype.status().message())});
  absl::StatusOr<Layout> layout = FromProto(request.layout());
  if (!layout.ok()) v.push_back({"layout", std::string(layout.status().message())});
  if (request.gemms_size() <= kMaxGemmsPerRequest) {
    for (int i = 0; i < request.gemms_size(); ++i) {
      (void)CheckShape(request.gemms(i), absl::StrCat("gemms[", i, "]"), &v);
    }
  }
  ModelSpec spec;
  if (has_model) {
    absl::StatusOr<ModelSpec> s = SpecFromRequest(request.model(), "model.");
    if (!s.ok()) {
      for (auto& f : ViolationsOf(s.status())) v.push_back(std::move(f));
    } else {
      spec = *s;
    }
  }
  absl::StatusOr<std::pair<std::string, const GpuSpec*>> gpu =
      timing.ResolveGpu(request.gpu(), "gpu");
  if (!gpu.ok() && gpu.status().code() == absl::StatusCode::kInvalidArgument) {
    for (auto& f : ViolationsOf(gpu.status())) v.push_back(std::move(f));
  }
  if (!v.empty()) return InvalidArgumentWithViolations(v);
  if (!gpu.ok()) return gpu.status();

  TimeGemmsPlan plan;
  plan.task.kind = gpu->first;
  plan.task.gpu = gpu->second;
  plan.task.mode = request.mode() == v1::MODE_UNSPECIFIED ? v1::MODE_AUTO : request.mode();
  plan.task.autotune = request.autotune();
  plan.task.warm_l2 = request.warm_l2();
  if (has_model) {
    RETURN_IF_ERROR(CheckDtypeSupported(spec.dtype, *plan.task.gpu));
    absl::flat_hash_map<GemmKey, size_t> index;
    for (const Gemm& g : BuildGemms(spec)) {
      if (g.fused_attention) continue;  // a fused kernel, not a cuBLASLt GEMM
      auto [it, added] = index.emplace(g.key(), plan.task.gemms.size());
      if (added) {
        plan.task.gemms.push_back(g.key());
        plan.used_by.emplace_back();
      }
      plan.used_by[it->second].push_back(absl::StrCat(g.name, " ", PassName(g.pass)));
    }
  } else {
    RETURN_IF_ERROR(CheckDtypeSupported(*dtype, *plan.task.gpu));
    for (const v1::GemmShape& s : request.gemms()) {
      plan.task.gemms.push_back(
          {{s.m(), s.n(), s.k(), std::max<int64_t>(s.batch(), 1)}, *layout, *dtype});
    }
  }
  RETURN_IF_ERROR(
      CheckGpuWork(plan.task, has_model ? "model" : "gemms", timing.MightMeasure(plan.task.kind)));
  return plan;
}

AdvisorService::AdvisorService(TimingService* timing, JobQueue* jobs, Metrics* metrics,
                               WorkerDirectory* workers, RecommendHandler recommend,
                               SelfCalibration* calibration, ResultCache* cache, const Auth* auth)
    : timing_(timing),
      jobs_(jobs),
      metrics_(metrics),
      workers_(workers),
      recommend_(std::move(recommend)),
      calibration_(calibration),
      cache_(cache),
      auth_(auth ? auth : &no_auth_) {}

absl::Status AdvisorService::Admit(const grpc::CallbackServerContext* ctx, Role role) const {
  if (absl::Status st = auth_->Check(*ctx, role); !st.ok()) return st;
  if (!draining_.load()) return absl::OkStatus();
  return WithRetryDelay(absl::UnavailableError("server shutting down; retry on another replica"),
                        absl::Seconds(1), "SHUTTING_DOWN");
}

std::function<void(const grpc::Status&)> AdvisorService::Track(const char* method,
                                                               const grpc::ServerContextBase& ctx,
                                                               std::shared_ptr<CallGemms> gemms) {
  const absl::Time start = absl::Now();
  prometheus::Gauge& in_flight = metrics_->InFlight(method);
  in_flight.Increment();
  in_flight_.fetch_add(1);
  std::string peer = LogEnabled(LogLevel::kInfo) ? PeerOf(ctx) : "";
  return [this, method, start, &in_flight, peer = std::move(peer),
          gemms = std::move(gemms)](const grpc::Status& status) {
    in_flight.Decrement();
    in_flight_.fetch_sub(1);
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    const std::string code = CodeName(status.error_code());
    metrics_->RequestDone(method, code, seconds);
    // The access log: one line per call.
    if (LogEnabled(LogLevel::kInfo)) {
      const double latency_ms = std::round(seconds * 1e6) / 1e3;
      if (gemms != nullptr && gemms->measured.load() >= 0) {
        LogInfo("rpc", {{"method", method},
                        {"peer", peer},
                        {"code", code},
                        {"latency_ms", latency_ms},
                        {"gemms_measured", gemms->measured.load()},
                        {"gemms_cached", gemms->cached.load()},
                        {"gemms_predicted", gemms->predicted.load()}});
      } else {
        LogInfo("rpc",
                {{"method", method}, {"peer", peer}, {"code", code}, {"latency_ms", latency_ms}});
      }
    }
  };
}

MeasuredLayerLookup AdvisorService::MeasuredLayers() const {
  if (cache_ == nullptr) return nullptr;
  ResultCache* cache = cache_;
  return [cache](const GpuSpec& gpu, const LayerKey& key) -> std::optional<v1::LayerTiming> {
    // The newest GPU measurement of the layer on this kind, from any of its devices.
    std::optional<v1::LayerTiming> t =
        cache->LookupLayer(gpu.name, key, LayerTimingMethod("cublaslt", false), nullptr);
    if (t && t->provenance().source() == v1::SOURCE_MEASURED) {
      t->mutable_provenance()->set_source(v1::SOURCE_CACHED);
      t->mutable_provenance()->set_from_cache(true);
    }
    return t;
  };
}

grpc::ServerUnaryReactor* AdvisorService::Analyze(grpc::CallbackServerContext* ctx,
                                                  const v1::AnalyzeRequest* request,
                                                  v1::AnalyzeResponse* response) {
  auto done = Track("Analyze", *ctx);
  grpc::Status status;
  if (absl::Status accepting = Admit(ctx, Role::kClient); !accepting.ok()) {
    status = ToGrpcStatus(accepting);
  } else if (absl::Now() > DeadlineOf(ctx)) {
    status = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline passed before start");
  } else {
    v1::AnalyzeRequest resolved = *request;
    const absl::Status imported = ResolveHfConfig(&resolved);
    absl::StatusOr<v1::AnalyzeResponse> r = imported.ok()
                                                ? HandleAnalyze(resolved, MeasuredLayers())
                                                : absl::StatusOr<v1::AnalyzeResponse>(imported);
    if (r.ok()) {
      *response = std::move(*r);
    } else {
      status = ToGrpcStatus(r.status());
    }
  }
  done(status);
  return FinishUnary(ctx, status);
}

namespace {

// The client's address without its port: "ipv4:10.0.0.7", "ipv6:[::1]", or the unix peer.
std::string ClientOf(const std::string& peer) {
  if (absl::StartsWith(peer, "unix:")) return peer;
  const size_t colon = peer.rfind(':');
  return colon == std::string::npos ? peer : peer.substr(0, colon);
}

}  // namespace

absl::StatusOr<std::function<void(const grpc::Status&)>> AdvisorService::TrackStream(
    const char* method, const grpc::CallbackServerContext* ctx, std::shared_ptr<CallGemms> gemms) {
  const std::string client = ClientOf(PeerOf(*ctx));
  {
    std::lock_guard<std::mutex> lock(streams_mu_);
    int& mine = streams_by_client_[client];
    if ((max_streams_ > 0 && streams_ >= max_streams_) ||
        (max_streams_per_client_ > 0 && mine >= max_streams_per_client_)) {
      const bool all = max_streams_ > 0 && streams_ >= max_streams_;
      if (mine == 0) streams_by_client_.erase(client);
      return WithRetryDelay(
          absl::ResourceExhaustedError(absl::StrCat(
              all ? "the server" : "this client", " has ",
              all ? max_streams_ : max_streams_per_client_,
              " streaming calls open, the most it takes at once; retry when one ends")),
          absl::Seconds(1), "TOO_MANY_STREAMS");
    }
    ++streams_;
    ++mine;
  }
  auto done = Track(method, *ctx, std::move(gemms));
  return [this, client, done](const grpc::Status& status) {
    {
      std::lock_guard<std::mutex> lock(streams_mu_);
      --streams_;
      if (--streams_by_client_[client] <= 0) streams_by_client_.erase(client);
    }
    done(status);
  };
}

bool IsProgressOnly(const v1::TimeGemmsResponse& m) {
  // Notes travel as progress messages too: keep them.
  return !m.has_timing() && !absl::StartsWith(m.progress().message(), "note: ");
}
bool IsProgressOnly(const v1::TimeLayersResponse& m) {
  return !m.has_timing() && m.notes_size() == 0;
}
bool IsProgressOnly(const v1::RecommendResponse& m) { return !m.done(); }
bool IsProgressOnly(const v1::SweepResponse& m) { return !m.done(); }
bool IsProgressOnly(const v1::ExportMeasurementsResponse&) { return false; }

template <typename Response>
absl::Status AdvisorService::OpenStream(const char* method, grpc::CallbackServerContext* ctx,
                                        Role role,
                                        std::shared_ptr<StreamReactor<Response>>* reactor,
                                        std::shared_ptr<CallGemms> gemms) {
  absl::Status st = Admit(ctx, role);
  absl::StatusOr<std::function<void(const grpc::Status&)>> slot =
      st.ok() ? TrackStream(method, ctx, gemms) : st;
  *reactor = StreamReactor<Response>::Create(slot.ok() ? *slot : Track(method, *ctx, gemms),
                                             [](const Response& m) { return IsProgressOnly(m); });
  return slot.status();
}

grpc::ServerUnaryReactor* AdvisorService::ListDevices(grpc::CallbackServerContext* ctx,
                                                      const v1::ListDevicesRequest* request,
                                                      v1::ListDevicesResponse* response) {
  auto done = Track("ListDevices", *ctx);
  absl::Status st = Admit(ctx, request->include_internal() ? Role::kAdmin : Role::kClient);
  if (st.ok()) {
    *response = CatalogDevices();
    if (workers_) workers_->AddWorkers(response, request->include_internal());
    if (cache_ != nullptr) {
      response->set_has_cache(true);
      response->set_cache_entries(cache_->Count());
    }
  }
  const grpc::Status g = ToGrpcStatus(st);
  done(g);
  return FinishUnary(ctx, g);
}

grpc::ServerUnaryReactor* AdvisorService::ClearQuarantine(grpc::CallbackServerContext* ctx,
                                                          const v1::ClearQuarantineRequest* request,
                                                          v1::ClearQuarantineResponse* response) {
  auto done = Track("ClearQuarantine", *ctx);
  absl::Status st = Admit(ctx, Role::kAdmin);
  if (st.ok() && !request->gpu().empty()) st = FindGpu(request->gpu()).status();
  if (st.ok()) response->set_cleared(workers_ ? workers_->ClearQuarantine(request->gpu()) : 0);
  const grpc::Status g = ToGrpcStatus(st);
  done(g);
  return FinishUnary(ctx, g);
}

template <typename Response>
void AdvisorService::Enqueue(const std::shared_ptr<StreamReactor<Response>>& reactor,
                             std::function<void()> job) {
  const bool queued = jobs_->TrySubmit([this, job = std::move(job)](absl::Duration wait) {
    metrics_->QueueWait(absl::ToDoubleSeconds(wait));
    metrics_->SetQueue(jobs_->depth(), jobs_->capacity());
    job();
  });
  metrics_->SetQueue(jobs_->depth(), jobs_->capacity());
  if (!queued) {
    reactor->Finish(ToGrpcStatus(QueueFullError(*jobs_)));
  } else {
    reactor->Push(QueuedMessage<Response>(jobs_->depth()));
  }
}

grpc::ServerWriteReactor<v1::TimeGemmsResponse>* AdvisorService::TimeGemms(
    grpc::CallbackServerContext* ctx, const v1::TimeGemmsRequest* request) {
  std::shared_ptr<StreamReactor<v1::TimeGemmsResponse>> reactor;
  auto gemms = std::make_shared<CallGemms>();
  if (absl::Status accepting = OpenStream("TimeGemms", ctx, Role::kClient, &reactor, gemms);
      !accepting.ok()) {
    reactor->Finish(ToGrpcStatus(accepting));
    return reactor.get();
  }
  v1::TimeGemmsRequest resolved = *request;
  const absl::Status imported = ResolveHfConfig(&resolved);
  absl::StatusOr<TimeGemmsPlan> plan =
      imported.ok() ? PlanTimeGemms(resolved, *timing_) : absl::StatusOr<TimeGemmsPlan>(imported);
  if (!plan.ok()) {
    reactor->Finish(ToGrpcStatus(plan.status()));
    return reactor.get();
  }
  plan->task.deadline = DeadlineOf(ctx);
  auto shared = std::make_shared<TimeGemmsPlan>(std::move(*plan));
  Enqueue(reactor, [this, reactor, shared, gemms] {
    const TimingTask& task = shared->task;
    {
      v1::TimeGemmsResponse first;
      first.mutable_progress()->set_total(static_cast<int64_t>(task.gemms.size()));
      first.mutable_progress()->set_message(
          absl::StrCat(task.gemms.size(), " distinct GEMMs on ", task.kind));
      reactor->Push(std::move(first));
    }
    absl::StatusOr<TimingSummary> summary = timing_->Run(
        task,
        [&](size_t i, v1::GemmTiming t) {
          t.set_index(static_cast<int32_t>(i));
          if (i < shared->used_by.size()) {
            for (const auto& u : shared->used_by[i]) t.add_used_by(u);
          }
          v1::TimeGemmsResponse msg;
          *msg.mutable_timing() = std::move(t);
          reactor->Push(std::move(msg));
        },
        [&](int64_t done, int64_t total, absl::string_view what) {
          v1::TimeGemmsResponse msg;
          msg.mutable_progress()->set_done(done);
          msg.mutable_progress()->set_total(total);
          msg.mutable_progress()->set_message(std::string(what));
          reactor->Push(std::move(msg));
        },
        [reactor] { return reactor->cancelled(); });
    if (summary.ok()) {
      gemms->cached = summary->cached;
      gemms->predicted = summary->predicted;
      gemms->measured = summary->measured;  // last: it says the counts are there
      for (const std::string& note : summary->notes) {
        v1::TimeGemmsResponse msg;
        msg.mutable_progress()->set_message("note: " + note);
        reactor->Push(std::move(msg));
      }
    }
    reactor->Finish(ToGrpcStatus(summary.status()));
  });
  return reactor.get();
}

absl::StatusOr<LayerTask> PlanTimeLayers(const v1::TimeLayersRequest& request,
                                         const TimingService& timing) {
  std::vector<FieldViolation> v;
  if (!v1::Mode_IsValid(request.mode())) {
    v.push_back({"mode", absl::StrCat("unknown value ", request.mode(),
                                      "; allowed: MODE_AUTO, MODE_MEASURED, MODE_PREDICTED")});
  }
  std::vector<LayerKind> kinds;
  for (int i = 0; i < request.kinds_size() && i < 8; ++i) {
    absl::StatusOr<LayerKind> k = FromProto(request.kinds(i));
    if (!k.ok()) {
      v.push_back({absl::StrCat("kinds[", i, "]"), std::string(k.status().message())});
    } else {
      kinds.push_back(*k);
    }
  }
  if (request.kinds_size() > 8) v.push_back({"kinds", "at most 8 entries"});
  ModelSpec spec;
  if (!request.has_model()) {
    v.push_back({"model", "required: the model whose layers to time (or hf_config_json)"});
  } else if (absl::StatusOr<ModelSpec> s = SpecFromRequest(request.model(), "model."); !s.ok()) {
    for (auto& f : ViolationsOf(s.status())) v.push_back(std::move(f));
  } else {
    spec = *s;
  }
  absl::StatusOr<std::pair<std::string, const GpuSpec*>> gpu =
      timing.ResolveGpu(request.gpu(), "gpu");
  if (!gpu.ok() && gpu.status().code() == absl::StatusCode::kInvalidArgument) {
    for (auto& f : ViolationsOf(gpu.status())) v.push_back(std::move(f));
  }
  std::vector<LayerKey> keys;
  if (v.empty()) {
    if (kinds.empty()) {
      keys = LayerKeysOf(spec);
    } else {
      for (size_t i = 0; i < kinds.size(); ++i) {
        absl::StatusOr<LayerKey> key = MakeLayerKey(kinds[i], spec);
        if (!key.ok()) {
          v.push_back({absl::StrCat("kinds[", i, "]"), std::string(key.status().message())});
        } else if (std::find(keys.begin(), keys.end(), *key) == keys.end()) {
          keys.push_back(*std::move(key));
        }
      }
    }
  }
  if (!v.empty()) return InvalidArgumentWithViolations(v);
  if (!gpu.ok()) return gpu.status();
  RETURN_IF_ERROR(CheckDtypeSupported(spec.dtype, *gpu->second));
  LayerTask task;
  task.kind = gpu->first;
  task.gpu = gpu->second;
  task.mode = request.mode() == v1::MODE_UNSPECIFIED ? v1::MODE_AUTO : request.mode();
  task.warm_l2 = request.warm_l2();
  task.layers = std::move(keys);
  // Measuring costs about kMeasureCostFactor runs of each layer: refuse, before any work, what
  // would hold a GPU longer than a request may.
  if (task.mode != v1::MODE_PREDICTED && timing.MightMeasure(task.kind)) {
    double seconds = 0;
    for (const LayerKey& k : task.layers) {
      seconds += PredictLayer(*task.gpu, k).time_s * kMeasureCostFactor;
    }
    if (seconds > kMaxGpuSecondsPerRequest) {
      return FieldError(
          "model",
          absl::StrCat("timing these layers would take about ", static_cast<int64_t>(seconds),
                       " s of GPU time (predicted); at most ", kMaxGpuSecondsPerRequest,
                       " s per request: shorten seq_length or "
                       "micro_batch_size, or ask for MODE_PREDICTED"));
    }
  }
  return task;
}

grpc::ServerWriteReactor<v1::TimeLayersResponse>* AdvisorService::TimeLayers(
    grpc::CallbackServerContext* ctx, const v1::TimeLayersRequest* request) {
  std::shared_ptr<StreamReactor<v1::TimeLayersResponse>> reactor;
  if (absl::Status accepting = OpenStream("TimeLayers", ctx, Role::kClient, &reactor);
      !accepting.ok()) {
    reactor->Finish(ToGrpcStatus(accepting));
    return reactor.get();
  }
  v1::TimeLayersRequest resolved = *request;
  const absl::Status imported = ResolveHfConfig(&resolved);
  absl::StatusOr<LayerTask> task =
      imported.ok() ? PlanTimeLayers(resolved, *timing_) : absl::StatusOr<LayerTask>(imported);
  if (!task.ok()) {
    reactor->Finish(ToGrpcStatus(task.status()));
    return reactor.get();
  }
  task->deadline = DeadlineOf(ctx);
  auto shared = std::make_shared<LayerTask>(std::move(*task));
  Enqueue(reactor, [this, reactor, shared] {
    auto progress = [&](int64_t done, int64_t total, absl::string_view what) {
      v1::TimeLayersResponse msg;
      msg.mutable_progress()->set_done(done);
      msg.mutable_progress()->set_total(total);
      msg.mutable_progress()->set_message(std::string(what));
      reactor->Push(std::move(msg));
    };
    progress(0, static_cast<int64_t>(shared->layers.size()),
             absl::StrCat(shared->layers.size(), " layers on ", shared->kind));
    absl::StatusOr<TimingSummary> summary = timing_->RunLayers(
        *shared,
        [&](size_t i, v1::LayerTiming t) {
          t.set_index(static_cast<int32_t>(i));
          v1::TimeLayersResponse msg;
          *msg.mutable_timing() = std::move(t);
          reactor->Push(std::move(msg));
        },
        progress, [reactor] { return reactor->cancelled(); });
    if (summary.ok() && !summary->notes.empty()) {
      v1::TimeLayersResponse msg;
      msg.mutable_progress()->set_message("notes");
      for (const std::string& note : summary->notes) msg.add_notes(note);
      reactor->Push(std::move(msg));
    }
    reactor->Finish(ToGrpcStatus(summary.status()));
  });
  return reactor.get();
}

template <typename Request, typename Response>
grpc::ServerWriteReactor<Response>* AdvisorService::RunJob(
    const char* method, grpc::CallbackServerContext* ctx, const Request& request,
    const JobHandler<Request, Response>& handler,
    const std::function<absl::Status(const Request&)>& check) {
  std::shared_ptr<StreamReactor<Response>> reactor;
  auto req = std::make_shared<Request>(request);
  auto gemms = std::make_shared<CallGemms>();
  absl::Status accepting = OpenStream(method, ctx, Role::kClient, &reactor, gemms);
  if (accepting.ok()) accepting = ResolveHfConfig(req.get());
  if (accepting.ok()) accepting = check(*req);
  if (!accepting.ok()) {
    reactor->Finish(ToGrpcStatus(accepting));
    return reactor.get();
  }
  if (!handler) {
    reactor->Finish(
        grpc::Status(grpc::StatusCode::UNIMPLEMENTED, absl::StrCat(method, " is not available")));
    return reactor.get();
  }
  const absl::Time deadline = DeadlineOf(ctx);
  // `handler` is a member of this service, which outlives every job.
  Enqueue(reactor, [reactor, req, gemms, deadline, &handler] {
    absl::StatusOr<Response> r = handler(
        *req, deadline,
        [reactor](const v1::Progress& p) {
          Response msg;
          *msg.mutable_progress() = p;
          reactor->Push(std::move(msg));
        },
        [reactor] { return reactor->cancelled(); });
    if (r.ok()) {
      gemms->cached = r->gemms_cached();
      gemms->predicted = r->gemms_predicted();
      gemms->measured = r->gemms_measured();  // last: it says the counts are there
      r->set_done(true);
      reactor->Push(std::move(*r));
    }
    reactor->Finish(ToGrpcStatus(r.status()));
  });
  return reactor.get();
}

grpc::ServerWriteReactor<v1::RecommendResponse>* AdvisorService::Recommend(
    grpc::CallbackServerContext* ctx, const v1::RecommendRequest* request) {
  return RunJob<v1::RecommendRequest, v1::RecommendResponse>(
      "Recommend", ctx, *request, recommend_, [](const v1::RecommendRequest& r) -> absl::Status {
        if (r.gpu().empty()) return FieldError("gpu", GpuRequired());
        return ConstraintsFromRequest(r).status();
      });
}

grpc::ServerWriteReactor<v1::SweepResponse>* AdvisorService::Sweep(
    grpc::CallbackServerContext* ctx, const v1::SweepRequest* request) {
  return RunJob<v1::SweepRequest, v1::SweepResponse>("Sweep", ctx, *request, sweep_,
                                                     [](const v1::SweepRequest& r) -> absl::Status {
                                                       if (r.gpu().empty())
                                                         return FieldError("gpu", GpuRequired());
                                                       return SweepValues(r).status();
                                                     });
}

namespace {

absl::Status NoCache(absl::string_view rpc) {
  return absl::FailedPreconditionError(
      absl::StrCat(rpc, ": this server has no result cache (start it with --cache=FILE)"));
}

}  // namespace

grpc::ServerUnaryReactor* AdvisorService::Recalibrate(grpc::CallbackServerContext* ctx,
                                                      const v1::RecalibrateRequest* request,
                                                      v1::RecalibrateResponse* response) {
  auto done = Track("Recalibrate", *ctx);
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  absl::Status st = Admit(ctx, Role::kAdmin);
  if (st.ok() && calibration_ == nullptr) st = NoCache("Recalibrate");
  if (st.ok() && !request->gpu().empty()) st = FindGpu(request->gpu()).status();
  if (st.ok() && (request->min_rows() < 0 || request->min_rows() > 1'000'000)) {
    st = FieldError("min_rows", absl::StrCat("must be in [0, 1000000]; got ", request->min_rows()));
  }
  if (!st.ok()) {
    const grpc::Status g = ToGrpcStatus(st);
    done(g);
    reactor->Finish(g);
    return reactor;
  }
  // A refit is seconds of CPU: it runs on a job thread, like the other long calls.
  const bool queued = jobs_->TrySubmit([this, reactor, request, response, done](absl::Duration) {
    *response = calibration_->Run(request->gpu(), request->min_rows());
    done(grpc::Status::OK);
    reactor->Finish(grpc::Status::OK);
  });
  if (!queued) {
    const grpc::Status g = ToGrpcStatus(QueueFullError(*jobs_));
    done(g);
    reactor->Finish(g);
  }
  return reactor;
}

grpc::ServerWriteReactor<v1::ExportMeasurementsResponse>* AdvisorService::ExportMeasurements(
    grpc::CallbackServerContext* ctx, const v1::ExportMeasurementsRequest* request) {
  std::shared_ptr<StreamReactor<v1::ExportMeasurementsResponse>> reactor;
  absl::Status st = OpenStream("ExportMeasurements", ctx, Role::kAdmin, &reactor);
  if (st.ok() && cache_ == nullptr) st = NoCache("ExportMeasurements");
  if (st.ok() && !request->gpu().empty()) st = FindGpu(request->gpu()).status();
  if (!st.ok()) {
    reactor->Finish(ToGrpcStatus(st));
    return reactor.get();
  }
  const std::vector<Measurement> rows = CachedMeasurements(*cache_, request->gpu());
  // Chunks of at most 4096 rows (about 0.5 MiB), well under any message limit.
  constexpr size_t kRowsPerChunk = 4096;
  for (size_t i = 0; i == 0 || i < rows.size(); i += kRowsPerChunk) {
    const std::vector<Measurement> chunk(
        rows.begin() + static_cast<std::ptrdiff_t>(i),
        rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), i + kRowsPerChunk)));
    std::string csv = FormatMeasurementsCsv(chunk);
    if (i > 0) csv = csv.substr(csv.find('\n') + 1);  // the header once
    v1::ExportMeasurementsResponse msg;
    msg.set_csv(std::move(csv));
    msg.set_rows(static_cast<int64_t>(chunk.size()));
    reactor->Push(std::move(msg));
    if (rows.empty()) break;
  }
  reactor->Finish(grpc::Status::OK);
  return reactor.get();
}

}  // namespace wavecrest
