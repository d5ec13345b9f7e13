#include "server/worker_pool.h"

#include <netdb.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "service/convert.h"
#include "service/errors.h"
#include "service/log.h"

namespace wavecrest {
namespace {

constexpr int kExitSticky = 3;  // wavecrest-worker's exit code after a sticky CUDA error

std::shared_ptr<grpc::Channel> WorkerChannel(
    const std::string& address, const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  grpc::ChannelArguments args;
  // Reconnect quickly: a restarted local worker listens again within milliseconds.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetMaxReceiveMessageSize(16 << 20);
  return grpc::CreateCustomChannel(
      address, credentials ? credentials : grpc::InsecureChannelCredentials(), args);
}

std::chrono::system_clock::time_point In(absl::Duration d) {
  return absl::ToChronoTime(absl::Now() + d);
}

}  // namespace

WorkerPool::WorkerPool(WorkerPoolOptions options, Metrics* metrics)
    : options_(std::move(options)), metrics_(metrics) {
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

void WorkerPool::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& w : workers_) {
      if (w->local) {
        Spawn(*w);
      } else {
        Connect(*w);
      }
    }
  }
  supervisor_ = std::thread([this] { Supervise(); });
}

void WorkerPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !supervisor_.joinable()) return;
    stopping_ = true;
    cv_.notify_all();
  }
  if (supervisor_.joinable()) supervisor_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& w : workers_) {
    if (w->pid > 0) kill(w->pid, SIGTERM);
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(2);
  for (auto& w : workers_) {
    while (w->pid > 0) {
      int status = 0;
      const pid_t r = waitpid(w->pid, &status, WNOHANG);
      if (r == w->pid || (r < 0 && errno == ECHILD)) {
        w->pid = 0;
        break;
      }
      if (absl::Now() > deadline) {
        kill(w->pid, SIGKILL);
        waitpid(w->pid, &status, 0);
        w->pid = 0;
        break;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    if (w->local) unlink(w->socket_path.c_str());
    w->state = State::kDown;
    if (metrics_) metrics_->SetWorkerUp(w->id, false);
  }
}

void WorkerPool::Spawn(Worker& w) {
  std::vector<std::string> argv = w.argv;
  argv.push_back("--listen=" + w.address);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  unlink(w.socket_path.c_str());
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls here: the parent is multithreaded.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    execv(args[0], args.data());
    _exit(127);
  }
  if (pid < 0) {
    LogError("cannot start worker", {{"worker", w.id}, {"error", std::strerror(errno)}});
    w.next_attempt = absl::Now() + options_.backoff_max;
    return;
  }
  w.pid = pid;
  w.state = State::kStarting;
  w.started_at = absl::Now();
  w.kill_reason.clear();
  w.channel = WorkerChannel(w.address, nullptr);  // a unix socket in the server's 0700 directory
  w.stub = v1::GemmWorker::NewStub(w.channel);
  LogInfo("worker starting", {{"worker", w.id}, {"pid", pid}});
}

void WorkerPool::Connect(Worker& w) {
  w.state = State::kStarting;
  w.started_at = absl::Now();
  w.channel = WorkerChannel(w.address, options_.remote_credentials);
  w.stub = v1::GemmWorker::NewStub(w.channel);
}

std::unique_ptr<WorkerPool::Worker> WorkerPool::NewWorker() const {
  auto w = std::make_unique<Worker>();
  w->backoff = RestartBackoff(options_.backoff_initial, options_.backoff_max,
                              options_.backoff_reset_after);
  return w;
}

void WorkerPool::MarkDown(Worker& w, const std::string& reason) {
  w.state = State::kDown;
  w.missed_heartbeats = 0;
  if (w.busy) w.died_in_job = true;
  ++w.restarts;
  w.last_reason = reason;
  if (metrics_) {
    metrics_->SetWorkerUp(w.id, false);
    metrics_->WorkerRestart(w.id, reason);
  }
  static thread_local std::mt19937_64 rng(std::random_device{}());
  const double jitter = std::uniform_real_distribution<double>(0.5, 1.5)(rng);
  const absl::Duration backoff = w.backoff.Down(absl::Now(), jitter);
  w.next_attempt = absl::Now() + backoff;
  LogWarning("worker down", {{"worker", w.id},
                             {"reason", reason},
                             {"restarts", w.restarts},
                             {"failures_in_a_row", w.backoff.failures()},
                             {"next_attempt_in_s", absl::StrCat(absl::ToDoubleSeconds(backoff))}});
  cv_.notify_all();
}

void WorkerPool::Kill(Worker& w, const std::string& reason) {
  if (w.local && w.pid > 0) {
    if (w.kill_reason.empty()) {
      w.kill_reason = reason;
      LogWarning("killing worker", {{"worker", w.id}, {"reason", reason}});
      kill(w.pid, SIGKILL);
    }
    return;  // reaped on the next tick
  }
  if (w.call) w.call->TryCancel();
  MarkDown(w, reason);
}

std::string WorkerPool::QuarantineKey(absl::string_view kind, absl::string_view item) {
  return absl::StrCat(kind, "|", item);
}

void WorkerPool::ChargeCrash(const std::string& kind, const std::string& item,
                             const std::string& why) {
  const std::string qk = QuarantineKey(kind, item);
  QuarantinedLocked(qk);  // an expired entry starts counting again
  Crashes& c = crashes_[qk];
  c.last = absl::Now();
  if (++c.count == options_.quarantine_after) {
    LogError("GEMM or layer quarantined: it stopped a worker twice",
             {{"kind", kind},
              {"item", item},
              {"last_reason", why},
              {"for_s", absl::StrCat(absl::ToInt64Seconds(options_.quarantine_for))}});
    UpdateQuarantineMetricLocked();
  }
}

bool WorkerPool::QuarantinedLocked(const std::string& key) {
  auto it = crashes_.find(key);
  if (it == crashes_.end()) return false;
  if (options_.quarantine_for > absl::ZeroDuration() &&
      absl::Now() - it->second.last > options_.quarantine_for) {
    crashes_.erase(it);
    UpdateQuarantineMetricLocked();
    return false;
  }
  return it->second.count >= options_.quarantine_after;
}

void WorkerPool::UpdateQuarantineMetricLocked() {
  int64_t q = 0;
  for (const auto& [k, c] : crashes_) q += c.count >= options_.quarantine_after;
  if (metrics_) metrics_->SetQuarantined(q);
}

int64_t WorkerPool::ClearQuarantine(absl::string_view kind) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t cleared = 0;
  const std::string prefix = absl::StrCat(kind, "|");
  for (auto it = crashes_.begin(); it != crashes_.end();) {
    if (kind.empty() || absl::StartsWith(it->first, prefix)) {
      cleared += it->second.count >= options_.quarantine_after;
      crashes_.erase(it++);
    } else {
      ++it;
    }
  }
  UpdateQuarantineMetricLocked();
  LogInfo("quarantine cleared",
          {{"kind", kind.empty() ? "(all)" : std::string(kind)}, {"cleared", cleared}});
  return cleared;
}

