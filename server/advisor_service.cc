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
#include "server/stream_reactor.h"
#include "service/advisor_logic.h"
#include "service/errors.h"
#include "service/log.h"
#include "service/recommend_logic.h"
#include "service/sweep_logic.h"
#include "service/timing_logic.h"

namespace wavecrest {
namespace {

// How long a call answered on a gRPC callback thread (Analyze) may wait for the store, all its
// lookups together: a lookup by primary key answers in milliseconds; past this the database is
// frozen or overloaded, and the call answers without it.
constexpr absl::Duration kCallbackStoreBudget = absl::Milliseconds(250);

// A unary reactor that finishes at once with `status`.
grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* ctx,
                                      const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(status);
  return reactor;
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

AdvisorService::AdvisorService(TimingService* timing, JobQueue* jobs, Metrics* metrics,
                               GpuWorkers* workers, SelfCalibration* calibration,
                               MeasurementStore* store, const Auth* auth, Clock* clock)
    : timing_(timing),
      jobs_(jobs),
      metrics_(metrics),
      workers_(workers),
      calibration_(calibration),
      store_(store),
      auth_(auth ? auth : &no_auth_),
      clock_(clock) {}

absl::Time AdvisorService::DeadlineOf(const grpc::CallbackServerContext* ctx) const {
  const auto d = ctx->deadline();
  if (d == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  const absl::Time wall = absl::FromChrono(d);
  if (clock_ == &Clock::Real()) return wall;
  return clock_->Now() + (wall - Clock::Real().Now());  // a test's clock
}

absl::Status AdvisorService::Admit(const grpc::CallbackServerContext* ctx, Role role) const {
  if (absl::Status st = auth_->Check(*ctx, role); !st.ok()) return st;
  if (!draining_.load()) return absl::OkStatus();
  return WithRetryDelay(absl::UnavailableError("server shutting down; retry on another replica"),
                        absl::Seconds(1), "SHUTTING_DOWN");
}

std::function<void(const grpc::Status&)> AdvisorService::Track(const char* method,
                                                               const grpc::ServerContextBase& ctx,
                                                               std::shared_ptr<CallGemms> gemms) {
  const absl::Time start = clock_->Now();
  prometheus::Gauge& in_flight = metrics_->InFlight(method);
  in_flight.Increment();
  in_flight_.fetch_add(1);
  std::string peer = LogEnabled(LogLevel::kInfo) ? PeerOf(ctx) : "";
  return [this, method, start, &in_flight, peer = std::move(peer),
          gemms = std::move(gemms)](const grpc::Status& status) {
    in_flight.Decrement();
    in_flight_.fetch_sub(1);
    const double seconds = absl::ToDoubleSeconds(clock_->Now() - start);
    const std::string code = StatusCodeName(status.error_code());
    metrics_->RequestDone(method, code, seconds);
    // The access log: one line per call.
    if (LogEnabled(LogLevel::kInfo)) {
      const double latency_ms = std::round(seconds * 1e6) / 1e3;
      if (gemms != nullptr && gemms->measured.load() >= 0) {
        LogInfo(
            "rpc",
            {{"method", method},
             {"peer", peer},
             {"code", code},
             {"latency_ms", latency_ms},
             {gemms->layers ? "layers_measured" : "gemms_measured", gemms->measured.load()},
             {gemms->layers ? "layers_cached" : "gemms_cached", gemms->cached.load()},
             {gemms->layers ? "layers_predicted" : "gemms_predicted", gemms->predicted.load()}});
      } else {
        LogInfo("rpc",
                {{"method", method}, {"peer", peer}, {"code", code}, {"latency_ms", latency_ms}});
      }
    }
  };
}

MeasuredLayerLookup AdvisorService::MeasuredLayers() const {
  if (store_ == nullptr) return nullptr;
  MeasurementStore* store = store_;
  // Analyze answers on a callback thread: its lookups together never wait past this (a frozen
  // database costs it a miss, not its store timeout).
  const absl::Time by = clock_->Now() + kCallbackStoreBudget;
  return [store, by](const GpuSpec& gpu, const LayerKey& key) -> std::optional<v1::LayerTiming> {
    // The newest GPU measurement of the layer on this kind, from any of its devices.
    std::optional<v1::LayerTiming> t = store->LookupLayerBy(
        gpu.name, key, LayerTimingMethod("cublaslt", false), nullptr, by);
    if (t && t->provenance().source() == v1::SOURCE_MEASURED) {
      t->mutable_provenance()->set_source(v1::SOURCE_CACHED);
      t->mutable_provenance()->set_from_cache(true);
    }
    return t;
  };
}

absl::Status AdvisorService::Parse(const char* method, const grpc::ByteBuffer& in,
                                   google::protobuf::Message* request) const {
  return ParseRequest(in, method, RequestLimitsFor(method, max_request_bytes_), request);
}

AdvisorService::Unary AdvisorService::Analyze(Ctx* ctx, const Bytes* in, Bytes* out) {
  return Inline<v1::AnalyzeRequest>(
      "Analyze", ctx, in, out, Role::kClient,
      [&](const v1::AnalyzeRequest& request) -> absl::StatusOr<v1::AnalyzeResponse> {
        if (clock_->Now() > DeadlineOf(ctx)) {
          return absl::DeadlineExceededError("deadline passed before start");
        }
        return HandleAnalyze(request, MeasuredLayers());
      });
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

AdvisorService::Unary AdvisorService::ListDevices(Ctx* ctx, const Bytes* in, Bytes* out) {
  return Inline<v1::ListDevicesRequest>(
      "ListDevices", ctx, in, out, Role::kClient,
      [&](const v1::ListDevicesRequest& request) -> absl::StatusOr<v1::ListDevicesResponse> {
        if (request.include_internal()) {
          if (absl::Status st = Admit(ctx, Role::kAdmin); !st.ok()) return st;
        }
        v1::ListDevicesResponse response = CatalogDevices();
        if (workers_) workers_->AddWorkers(&response, request.include_internal());
        if (store_ != nullptr) {
          response.set_has_cache(true);
          response.set_cache_entries(store_->Count());
        }
        return response;
      });
}

AdvisorService::Unary AdvisorService::ClearQuarantine(Ctx* ctx, const Bytes* in, Bytes* out) {
  return Inline<v1::ClearQuarantineRequest>(
      "ClearQuarantine", ctx, in, out, Role::kAdmin,
      [&](const v1::ClearQuarantineRequest& request)
          -> absl::StatusOr<v1::ClearQuarantineResponse> {
        if (!request.gpu().empty()) {
          if (absl::Status st = FindGpu(request.gpu()).status(); !st.ok()) return st;
        }
        v1::ClearQuarantineResponse response;
        response.set_cleared(workers_ ? workers_->ClearQuarantine(request.gpu()) : 0);
        return response;
      });
}

// The unary calls answered inline: admitted before their bytes are parsed, then one
// logic-layer function.
template <typename Request, typename Handle>
grpc::ServerUnaryReactor* AdvisorService::Inline(const char* method,
                                                 grpc::CallbackServerContext* ctx,
                                                 const grpc::ByteBuffer* in,
                                                 grpc::ByteBuffer* out, Role role,
                                                 const Handle& handle) {
  auto done = Track(method, *ctx);
  absl::Status st = Admit(ctx, role);
  if (st.ok()) {
    Request request;
    st = Parse(method, *in, &request);
    if (st.ok()) {
      auto r = handle(request);
      st = r.ok() ? SerializeResponse(*r, out) : r.status();
    }
  }
  const grpc::Status g = ToGrpcStatus(st);
  done(g);
  return FinishUnary(ctx, g);
}

AdvisorService::Unary AdvisorService::ParseModel(Ctx* ctx, const Bytes* in, Bytes* out) {
  return Inline<v1::ParseModelRequest>("ParseModel", ctx, in, out, Role::kClient,
                                       &HandleParseModel);
}

AdvisorService::Unary AdvisorService::ExportModel(Ctx* ctx, const Bytes* in, Bytes* out) {
  return Inline<v1::ExportModelRequest>("ExportModel", ctx, in, out, Role::kClient,
                                        &HandleExportModel);
}

AdvisorService::Unary AdvisorService::ListModels(Ctx* ctx, const Bytes* in, Bytes* out) {
  return Inline<v1::ListModelsRequest>(
      "ListModels", ctx, in, out, Role::kClient,
      [&](const v1::ListModelsRequest&) -> absl::StatusOr<v1::ListModelsResponse> {
        return HandleListModels(models_dir_);
      });
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

template <typename Request, typename Response, typename Plan>
AdvisorService::Stream AdvisorService::StreamJob(
    const char* method, grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
    const std::function<absl::StatusOr<Plan>(const Request&)>& accept,
    absl::StatusOr<MeasureCounts> (*run)(const Plan&, const CallContext&, const Send<Response>&)) {
  std::shared_ptr<StreamReactor<Response>> reactor;
  auto gemms = std::make_shared<CallGemms>();
  gemms->layers = std::is_same_v<Plan, LayerTask>;
  Request request;
  absl::Status st = OpenStream(method, ctx, Role::kClient, &reactor, gemms);
  if (st.ok()) st = Parse(method, *in, &request);
  if (!st.ok()) {
    reactor->Finish(ToGrpcStatus(st));
    return reactor.get();
  }
  absl::StatusOr<Plan> plan = accept(request);
  if (!plan.ok()) {
    reactor->Finish(ToGrpcStatus(plan.status()));
    return reactor.get();
  }
  auto shared = std::make_shared<Plan>(*std::move(plan));
  const absl::Time deadline = DeadlineOf(ctx);
  Enqueue(reactor, [this, reactor, shared, gemms, deadline, run] {
    CallContext call;
    call.clock = clock_;
    call.deadline = deadline;
    call.cancelled = [reactor] { return reactor->cancelled(); };
    call.progress = [reactor](const v1::Progress& p) {
      Response msg;
      *msg.mutable_progress() = p;
      reactor->Push(std::move(msg));
    };
    call.measurer = timing_;
    absl::StatusOr<MeasureCounts> counts =
        run(*shared, call, [reactor](Response msg) { reactor->Push(std::move(msg)); });
    if (counts.ok()) {
      gemms->cached = counts->cached;
      gemms->predicted = counts->predicted;
      gemms->measured = counts->measured;  // last: it says the counts are there
    }
    reactor->Finish(ToGrpcStatus(counts.status()));
  });
  return reactor.get();
}

AdvisorService::Stream AdvisorService::TimeGemms(Ctx* ctx, const Bytes* in) {
  return StreamJob<v1::TimeGemmsRequest, v1::TimeGemmsResponse, TimeGemmsPlan>(
      "TimeGemms", ctx, in,
      [&](const v1::TimeGemmsRequest& r) { return AcceptTimeGemms(r, *timing_); },
      &StreamTimeGemms);
}

AdvisorService::Stream AdvisorService::TimeLayers(Ctx* ctx, const Bytes* in) {
  return StreamJob<v1::TimeLayersRequest, v1::TimeLayersResponse, LayerTask>(
      "TimeLayers", ctx, in,
      [&](const v1::TimeLayersRequest& r) { return AcceptTimeLayers(r, *timing_); },
      &StreamTimeLayers);
}

AdvisorService::Stream AdvisorService::Recommend(Ctx* ctx, const Bytes* in) {
  return StreamJob<v1::RecommendRequest, v1::RecommendResponse, v1::RecommendRequest>(
      "Recommend", ctx, in, &AcceptRecommend, &StreamRecommend);
}

AdvisorService::Stream AdvisorService::Sweep(Ctx* ctx, const Bytes* in) {
  return StreamJob<v1::SweepRequest, v1::SweepResponse, v1::SweepRequest>(
      "Sweep", ctx, in, &AcceptSweep, &StreamSweep);
}

namespace {

// `rows` as CSV messages on `reactor`.
void PushMeasurementsCsv(StreamReactor<v1::ExportMeasurementsResponse>& reactor,
                         const std::vector<Measurement>& rows) {
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
    reactor.Push(std::move(msg));
    if (rows.empty()) break;
  }
}

absl::Status NoStore(absl::string_view rpc) {
  return absl::FailedPreconditionError(
      absl::StrCat(rpc, ": this server has no measurement store (start it with --store=FILE or "
                        "--store=postgresql://...)"));
}

}  // namespace

AdvisorService::Unary AdvisorService::Recalibrate(Ctx* ctx, const Bytes* in, Bytes* out) {
  auto done = Track("Recalibrate", *ctx);
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  auto request = std::make_shared<v1::RecalibrateRequest>();
  absl::Status st = Admit(ctx, Role::kAdmin);
  if (st.ok()) st = Parse("Recalibrate", *in, request.get());
  if (st.ok() && calibration_ == nullptr) st = NoStore("Recalibrate");
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
  const bool queued = jobs_->TrySubmit([this, reactor, request, out, done](absl::Duration) {
    const grpc::Status g =
        ToGrpcStatus(SerializeResponse(calibration_->Run(request->gpu(), request->min_rows()), out));
    done(g);
    reactor->Finish(g);
  });
  if (!queued) {
    const grpc::Status g = ToGrpcStatus(QueueFullError(*jobs_));
    done(g);
    reactor->Finish(g);
  }
  return reactor;
}

AdvisorService::Stream AdvisorService::ExportMeasurements(Ctx* ctx, const Bytes* in) {
  std::shared_ptr<StreamReactor<v1::ExportMeasurementsResponse>> reactor;
  v1::ExportMeasurementsRequest request;
  absl::Status st = OpenStream("ExportMeasurements", ctx, Role::kAdmin, &reactor);
  if (st.ok()) st = Parse("ExportMeasurements", *in, &request);
  if (st.ok() && store_ == nullptr) st = NoStore("ExportMeasurements");
  if (st.ok() && !request.gpu().empty()) st = FindGpu(request.gpu()).status();
  if (!st.ok()) {
    reactor->Finish(ToGrpcStatus(st));
    return reactor.get();
  }
  // Reading every row is the store's longest operation: on a job thread, never a callback
  // thread (a frozen database would hold it, and health behind it), and only until the call's
  // deadline (or the store's own bulk timeout, or the store going down, if sooner).
  const absl::Time deadline = DeadlineOf(ctx);
  const bool queued = jobs_->TrySubmit([this, reactor, gpu = request.gpu(), deadline](
                                           absl::Duration) {
    absl::StatusOr<std::vector<Measurement>> rows = StoredMeasurementsBy(*store_, gpu, deadline);
    if (!rows.ok()) {
      reactor->Finish(ToGrpcStatus(clock_->Now() > deadline
                                       ? absl::DeadlineExceededError(rows.status().message())
                                       : rows.status()));
      return;
    }
    PushMeasurementsCsv(*reactor, *rows);
    reactor->Finish(grpc::Status::OK);
  });
  if (!queued) reactor->Finish(ToGrpcStatus(QueueFullError(*jobs_)));
  return reactor.get();
}

}  // namespace wavecrest
