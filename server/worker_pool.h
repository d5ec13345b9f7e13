// Supervision of GPU workers (wavecrest-worker processes) and routing of measurements to them.
//
// Local workers are child processes the pool starts (fork/exec, killed with the server through
// PR_SET_PDEATHSIG) on private unix sockets; remote workers are addresses it connects to. One
// supervisor thread, every `tick`:
//   - reaps exited children (reason "exit", or "sticky_error" for exit code 3);
//   - brings starting workers up once Describe answers (their device fingerprint gives their kind);
//   - sends heartbeats (grpc.health.v1 Check) to idle workers; `heartbeat_failures` misses in a
//     row and a local worker is killed (reason "heartbeat"), a remote one marked down;
//   - enforces the per-GEMM watchdog on busy workers: no event for `job_timeout` and the worker is
//     killed (reason "hang");
//   - cancels the worker call of a request that was cancelled;
//   - restarts (local) or reconnects (remote) down workers with exponential backoff and jitter.
// A GEMM in flight when its worker died (crash, hang, sticky error) is charged with it; after
// `quarantine_after` such deaths it is quarantined: later requests get FAILED_PRECONDITION for it
// instead of crashing the worker again (server/worker_quarantine.h).
//
// Backoff, quarantine, heartbeats and watchdogs are read on the pool's clock (service/clock.h);
// the bookkeeping they decide is in server/worker_slot.h. The pool's parts: dispatch
// (worker_pool.cc), process supervision (worker_supervisor.cc), DNS discovery
// (worker_discovery.cc).
#ifndef WAVECREST_SERVER_WORKER_POOL_H_
#define WAVECREST_SERVER_WORKER_POOL_H_

#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "server/advisor_service.h"
#include "server/metrics.h"
#include "server/restart_backoff.h"
#include "server/timing_service.h"
#include "server/worker_quarantine.h"
#include "server/worker_slot.h"
#include "service/clock.h"
#include "wavecrest/v1/worker.grpc.pb.h"

namespace wavecrest {

// Why a worker was restarted (the `reason` label of wavecrest_worker_restarts_total).
inline const std::vector<std::string>& RestartReasons() {
  static const std::vector<std::string> r = {"exit",      "sticky_error",  "hang",
                                             "heartbeat", "start_timeout", "unreachable"};
  return r;
}

struct WorkerPoolOptions {
  struct Local {
    std::vector<std::string> argv;  // without --listen (the pool adds it)
    std::string socket_path;
  };
  std::vector<Local> local;
  std::vector<std::string> remote;  // host:port
  // Workers found, not listed: a DNS name and port (a Kubernetes headless Service,
  // "wavecrest-worker.ns.svc:50061") whose addresses are resolved every `discover_every`; each
  // address is a remote worker, added when it appears and retired when it goes. Empty = none.
  std::string discover;
  absl::Duration discover_every = absl::Seconds(10);
  // How `discover` is resolved ("ip:port" strings); null = DNS (getaddrinfo). Tests replace it.
  std::function<absl::StatusOr<std::vector<std::string>>(const std::string&)> resolve;
  absl::Duration job_timeout = absl::Seconds(60);
  absl::Duration tick = absl::Milliseconds(100);
  absl::Duration heartbeat_interval = absl::Milliseconds(500);
  int heartbeat_failures = 3;
  absl::Duration start_timeout = absl::Seconds(30);
  absl::Duration backoff_initial = absl::Milliseconds(200);
  absl::Duration backoff_max = absl::Seconds(30);
  // A worker up this long has its failures forgotten: its next restart is quick again.
  absl::Duration backoff_reset_after = absl::Seconds(60);
  int quarantine_after = 2;
  // A quarantine ends this long after the GEMM's last crash (0 = never), or when an operator
  // clears it (ClearQuarantine).
  absl::Duration quarantine_for = absl::Hours(1);
  // Credentials for remote workers (TLS, with the server's client certificate for mutual TLS);
  // null = insecure. Local workers listen on unix sockets in a 0700 directory.
  std::shared_ptr<grpc::ChannelCredentials> remote_credentials;
};

// The addresses ("ip:port", "[ipv6]:port") a DNS name resolves to, sorted: the pods behind a
// headless Service. `name_port` is NAME:PORT.
absl::StatusOr<std::vector<std::string>> ResolveWorkers(const std::string& name_port);

class WorkerPool final : public GpuWorkers {
 public:
  WorkerPool(WorkerPoolOptions options, Metrics* metrics, Clock* clock = &Clock::Real());
  ~WorkerPool() override;

  // Starts the workers and the supervisor thread.
  void Start();
  // Stops the supervisor and the local workers (SIGTERM, then SIGKILL after 2 s).
  void Stop();
  // Called (from the supervisor thread) whenever the number of up workers changes.
  void OnChange(std::function<void(int up)> callback);
  int UpCount() const;