void WorkerPool::NotifyChange() {
  int up = 0;
  for (const auto& w : workers_) up += w->state == State::kUp;
  if (up != last_up_) {
    last_up_ = up;
    if (on_change_) on_change_(up);
  }
}

void WorkerPool::Supervise() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const bool discover = !options_.discover.empty() && absl::Now() >= next_discovery_;
    lock.unlock();
    if (discover) Discover();
    Tick();
    lock.lock();
    NotifyChange();
    cv_.wait_for(lock, absl::ToChronoNanoseconds(options_.tick), [&] { return stopping_; });
  }
}

absl::StatusOr<std::vector<std::string>> ResolveWorkers(const std::string& name_port) {
  const size_t colon = name_port.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--worker_dns: \"", name_port, "\" is not NAME:PORT"));
  }
  const std::string host = name_port.substr(0, colon), port = name_port.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat("--worker_dns ", name_port, ": ", gai_strerror(rc)));
  }
  std::set<std::string> out;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char ip[NI_MAXHOST];
    if (getnameinfo(a->ai_addr, a->ai_addrlen, ip, sizeof(ip), nullptr, 0, NI_NUMERICHOST) != 0) {
      continue;
    }
    out.insert(a->ai_family == AF_INET6 ? absl::StrCat("[", ip, "]:", port)
                                        : absl::StrCat(ip, ":", port));
  }
  freeaddrinfo(found);
  return std::vector<std::string>(out.begin(), out.end());
}

void WorkerPool::Discover() {
  const auto resolve = options_.resolve ? options_.resolve : ResolveWorkers;
  absl::StatusOr<std::vector<std::string>> found = resolve(options_.discover);
  std::lock_guard<std::mutex> lock(mu_);
  next_discovery_ = absl::Now() + options_.discover_every;
  if (!found.ok()) {
    // A name that does not resolve right now (no worker pod yet) retires nobody.
    LogWarning("worker discovery failed", {{"error", std::string(found.status().message())}});
    return;
  }
  const std::set<std::string> now(found->begin(), found->end());
  for (auto& w : workers_) {
    if (!w->discovered) continue;
    const bool present = now.count(w->address) > 0;
    if (present && w->retired) {
      w->retired = false;  // back (a rescheduled pod on the same address): reconnect
      w->next_attempt = absl::InfinitePast();
      LogInfo("worker rediscovered", {{"worker", w->id}});
    } else if (!present && !w->retired) {
      w->retired = true;
      LogInfo("worker gone from discovery: retired", {{"worker", w->id}, {"busy", w->busy}});
    }
  }
  for (const std::string& address : now) {
    const bool known = std::any_of(workers_.begin(), workers_.end(),
                                   [&](const auto& w) { return w->address == address; });
    if (known) continue;
    auto w = NewWorker();
    w->id = absl::StrCat("dns:", address);
    w->address = address;
    w->discovered = true;
    if (metrics_) metrics_->AddWorker(w->id, RestartReasons());
    LogInfo("worker discovered", {{"worker", w->id}, {"name", options_.discover}});
    Connect(*w);
    workers_.push_back(std::move(w));
  }
}

