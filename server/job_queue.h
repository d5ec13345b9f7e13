// A bounded job queue served by a fixed set of threads. A full queue refuses work at once (the
// server answers RESOURCE_EXHAUSTED with a retry hint) instead of queueing without bound. A job's
// time in the queue is read on the queue's clock (the wall clock unless a test gives its own).
#ifndef WAVECREST_SERVER_JOB_QUEUE_H_
#define WAVECREST_SERVER_JOB_QUEUE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "service/clock.h"

namespace wavecrest {

class JobQueue {
 public:
  // `threads` run jobs; at most `capacity` jobs wait (running ones not counted).
  JobQueue(int threads, int capacity, Clock* clock = &Clock::Real());
  ~JobQueue();  // runs every queued job, then joins
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  // False when `capacity` jobs are already waiting (the job is not taken).
  bool TrySubmit(std::function<void(absl::Duration queue_wait)> job);

  int depth() const;
  int running() const;
  int capacity() const { return capacity_; }

  // Blocks until no job waits or runs, or `deadline` (on the queue's clock); true when idle.
  bool WaitIdle(absl::Time deadline);

 private:
  struct Item {
    std::function<void(absl::Duration)> fn;
    absl::Time enqueued;
  };
  void Loop();

  const int capacity_;
  Clock* clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Item> queue_;
  int running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_JOB_QUEUE_H_
