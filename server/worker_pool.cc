#include "server/worker_pool.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "service/convert.h"
#include "service/errors.h"
#include "service/log.h"

// The worker pool's dispatch (server/worker_pool.h): the workers as GpuWorkers sees them, a free
// worker for each measuring job, the job streamed to it, and the quarantine of what crashed it.
namespace wavecrest {

WorkerPool::WorkerPool(WorkerPoolOptions options, Metrics* metrics, Clock* clock)
    : options_(std::move(options)),
      metrics_(metrics),
      clock_(clock),
      quarantine_(options_.quarantine_after, options_.quarantine_for, clock) {
  for (size_t i = 0; i < options_.local.size(); ++i) {
    auto w = NewWorker();
    w->id = absl::StrCat("local-", i);
    w->local = true;
    w->argv = options_.local[i].argv;
    w->socket_path = options_.local[i].socket_path;
    w->address = "unix:" + w->socket_path;
    workers_.push_back(std::move(w));
  }
  for (const std::string& a : options_.remote) {
    auto w = NewWorker();
    w->id = a;
    w->address = a;
    workers_.push_back(std::move(w));
  }
  for (auto& w : workers_) {
    if (metrics_) metrics_->AddWorker(w->id, RestartReasons());
  }
}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::OnChange(std::function<void(int)> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  on_change_ = std::move(callback);
}

int WorkerPool::UpCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  int up = 0;
  for (const auto& w : workers_) up += w->state == State::kUp;
  return up;
}

std::unique_ptr<WorkerPool::Worker> WorkerPool::NewWorker() const {
  auto w = std::make_unique<Worker>();
  w->backoff =
      RestartBackoff(options_.backoff_initial, options_.backoff_max, options_.backoff_reset_after);
  return w;
}

void WorkerPool::ChargeCrash(const std::string& kind, const std::string& item,
                             const std::string& why) {
  if (quarantine_.Charge(kind, item)) {
    LogError("GEMM or layer quarantined: it stopped a worker twice",
             {{"kind", kind},
              {"item", item},
              {"last_reason", why},
              {"for_s", absl::StrCat(absl::ToInt64Seconds(options_.quarantine_for))}});
  }
  UpdateQuarantineMetric();
}

void WorkerPool::UpdateQuarantineMetric() {
  if (metrics_) metrics_->SetQuarantined(quarantine_.Count());
}

int64_t WorkerPool::ClearQuarantine(absl::string_view kind) {
  const int64_t cleared = quarantine_.Clear(kind);
  UpdateQuarantineMetric();
  LogInfo("quarantine cleared",
          {{"kind", kind.empty() ? "(all)" : std::string(kind)}, {"cleared", cleared}});
  return cleared;
}

bool WorkerPool::CanMeasure(absl::string_view kind) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& w : workers_) {
    if (w->state == State::kUp && w->kind == kind && !w->retired) return true;
  }
  return false;
}

bool WorkerPool::MightMeasure(absl::string_view kind) const {
  std::lock_guard<std::mutex> lock(mu_);
  // Discovery may yet find one.
  if (!options_.discover.empty()) return true;
  for (const auto& w : workers_) {
    if (!w->retired && (w->kind == kind || w->kind.empty())) return true;
  }
  return false;
}

std::optional<v1::DeviceFingerprint> WorkerPool::Fingerprint(absl::string_view kind) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<v1::DeviceFingerprint> seen;
  for (const auto& w : workers_) {
    if (w->kind != kind || !w->fingerprint) continue;
    if (w->state == State::kUp) return w->fingerprint;
    seen = w->fingerprint;
  }
  return seen;
}

std::optional<std::string> WorkerPool::KindOfDevice(absl::string_view device_name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& w : workers_) {
    if (w->fingerprint && absl::EqualsIgnoreCase(w->fingerprint->name(), device_name)) {
      return w->kind;
    }
  }
  return std::nullopt;
}

void WorkerPool::AddWorkers(v1::ListDevicesResponse* response, bool internal) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& w : workers_) {
    if (w->retired) continue;
    v1::WorkerDevice* d = response->add_workers();
    d->set_id(w->id);
    // Socket paths, remote addresses and PIDs are the server's internals: only for an admin.
    if (internal) d->set_address(w->address);
    if (w->fingerprint) *d->mutable_device() = *w->fingerprint;
    d->set_up(w->state == State::kUp);
    d->set_restarts(w->restarts);
    d->set_pid(internal && w->local ? w->pid : 0);
    d->set_last_restart_reason(w->last_reason);
  }
}

