// One GPU worker as the pool (server/worker_pool.h) keeps it, and the pool's bookkeeping
// decisions about it, apart from processes and RPCs so that tests step them on a fake clock:
// what a supervision round does with a worker now (describe, heartbeat, restart once its backoff
// has passed, kill it as hung or as too slow to start), and what going down or coming up does to
// its restart backoff and heartbeats. Discovery's bookkeeping too: which discovered workers are
// retired, back, or new.
#ifndef WAVECREST_SERVER_WORKER_SLOT_H_
#define WAVECREST_SERVER_WORKER_SLOT_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/restart_backoff.h"
#include "wavecrest/v1/worker.grpc.pb.h"

namespace wavecrest {

struct WorkerPoolOptions;

enum class WorkerState { kDown, kStarting, kUp };

struct WorkerSlot {
  std::string id;
  std::string address;
  bool local = false;
  std::vector<std::string> argv;
  std::string socket_path;
  WorkerState state = WorkerState::kDown;
  pid_t pid = 0;
  absl::Time next_attempt = absl::InfinitePast();
  absl::Time started_at;
  RestartBackoff backoff{absl::ZeroDuration(), absl::ZeroDuration(), absl::ZeroDuration()};
  int64_t restarts = 0;
  std::string last_reason;
  std::string kill_reason;  // set when the pool killed it, reported when it is reaped
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::GemmWorker::Stub> stub;
  std::optional<v1::DeviceFingerprint> fingerprint;
  std::string kind;
  absl::Time next_heartbeat = absl::InfinitePast();
  int missed_heartbeats = 0;
  // The job running on it, if any.
  bool busy = false;
  grpc::ClientContext* call = nullptr;
  const std::function<bool()>* cancelled = nullptr;
  absl::Time last_event;
  std::optional<std::string> in_flight;  // the GEMM's or layer's key string
  bool died_in_job = false;              // the worker died (or was killed) while `call` ran
  bool discovered = false;               // found through `discover`
  bool retired = false;  // discovered, and gone from the name since: never reconnected
};

// What a supervision round does with a worker.
enum class WorkerAction {
  kNone,
  kDescribe,      // starting: ask Describe (up once it answers)
  kHeartbeat,     // up and idle long enough: a health check
  kRestart,       // down, and its backoff has passed: start (local) or reconnect (remote) it
  kKillHung,      // busy with no event for job_timeout
  kStartTimedOut  // starting for longer than start_timeout
};

// The action for `w` at `now`. While it is up, its backoff forgets its failures once it has been
// up for backoff_reset_after; a heartbeat decided moves its next heartbeat on.
WorkerAction NextStep(WorkerSlot& w, absl::Time now, const WorkerPoolOptions& options,
                      bool stopping);

// `w` went down at `now` for `reason`: its restart is due after its backoff (times `jitter`, in
// [0.5, 1.5)), which is returned; a job running on it is marked as died under it.
absl::Duration MarkSlotDown(WorkerSlot& w, const std::string& reason, absl::Time now,
                            double jitter);

// `w` answered Describe at `now` with `device`: up, its kind known, heartbeats due from now.
void MarkSlotUp(WorkerSlot& w, const v1::DeviceFingerprint& device, absl::Time now,
                absl::Duration heartbeat_interval);

// Discovery found `found` (addresses): discovered workers gone from it are retired, retired ones
// back in it are reconnected at once; returns the addresses of `found` no worker has (new ones).
std::vector<std::string> Rediscover(std::vector<std::unique_ptr<WorkerSlot>>& workers,
                                    const std::set<std::string>& found);

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_WORKER_SLOT_H_
