// The messages a streaming call holds for a client that reads slower than the server produces:
// a bounded queue in which progress messages supersede each other.
//
// Every result must reach the client, in order; a progress message only says how far the work
// is, so only the newest one matters. A producer that sends progress after each result (the
// timing service does) would otherwise queue one progress message per result and double the
// backlog. So at most one progress message waits here: a newer one takes the place of the one
// still waiting when nothing came after it, and otherwise empties it (unless its write has
// started) and goes to the back, behind the results it follows.
// Beyond `max` messages the client is not reading at all: Push says so and keeps only the
// message being written.
//
// Not thread-safe: StreamReactor calls it under its mutex.
#ifndef WAVECREST_SERVER_PENDING_MESSAGES_H_
#define WAVECREST_SERVER_PENDING_MESSAGES_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <utility>

namespace wavecrest {

template <typename Message>
class PendingMessages {
 public:
  PendingMessages(size_t max, std::function<bool(const Message&)> is_progress)
      : max_(max), is_progress_(std::move(is_progress)) {}

  // Queues `m`. `front_in_flight`: the front message's write has started; it stays where it is.
  // Returns false when the queue was full: everything but an in-flight front is dropped.
  // References to the front stay valid across Push (its write reads it): nothing is erased from
  // the middle of the deque, a superseded message is only emptied in place.
  bool Push(Message m, bool front_in_flight) {
    const bool progress = is_progress_ && is_progress_(m);
    if (progress && progress_at_ >= 0) {
      const size_t at = static_cast<size_t>(progress_at_ - popped_);
      if (at + 1 == queue_.size() && !(at == 0 && front_in_flight)) {
        *queue_.back() = std::move(m);  // the newest message: replace it where it is
        ++superseded_;
        return true;
      }
      if (!(at == 0 && front_in_flight)) {
        queue_[at].reset();
        --live_;
        ++superseded_;
        DropEmptyFront();
      }
      progress_at_ = -1;
    }
    if (live_ >= max_) {
      while (queue_.size() > (front_in_flight ? 1u : 0u)) queue_.pop_back();
      live_ = queue_.size();
      progress_at_ = -1;
      return false;
    }
    queue_.emplace_back(std::move(m));
    ++live_;
    if (progress) progress_at_ = popped_ + static_cast<int64_t>(queue_.size()) - 1;
    return true;
  }

  // The next message to write; only when !empty(). Never an emptied one.
  Message& front() { return *queue_.front(); }
  void pop_front() {
    PopOne();
    --live_;
    DropEmptyFront();
  }
  void clear() {
    while (!queue_.empty()) PopOne();
    live_ = 0;
  }
  bool empty() const { return live_ == 0; }
  size_t size() const { return live_; }
  // Progress messages a newer one replaced.
  int64_t superseded() const { return superseded_; }

 private:
  void PopOne() {
    if (progress_at_ == popped_) progress_at_ = -1;
    queue_.pop_front();
    ++popped_;
  }
  void DropEmptyFront() {
    while (!queue_.empty() && !queue_.front().has_value()) PopOne();
  }

  size_t max_;
  std::function<bool(const Message&)> is_progress_;
  // Emptied entries are superseded progress messages; the front is never one. There are at
  // most as many of them as results behind them, so memory stays within twice `max_`.
  std::deque<std::optional<Message>> queue_;
  size_t live_ = 0;
  // The waiting progress message is at index progress_at_ - popped_ (-1: none waits). Only the
  // front is popped and only the back is pushed, so that index stays true.
  int64_t popped_ = 0;
  int64_t progress_at_ = -1;
  int64_t superseded_ = 0;
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_PENDING_MESSAGES_H_
