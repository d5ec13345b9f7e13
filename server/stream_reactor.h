// A server-streaming reactor fed from another thread: the producer Push()es messages and ends with
// Finish(status); the reactor writes them one at a time. OnCancel (client gone, deadline passed)
// raises cancelled(), which the producer polls to stop early. The reactor deletes itself only after
// gRPC's OnDone, which comes after Finish, which comes only from the producer, so the producer
// never touches a deleted reactor.
#ifndef WAVECREST_SERVER_STREAM_REACTOR_H_
#define WAVECREST_SERVER_STREAM_REACTOR_H_

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>

#include "grpcpp/grpcpp.h"

namespace wavecrest {

template <typename Response>
class StreamReactor : public grpc::ServerWriteReactor<Response> {
 public:
  // `on_done` runs once the RPC is over (for metrics), with the final status.
  explicit StreamReactor(std::function<void(const grpc::Status&)> on_done)
      : on_done_(std::move(on_done)) {}

  void Push(Response message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_) return;
    pending_.push_back(std::move(message));
    MaybeWriteLocked();
  }

  // Ends the stream after the pending messages are written (or at once if the stream broke).
  void Finish(grpc::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    final_status_ = std::move(status);
    finishing_ = true;
    MaybeWriteLocked();
  }

  bool cancelled() const { return cancelled_.load(); }

 private:
  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {
      broken_ = true;
      pending_.clear();
    } else {
      pending_.pop_front();
    }
    MaybeWriteLocked();
  }

  void OnCancel() override { cancelled_.store(true); }

  void OnDone() override {
    on_done_(final_status_);
    delete this;
  }

  void MaybeWriteLocked() {
    if (writing_ || finished_) return;
    if (!pending_.empty() && !broken_) {
      writing_ = true;
      this->StartWrite(&pending_.front());
      return;
    }
    if (finishing_) {
      finished_ = true;
      if (broken_ && final_status_.ok()) final_status_ = grpc::Status::CANCELLED;
      this->grpc::ServerWriteReactor<Response>::Finish(final_status_);
    }
  }

  std::function<void(const grpc::Status&)> on_done_;
  std::mutex mu_;
  std::deque<Response> pending_;
  bool writing_ = false;
  bool broken_ = false;
  bool finishing_ = false;
  bool finished_ = false;
  grpc::Status final_status_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_STREAM_REACTOR_H_
