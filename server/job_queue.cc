#include "server/job_queue.h"

namespace wavecrest {

JobQueue::JobQueue(int threads, int capacity, Clock* clock) : capacity_(capacity), clock_(clock) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

JobQueue::~JobQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

bool JobQueue::TrySubmit(std::function<void(absl::Duration)> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || static_cast<int>(queue_.size()) >= capacity_) return false;
    queue_.push_back({std::move(job), clock_->Now()});
  }
  cv_.notify_one();
  return true;
}

int JobQueue::depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(queue_.size());
}

int JobQueue::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

bool JobQueue::WaitIdle(absl::Time deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!queue_.empty() || running_ > 0) {
    if (deadline == absl::InfiniteFuture()) {
      idle_cv_.wait(lock);  // an infinite wait_for would overflow into a busy loop
      continue;
    }
    const absl::Duration left = deadline - clock_->Now();
    if (left <= absl::ZeroDuration()) return false;
    idle_cv_.wait_for(lock, absl::ToChronoNanoseconds(left));
  }
  return true;
}

void JobQueue::Loop() {
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      item = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    item.fn(clock_->Now() - item.enqueued);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
    }
    idle_cv_.notify_all();
  }
}

}  // namespace wavecrest