  // GpuWorkers.
  bool CanMeasure(absl::string_view kind) const override;
  bool MightMeasure(absl::string_view kind) const override;
  std::optional<v1::DeviceFingerprint> Fingerprint(absl::string_view kind) const override;
  std::optional<std::string> KindOfDevice(absl::string_view device_name) const override;
  absl::Status Measure(absl::string_view kind, const std::vector<GemmKey>& keys,
                       const MeasureOptions& options, const MeasureCallback& on_result,
                       const std::function<bool()>& cancelled) override;
  absl::Status MeasureLayers(absl::string_view kind, const std::vector<LayerKey>& keys,
                             const MeasureOptions& options, const LayerMeasureCallback& on_result,
                             const std::function<bool()>& cancelled) override;

  // The admin side of GpuWorkers.
  void AddWorkers(v1::ListDevicesResponse* response, bool internal) const override;

  int64_t ClearQuarantine(absl::string_view kind) override;

 private:
  using State = WorkerState;
  using Worker = WorkerSlot;
  using Action = WorkerAction;

  void Supervise();
  // One supervision round over every worker (TickWorker each).
  void Tick();
  // What a round does with one worker, decided under the lock (NextStep); the RPCs run without it.
  void TickWorker(Worker& w);
  // A retired worker goes down once its job (if any) is over, and stays down; true when retired.
  bool SettleRetired(Worker& w);
  void ReapExited(Worker& w);  // a local worker's child that exited: down, with the reason
  Action Decide(Worker& w, std::shared_ptr<grpc::Channel>* channel);
  void Describe(Worker& w, const std::shared_ptr<grpc::Channel>& channel);  // starting -> up
  void Heartbeat(Worker& w, const std::shared_ptr<grpc::Channel>& channel);
  // Resolves `discover` and adds or retires the workers it names.
  void Discover();
  void Spawn(Worker& w);
  void Connect(Worker& w);
  // The worker is gone: down, metrics, restart scheduled. `reason` is the restart reason.
  void MarkDown(Worker& w, const std::string& reason);
  // A worker with the pool's restart backoff.
  std::unique_ptr<Worker> NewWorker() const;
  void Kill(Worker& w, const std::string& reason);
  void ChargeCrash(const std::string& kind, const std::string& item, const std::string& why);
  void UpdateQuarantineMetric();
  void NotifyChange();
  // The indexes of `names` to send to a worker; quarantined ones are answered FAILED_PRECONDITION
  // through `on_result`.
  template <typename OnResult>
  std::vector<size_t> RefuseQuarantined(absl::string_view kind,
                                        const std::vector<std::string>& names,
                                        const OnResult& on_result);
  // A job's events from `reader` to `on_result` (`todo` maps their indexes to the caller's),
  // keeping `w`'s item in flight; returns the worker's last per-item error.
  template <typename Event, typename Reader, typename OnResult>
  std::string ReadEvents(Worker& w, Reader& reader, const std::vector<std::string>& names,
                         const std::vector<size_t>& todo, const OnResult& on_result);
  // A free, up worker of `kind` marked busy (waiting while all are busy), or null and why not.
  Worker* AcquireWorker(absl::string_view kind, const MeasureOptions& options,
                        const std::function<bool()>& cancelled, absl::Status* why_not);
  // One measuring job on a worker: items named `names` (GEMM or layer key strings, for the
  // quarantine and messages); quarantined ones are refused, the rest added to `request` with
  // `add_item` and streamed through `call`; each result or error goes to `on_result`. A worker
  // that dies under the job charges the item in flight (see the class comment).
  template <typename Event, typename Request, typename AddItem, typename Call, typename OnResult>
  absl::Status RunJob(absl::string_view kind, const std::vector<std::string>& names,
                      const MeasureOptions& options, Request* request, const AddItem& add_item,
                      const Call& call, const OnResult& on_result,
                      const std::function<bool()>& cancelled);
  // The end of a job: the worker freed, and the job's status (a dead worker charged and named).
  absl::Status FinishJob(Worker& w, const std::string& kind, const grpc::Status& st,
                         const MeasureOptions& options, const std::string& last_error,
                         const std::function<bool()>& cancelled);

  WorkerPoolOptions options_;
  Metrics* metrics_;
  Clock* clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // a worker became free or changed state
  std::vector<std::unique_ptr<Worker>> workers_;
  WorkerQuarantine quarantine_;
  std::function<void(int)> on_change_;
  int last_up_ = -1;
  bool stopping_ = false;
  absl::Time next_discovery_ = absl::InfinitePast();
  std::thread supervisor_;
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_WORKER_POOL_H_
