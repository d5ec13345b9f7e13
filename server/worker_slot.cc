#include "server/worker_slot.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "server/worker_pool.h"
#include "service/log.h"

namespace wavecrest {

WorkerAction NextStep(WorkerSlot& w, absl::Time now, const WorkerPoolOptions& options,
                      bool stopping) {
  if (w.state == WorkerState::kUp) w.backoff.Tick(now);
  if (w.busy && w.call && w.state == WorkerState::kUp && now - w.last_event > options.job_timeout) {
    return WorkerAction::kKillHung;
  }
  if (w.state == WorkerState::kStarting) {
    return now - w.started_at > options.start_timeout ? WorkerAction::kStartTimedOut
                                                      : WorkerAction::kDescribe;
  }
  if (w.state == WorkerState::kUp && now >= w.next_heartbeat && w.kill_reason.empty()) {
    w.next_heartbeat = now + options.heartbeat_interval;
    return WorkerAction::kHeartbeat;
  }
  if (w.state == WorkerState::kDown && !w.busy && w.pid == 0 && now >= w.next_attempt &&
      !stopping) {
    return WorkerAction::kRestart;
  }
  return WorkerAction::kNone;
}

absl::Duration MarkSlotDown(WorkerSlot& w, const std::string& reason, absl::Time now,
                            double jitter) {
  w.state = WorkerState::kDown;
  w.missed_heartbeats = 0;
  if (w.busy) w.died_in_job = true;
  ++w.restarts;
  w.last_reason = reason;
  const absl::Duration backoff = w.backoff.Down(now, jitter);
  w.next_attempt = now + backoff;
  return backoff;
}

void MarkSlotUp(WorkerSlot& w, const v1::DeviceFingerprint& device, absl::Time now,
                absl::Duration heartbeat_interval) {
  w.state = WorkerState::kUp;
  w.started_at = now;
  w.backoff.Up(now);
  w.fingerprint = device;
  w.kind =
      !device.catalog_name().empty() ? device.catalog_name() : absl::AsciiStrToLower(device.name());
  w.missed_heartbeats = 0;
  w.next_heartbeat = now + heartbeat_interval;
}

std::vector<std::string> Rediscover(std::vector<std::unique_ptr<WorkerSlot>>& workers,
                                    const std::set<std::string>& found) {
  for (auto& w : workers) {
    if (!w->discovered) continue;
    const bool present = found.count(w->address) > 0;
    if (present && w->retired) {
      w->retired = false;  // back (a rescheduled pod on the same address): reconnect
      w->next_attempt = absl::InfinitePast();
      LogInfo("worker rediscovered", {{"worker", w->id}});
    } else if (!present && !w->retired) {
      w->retired = true;
      LogInfo("worker gone from discovery: retired", {{"worker", w->id}, {"busy", w->busy}});
    }
  }
  std::vector<std::string> added;
  for (const std::string& address : found) {
    const bool known = std::any_of(workers.begin(), workers.end(),
                                   [&](const auto& w) { return w->address == address; });
    if (!known) added.push_back(address);
  }
  return added;
}

}  // namespace wavecrest