WorkerPool::Worker* WorkerPool::AcquireWorker(absl::string_view kind, const MeasureOptions& options,
                                              const std::function<bool()>& cancelled,
                                              absl::Status* why_not) {
  Worker* w = nullptr;
  const absl::Time wait_start = clock_->Now();
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (stopping_) {
      *why_not = absl::UnavailableError("the server is stopping");
      return nullptr;
    }
    bool any_up = false;
    for (auto& c : workers_) {
      if (c->kind != kind || c->state != State::kUp || c->retired) continue;
      any_up = true;
      if (!c->busy) {
        w = c.get();
        break;
      }
    }
    if (w) break;
    if (!any_up) {
      *why_not = WithRetryDelay(absl::UnavailableError(absl::StrCat("no ", kind, " worker is up")),
                                absl::Seconds(2), "NO_WORKER");
      return nullptr;
    }
    if (cancelled()) {
      *why_not = absl::CancelledError("the call was cancelled");
      return nullptr;
    }
    if (clock_->Now() > options.deadline) {
      *why_not = absl::DeadlineExceededError(
          absl::StrCat("deadline passed while waiting for a free ", kind, " worker"));
      return nullptr;
    }
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
  w->busy = true;
  w->died_in_job = false;
  w->in_flight.reset();
  w->last_event = clock_->Now();
  lock.unlock();
  if (metrics_) metrics_->WorkerWait(absl::ToDoubleSeconds(clock_->Now() - wait_start));
  return w;
}

template <typename OnResult>
std::vector<size_t> WorkerPool::RefuseQuarantined(absl::string_view kind,
                                                  const std::vector<std::string>& names,
                                                  const OnResult& on_result) {
  std::vector<size_t> todo;
  std::vector<size_t> quarantined;
  for (size_t j = 0; j < names.size(); ++j) {
    (quarantine_.Quarantined(kind, names[j]) ? quarantined : todo).push_back(j);
  }
  UpdateQuarantineMetric();  // expired quarantines were dropped
  for (size_t j : quarantined) {
    on_result(j, absl::FailedPreconditionError(absl::StrCat(
                     names[j], " is quarantined: it stopped a ", kind, " worker ",
                     options_.quarantine_after,
                     " times, so it is not sent to workers until the quarantine ends (",
                     absl::ToInt64Seconds(options_.quarantine_for),
                     " s after the last crash) or an operator clears it")));
  }
  return todo;
}

template <typename Event, typename Reader, typename OnResult>
std::string WorkerPool::ReadEvents(Worker& w, Reader& reader, const std::vector<std::string>& names,
                                   const std::vector<size_t>& todo, const OnResult& on_result) {
  Event event;
  std::string last_error;  // the worker's last per-item error (a sticky error comes this way)
  while (reader.Read(&event)) {
    if (event.index() < 0 || static_cast<size_t>(event.index()) >= todo.size()) continue;
    const size_t j = todo[event.index()];
    {
      std::lock_guard<std::mutex> lock(mu_);
      w.last_event = clock_->Now();
      // An item stays "in flight" until its result, or an error other than INTERNAL: a sticky
      // error (INTERNAL) ends the worker, and the item is charged with that.
      if (event.has_timing() ||
          (event.has_error() &&
           event.error().code() != static_cast<int>(absl::StatusCode::kInternal))) {
        w.in_flight.reset();
      } else {
        w.in_flight = names[j];
      }
    }
    if (event.has_timing()) {
      on_result(j, std::move(*event.mutable_timing()));
    } else if (event.has_error()) {
      last_error = event.error().message();
      on_result(j, absl::Status(static_cast<absl::StatusCode>(event.error().code()),
                                event.error().message()));
    }
  }
  return last_error;
}