void WorkerPool::Tick() {
  // Discovery may add workers: walk a snapshot (the workers themselves never move or go away).
  std::vector<Worker*> snapshot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& w : workers_) snapshot.push_back(w.get());
  }
  for (Worker* w : snapshot) TickWorker(*w);
}

void WorkerPool::TickWorker(Worker& w) {
  if (SettleRetired(w)) return;
  ReapExited(w);
  std::shared_ptr<grpc::Channel> channel;
  switch (Decide(w, &channel)) {
    case Action::kNone:
      break;
    case Action::kRestart: {
      std::lock_guard<std::mutex> lock(mu_);
      if (w.local) {
        Spawn(w);
      } else {
        Connect(w);
      }
      break;
    }
    case Action::kDescribe:
      Describe(w, channel);
      break;
    case Action::kHeartbeat:
      Heartbeat(w, channel);
      break;
  }
}

bool WorkerPool::SettleRetired(Worker& w) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!w.retired) return false;
  if (!w.busy && w.state != State::kDown) {
    w.state = State::kDown;
    w.channel.reset();
    if (metrics_) metrics_->SetWorkerUp(w.id, false);
    cv_.notify_all();
  }
  return true;
}

void WorkerPool::ReapExited(Worker& w) {
  if (!w.local) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (w.pid <= 0) return;
  int status = 0;
  if (waitpid(w.pid, &status, WNOHANG) != w.pid) return;
  std::string reason = w.kill_reason;
  if (reason.empty()) {
    reason = WIFEXITED(status) && WEXITSTATUS(status) == kExitSticky ? "sticky_error" : "exit";
  }
  LogWarning("worker exited",
             {{"worker", w.id},
              {"pid", w.pid},
              {"status", WIFEXITED(status) ? absl::StrCat("exit code ", WEXITSTATUS(status))
                                           : absl::StrCat("signal ", WTERMSIG(status))}});
  w.pid = 0;
  MarkDown(w, reason);
}

WorkerPool::Action WorkerPool::Decide(Worker& w, std::shared_ptr<grpc::Channel>* channel) {
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time now = absl::Now();
  Action action = Action::kNone;
  if (w.state == State::kUp) w.backoff.Tick(now);
  if (w.busy && w.call) {
    if (w.cancelled && (*w.cancelled)()) w.call->TryCancel();
    if (w.state == State::kUp && now - w.last_event > options_.job_timeout) Kill(w, "hang");
  }
  if (w.state == State::kStarting) {
    if (now - w.started_at > options_.start_timeout) {
      if (w.local) {
        Kill(w, "start_timeout");
      } else {
        MarkDown(w, "unreachable");
      }
    } else {
      action = Action::kDescribe;
    }
  } else if (w.state == State::kUp && now >= w.next_heartbeat && w.kill_reason.empty()) {
    action = Action::kHeartbeat;
    w.next_heartbeat = now + options_.heartbeat_interval;
  } else if (w.state == State::kDown && !w.busy && w.pid == 0 && now >= w.next_attempt &&
             !stopping_) {
    action = Action::kRestart;
  }
  *channel = w.channel;
  return action;
}

