#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/worker_pool.h"
#include "service/log.h"

// The worker pool's process supervision (server/worker_pool.h): starting and stopping local
// workers, connecting remote ones, and the supervisor's rounds (reaping, describing, heartbeats,
// the watchdog, restarts after their backoff).
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

// An RPC's deadline `d` from now on `clock`.
std::chrono::system_clock::time_point RpcDeadlineIn(Clock& clock, absl::Duration d) {
  return absl::ToChronoTime(clock.Now() + d);
}

}  // namespace

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
  const absl::Time deadline = clock_->Now() + absl::Seconds(2);
  for (auto& w : workers_) {
    while (w->pid > 0) {
      int status = 0;
      const pid_t r = waitpid(w->pid, &status, WNOHANG);
      if (r == w->pid || (r < 0 && errno == ECHILD)) {
        w->pid = 0;
        break;
      }
      if (clock_->Now() > deadline) {
        kill(w->pid, SIGKILL);
        waitpid(w->pid, &status, 0);
        w->pid = 0;
        break;
      }
      clock_->SleepFor(absl::Milliseconds(10));
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
    w.next_attempt = clock_->Now() + options_.backoff_max;
    return;
  }
  w.pid = pid;
  w.state = State::kStarting;
  w.started_at = clock_->Now();
  w.kill_reason.clear();
  w.channel = WorkerChannel(w.address, nullptr);  // a unix socket in the server's 0700 directory
  w.stub = v1::GemmWorker::NewStub(w.channel);
  LogInfo("worker starting", {{"worker", w.id}, {"pid", pid}});
}

void WorkerPool::Connect(Worker& w) {
  w.state = State::kStarting;
  w.started_at = clock_->Now();
  w.channel = WorkerChannel(w.address, options_.remote_credentials);
  w.stub = v1::GemmWorker::NewStub(w.channel);
}

void WorkerPool::MarkDown(Worker& w, const std::string& reason) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  const double jitter = std::uniform_real_distribution<double>(0.5, 1.5)(rng);
  const absl::Duration backoff = MarkSlotDown(w, reason, clock_->Now(), jitter);
  if (metrics_) {
    metrics_->SetWorkerUp(w.id, false);
    metrics_->WorkerRestart(w.id, reason);
  }
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
    const bool discover = !options_.discover.empty() && clock_->Now() >= next_discovery_;
    lock.unlock();
    if (discover) Discover();
    Tick();
    lock.lock();
    NotifyChange();
    cv_.wait_for(lock, absl::ToChronoNanoseconds(options_.tick), [&] { return stopping_; });
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
    default:  // none, or a kill Decide carried out
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
  if (w.busy && w.call && w.cancelled && (*w.cancelled)()) w.call->TryCancel();
  const Action action = NextStep(w, clock_->Now(), options_, stopping_);
  if (action == Action::kKillHung) {
    Kill(w, "hang");
  } else if (action == Action::kStartTimedOut) {
    if (w.local) {
      Kill(w, "start_timeout");
    } else {
      MarkDown(w, "unreachable");
    }
  }
  *channel = w.channel;
  return action;
}

void WorkerPool::Describe(Worker& w, const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = v1::GemmWorker::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(RpcDeadlineIn(*clock_, absl::Milliseconds(500)));
  v1::DescribeResponse d;
  const grpc::Status st = stub->Describe(&ctx, v1::DescribeRequest(), &d);
  if (!st.ok()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (w.state != State::kStarting) return;
  MarkSlotUp(w, d.device(), clock_->Now(), options_.heartbeat_interval);
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
  ctx.set_deadline(RpcDeadlineIn(*clock_, absl::Seconds(1)));
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

}  // namespace wavecrest