template <typename Event, typename Request, typename AddItem, typename Call, typename OnResult>
absl::Status WorkerPool::RunJob(absl::string_view kind, const std::vector<std::string>& names,
                                const MeasureOptions& options, Request* request,
                                const AddItem& add_item, const Call& call,
                                const OnResult& on_result, const std::function<bool()>& cancelled) {
  const std::vector<size_t> todo = RefuseQuarantined(kind, names, on_result);
  if (todo.empty()) return absl::OkStatus();
  // A free worker of the kind; wait while all of them are busy.
  absl::Status why_not;
  Worker* w = AcquireWorker(kind, options, cancelled, &why_not);
  if (w == nullptr) return why_not;
  for (size_t j : todo) add_item(j);
  request->mutable_options()->set_autotune(options.autotune);
  request->mutable_options()->set_warm_l2(options.warm_l2);
  // The worker keeps its heartbeats inside this watchdog and refuses what would outlast it.
  const double watchdog = absl::ToDoubleSeconds(options_.job_timeout);
  request->mutable_options()->set_watchdog_s(watchdog > 0 && watchdog <= 86400 ? watchdog : 0);

  grpc::ClientContext ctx;
  if (options.deadline < absl::InfiniteFuture())
    ctx.set_deadline(absl::ToChronoTime(options.deadline));
  std::shared_ptr<grpc::Channel> channel;
  {
    std::lock_guard<std::mutex> lock(mu_);
    channel = w->channel;
    w->call = &ctx;
    w->cancelled = &cancelled;
  }
  auto stub = v1::GemmWorker::NewStub(channel);
  auto reader = call(*stub, &ctx);
  const std::string last_error = ReadEvents<Event>(*w, *reader, names, todo, on_result);
  return FinishJob(*w, std::string(kind), reader->Finish(), options, last_error, cancelled);
}

absl::Status WorkerPool::FinishJob(Worker& w, const std::string& kind, const grpc::Status& st,
                                   const MeasureOptions& options, const std::string& last_error,
                                   const std::function<bool()>& cancelled) {
  std::unique_lock<std::mutex> lock(mu_);
  w.call = nullptr;
  w.cancelled = nullptr;
  const bool caller_stopped = cancelled() || clock_->Now() > options.deadline;
  if (!st.ok() && !caller_stopped) {
    // The worker failed under this job: give the supervisor a moment to see it die.
    cv_.wait_for(lock, std::chrono::seconds(3),
                 [&] { return w.died_in_job || w.state != State::kUp; });
  }
  const bool died = w.died_in_job || w.state != State::kUp;
  const std::optional<std::string> in_flight = w.in_flight;
  const std::string id = w.id, reason = w.last_reason;
  w.busy = false;
  w.in_flight.reset();
  w.died_in_job = false;
  cv_.notify_all();
  if (st.ok()) return absl::OkStatus();
  if (cancelled()) return absl::CancelledError("the call was cancelled");
  if (clock_->Now() > options.deadline) return absl::DeadlineExceededError("deadline passed");
  if (died) {
    if (in_flight) ChargeCrash(kind, *in_flight, reason);
    return WithRetryDelay(absl::UnavailableError(absl::StrCat(
                              "worker ", id, " stopped (", reason, ")",
                              in_flight ? absl::StrCat(" while timing ", *in_flight) : "",
                              last_error.empty() ? "" : absl::StrCat(" (", last_error, ")"),
                              "; it is being restarted")),
                          absl::Seconds(1), "WORKER_RESTARTING");
  }
  return absl::UnavailableError(
      absl::StrCat("worker ", id, ": ", st.error_message(), " (code ", st.error_code(), ")"));
}

absl::Status WorkerPool::Measure(absl::string_view kind, const std::vector<GemmKey>& keys,
                                 const MeasureOptions& options, const MeasureCallback& on_result,
                                 const std::function<bool()>& cancelled) {
  std::vector<std::string> names;
  for (const GemmKey& key : keys) names.push_back(GemmKeyString(key));
  v1::GemmWorkerTimeGemmsRequest request;
  return RunJob<v1::GemmWorkerTimeGemmsResponse>(
      kind, names, options, &request,
      [&](size_t j) {
        v1::WorkerGemm* g = request.add_gemms();
        *g->mutable_shape() = ToProto(keys[j].shape);
        g->set_layout(ToProto(keys[j].layout));
        g->set_dtype(ToProto(keys[j].dtype));
      },
      [&](v1::GemmWorker::Stub& stub, grpc::ClientContext* ctx) {
        return stub.TimeGemms(ctx, request);
      },
      on_result, cancelled);
}

absl::Status WorkerPool::MeasureLayers(absl::string_view kind, const std::vector<LayerKey>& keys,
                                       const MeasureOptions& options,
                                       const LayerMeasureCallback& on_result,
                                       const std::function<bool()>& cancelled) {
  std::vector<std::string> names;
  for (const LayerKey& key : keys) names.push_back(LayerKeyString(key));
  v1::GemmWorkerTimeLayersRequest request;
  return RunJob<v1::GemmWorkerTimeLayersResponse>(
      kind, names, options, &request, [&](size_t j) { *request.add_layers() = ToProto(keys[j]); },
      [&](v1::GemmWorker::Stub& stub, grpc::ClientContext* ctx) {
        return stub.TimeLayers(ctx, request);
      },
      on_result, cancelled);
}

}  // namespace wavecrest