void WorkerPool::Describe(Worker& w, const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = v1::GemmWorker::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(In(absl::Milliseconds(500)));
  v1::DescribeResponse d;
  const grpc::Status st = stub->Describe(&ctx, v1::DescribeRequest(), &d);
  if (!st.ok()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (w.state != State::kStarting) return;
  w.state = State::kUp;
  w.started_at = absl::Now();
  w.backoff.Up(w.started_at);
  w.fingerprint = d.device();
  w.kind = !d.device().catalog_name().empty() ? d.device().catalog_name()
                                              : absl::AsciiStrToLower(d.device().name());
  w.missed_heartbeats = 0;
  w.next_heartbeat = absl::Now() + options_.heartbeat_interval;
  if (metrics_) metrics_->SetWorkerUp(w.id, true);
  LogInfo("worker up", {{"worker", w.id},
                        {"kind", w.kind},
                        {"device", d.device().name()},
                        {"backend", d.device().backend()},
                        {"pid", d.pid()}});
  cv_.notify_all();
}

void WorkerPool::Heartbeat(Worker& w, const std::shared_ptr<grpc::Channel>& channel) {
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(In(absl::Seconds(1)));
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  const grpc::Status st = health->Check(&ctx, req, &resp);
  const bool ok = st.ok() && resp.status() == grpc::health::v1::HealthCheckResponse::SERVING;
  std::lock_guard<std::mutex> lock(mu_);
  if (w.state != State::kUp) return;
  if (ok) {
    w.missed_heartbeats = 0;
  } else if (++w.missed_heartbeats >= options_.heartbeat_failures) {
    Kill(w, "heartbeat");
  }
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
  const absl::Time wait_start = absl::Now();
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
    if (absl::Now() > options.deadline) {
      *why_not = absl::DeadlineExceededError(
          absl::StrCat("deadline passed while waiting for a free ", kind, " worker"));
      return nullptr;
    }
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
  w->busy = true;
  w->died_in_job = false;
  w->in_flight.reset();
  w->last_event = absl::Now();
  lock.unlock();
  if (metrics_) metrics_->WorkerWait(absl::ToDoubleSeconds(absl::Now() - wait_start));
  return w;
}

template <typename Event, typename Request, typename AddItem, typename Call, typename OnResult>
absl::Status WorkerPool::RunJob(absl::string_view kind, const std::vector<std::string>& names,
                                const MeasureOptions& options, Request* request,
                                const AddItem& add_item, const Call& call,
                                const OnResult& on_result, const std::function<bool()>& cancelled) {
  const std::string k(kind);
  std::vector<size_t> todo;
  std::vector<size_t> quarantined;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t j = 0; j < names.size(); ++j) {
      (QuarantinedLocked(QuarantineKey(kind, names[j])) ? quarantined : todo).push_back(j);
    }
  }
  for (size_t j : quarantined) {
    on_result(j, absl::FailedPreconditionError(absl::StrCat(
                     names[j], " is quarantined: it stopped a ", kind, " worker ",
                     options_.quarantine_after,
                     " times, so it is not sent to workers until the quarantine ends (",
                     absl::ToInt64Seconds(options_.quarantine_for),
                     " s after the last crash) or an operator clears it")));
  }
  if (todo.empty()) return absl::OkStatus();

  // A free worker of the kind; wait while all of them are busy.
  absl::Status why_not;
  Worker* w = AcquireWorker(kind, options, cancelled, &why_not);
  if (w == nullptr) return why_not;
  std::shared_ptr<grpc::Channel> channel;
  {
    std::lock_guard<std::mutex> lock(mu_);
    channel = w->channel;
  }
  for (size_t j : todo) add_item(j);
  request->mutable_options()->set_autotune(options.autotune);
  request->mutable_options()->set_warm_l2(options.warm_l2);
  // The worker keeps its heartbeats inside this watchdog and refuses what would outlast it.
  const double watchdog = absl::ToDoubleSeconds(options_.job_timeout);
  request->mutable_options()->set_watchdog_s(watchdog > 0 && watchdog <= 86400 ? watchdog : 0);

  grpc::ClientContext ctx;
  if (options.deadline < absl::InfiniteFuture())
    ctx.set_deadline(absl::ToChronoTime(options.deadline));
  {
    std::lock_guard<std::mutex> lock(mu_);
    w->call = &ctx;
    w->cancelled = &cancelled;
  }
  auto stub = v1::GemmWorker::NewStub(channel);
  auto reader = call(*stub, &ctx);
  Event event;
  std::string last_error;  // the worker's last per-item error (a sticky error comes this way)
  while (reader->Read(&event)) {
    if (event.index() < 0 || static_cast<size_t>(event.index()) >= todo.size()) continue;
    const size_t j = todo[event.index()];
    {
      std::lock_guard<std::mutex> lock(mu_);
      w->last_event = absl::Now();
      // An item stays "in flight" until its result, or an error other than INTERNAL: a sticky
      // error (INTERNAL) ends the worker, and the item is charged with that.
      if (event.has_timing() ||
          (event.has_error() &&
           event.error().code() != static_cast<int>(absl::StatusCode::kInternal))) {
        w->in_flight.reset();
      } else {
        w->in_flight = names[j];
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
  return FinishJob(*w, k, reader->Finish(), options, last_error, cancelled);
}

absl::Status WorkerPool::FinishJob(Worker& w, const std::string& kind, const grpc::Status& st,
                                   const MeasureOptions& options, const std::string& last_error,
                                   const std::function<bool()>& cancelled) {
  std::unique_lock<std::mutex> lock(mu_);
  w.call = nullptr;
  w.cancelled = nullptr;
  const bool caller_stopped = cancelled() || absl::Now() > options.deadline;
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
  if (absl::Now() > options.deadline) return absl::DeadlineExceededError("deadline passed");
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
