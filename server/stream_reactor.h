// A server-streaming reactor fed from another thread: the producer Push()es messages and ends with
// Finish(status); the reactor writes them one at a time, each serialized as it goes out (the
// Advisor's methods are raw: server/request_gate.h). OnCancel (client gone, deadline passed)
// raises cancelled(), which the producer polls to stop early.
//
// Lifetime: the reactor is shared. gRPC's side holds one reference until OnDone; every producer
// (the handler and the job it queues) holds its own through the shared_ptr that Create() returns.
// So a producer may still touch the reactor after gRPC is done with it, and gRPC may finish the
// call on another thread at any moment after Finish without freeing memory a producer still uses.
// gRPC operations (StartWrite, Finish) are decided under the mutex and issued after it is
// released: OnDone may run on another thread as soon as Finish is issued, and nothing here touches
// the reactor's state after issuing an operation.
#ifndef WAVECREST_SERVER_STREAM_REACTOR_H_
#define WAVECREST_SERVER_STREAM_REACTOR_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "server/pending_messages.h"

namespace wavecrest {

template <typename Response>
class StreamReactor : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  // `on_done` runs once the RPC is over (for metrics), with the final status. Hand `get()` to
  // gRPC and keep the shared_ptr for as long as this side pushes.
  // `is_progress` marks messages a newer one supersedes: at most one progress message waits
  // (PendingMessages), so a slow reader gets every result and the latest progress, not a backlog.
  static std::shared_ptr<StreamReactor> Create(
      std::function<void(const grpc::Status&)> on_done,
      std::function<bool(const Response&)> is_progress = nullptr) {
    std::shared_ptr<StreamReactor> r(new StreamReactor(std::move(on_done), std::move(is_progress)));
    r->self_ = r;
    return r;
  }

  // Messages a stream buffers for a client that does not read; beyond it the stream ends with
  // RESOURCE_EXHAUSTED and the producer sees cancelled().
  // (Twice the largest request's results, 4096 GEMMs. Before progress superseded progress
  // wherever it waited, a request's 4096 results and 4097 progress messages could reach it when
  // the writer lagged by two messages: the cause found for a hint-less RESOURCE_EXHAUSTED in a
  // loaded CI run.)
  static constexpr size_t kMaxPending = 8192;

  void Push(Response message) {
    Action next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (broken_ || finishing_ || overflowed_) return;
      if (!pending_.Push(std::move(message), writing_)) {
        overflowed_ = true;
        cancelled_.store(true);
        return;
      }
      next = NextLocked();
    }
    Issue(next);
  }

  // Ends the stream after the pending messages are written (or at once if the stream broke).
  // Calls after the first are ignored.
  void Finish(grpc::Status status) {
    Action next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finishing_) return;
      final_status_ = std::move(status);
      finishing_ = true;
      next = NextLocked();
    }
    Issue(next);
  }

  bool cancelled() const { return cancelled_.load(); }

 private:
  StreamReactor(std::function<void(const grpc::Status&)> on_done,
                std::function<bool(const Response&)> is_progress)
      : on_done_(std::move(on_done)), pending_(kMaxPending, std::move(is_progress)) {}

  // What to ask of gRPC once the mutex is released.
  struct Action {
    const Response* write = nullptr;  // StartWrite this message
    bool finish = false;              // Finish with finish_status
    grpc::Status finish_status;
  };

  void OnWriteDone(bool ok) override {
    Action next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      if (!ok) {
        broken_ = true;
        pending_.clear();
      } else {
        pending_.pop_front();
      }
      next = NextLocked();
    }
    Issue(next);
  }

  void OnCancel() override { cancelled_.store(true); }

  void OnDone() override {
    on_done_(final_status_);
    // The last reference may be this one: release it as the very last thing.
    std::shared_ptr<StreamReactor> last = std::move(self_);
  }

  Action NextLocked() {
    Action a;
    if (writing_ || finished_) return a;
    if (!pending_.empty() && !broken_) {
      writing_ = true;
      // The front element stays put until its OnWriteDone pops it (deque::push_back keeps
      // references to existing elements valid).
      a.write = &pending_.front();
      return a;
    }
    if (finishing_) {
      finished_ = true;
      if (broken_ && final_status_.ok()) final_status_ = grpc::Status::CANCELLED;
      if (overflowed_) {
        final_status_ =
            grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                         "the client did not read this stream's messages; it was ended");
      }
      a.finish = true;
      a.finish_status = final_status_;
    }
    return a;
  }

  void Issue(const Action& a) {
    if (a.write != nullptr) {
      // One write at a time: the buffer is free until this write's OnWriteDone.
      bool own_buffer = false;
      out_.Clear();
      (void)grpc::SerializationTraits<Response>::Serialize(*a.write, &out_, &own_buffer);
      this->StartWrite(&out_);
    } else if (a.finish) {
      this->grpc::ServerWriteReactor<grpc::ByteBuffer>::Finish(a.finish_status);
    }
  }

  std::function<void(const grpc::Status&)> on_done_;
  std::shared_ptr<StreamReactor> self_;  // gRPC's reference, dropped in OnDone
  std::mutex mu_;
  PendingMessages<Response> pending_;
  bool writing_ = false;
  bool broken_ = false;
  bool finishing_ = false;
  bool finished_ = false;
  bool overflowed_ = false;
  grpc::Status final_status_;
  std::atomic<bool> cancelled_{false};
  grpc::ByteBuffer out_;  // the message being written
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_STREAM_REACTOR_H_
