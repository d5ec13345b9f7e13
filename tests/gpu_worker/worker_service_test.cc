// Unit tests of the worker's gRPC service (gpu_worker/worker_service.h): request validation, and
// the stream of a batch timed together, in process, on a fake backend and a fake clock (no test
// waits: a sampling window passes by advancing the clock).
#include "gpu_worker/worker_service.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gpu_worker/backend.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/interleaving_backend.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

TEST(KeyFromWorkerGemm, ValidatesEachField) {
  v1::WorkerGemm g;
  g.mutable_shape()->set_m(16);
  g.mutable_shape()->set_n(32);
  g.mutable_shape()->set_k(64);
  g.set_layout(v1::LAYOUT_NT);
  g.set_dtype(v1::DTYPE_FP16);
  absl::StatusOr<GemmKey> k = KeyFromWorkerGemm(g, "gemms[0]");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->shape.batch, 1);  // 0 = 1
  EXPECT_EQ(k->layout, Layout::kNT);
  EXPECT_EQ(k->dtype, DType::kFp16);
  g.mutable_shape()->set_n(0);
  EXPECT_THAT(std::string(KeyFromWorkerGemm(g, "gemms[3]").status().message()),
              HasSubstr("gemms[3].shape.n"));
  g.mutable_shape()->set_n(32);
  g.set_layout(static_cast<v1::Layout>(42));
  EXPECT_THAT(std::string(KeyFromWorkerGemm(g, "gemms[0]").status().message()),
              HasSubstr("gemms[0].layout"));
}

struct BatchStream {
  std::vector<v1::GemmWorkerTimeGemmsResponse> events;
  grpc::Status status;
  int broken_calls = 0;
};

// The events of one TimeGemms call of `gemms` GEMMs, in process, on `clock`. A watchdog of
// `watchdog_s` allows a heartbeat every watchdog_s / 4.
BatchStream StreamOfABatch(TimingBackend* backend, FakeClock* clock, int gemms,
                           double watchdog_s = 0.02) {
  BatchStream out;
  auto on_broken = [&] { ++out.broken_calls; };
  WorkerService service(backend, "", on_broken, clock);
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  auto stub = v1::GemmWorker::NewStub(server->InProcessChannel(grpc::ChannelArguments()));
  v1::GemmWorkerTimeGemmsRequest request;
  for (int i = 0; i < gemms; ++i) {
    v1::WorkerGemm* g = request.add_gemms();
    g->mutable_shape()->set_m(64 * (i + 1));
    g->mutable_shape()->set_n(64);
    g->mutable_shape()->set_k(64);
    g->mutable_shape()->set_batch(1);
    g->set_layout(v1::LAYOUT_TN);
    g->set_dtype(v1::DTYPE_BF16);
  }
  request.mutable_options()->set_watchdog_s(watchdog_s);
  grpc::ClientContext ctx;
  auto reader = stub->TimeGemms(&ctx, request);
  v1::GemmWorkerTimeGemmsResponse event;
  while (reader->Read(&event)) out.events.push_back(event);
  out.status = reader->Finish();
  server->Shutdown();
  return out;
}

// Issue 35: a request's GEMMs are timed together. The stream says which item the device works
// on: each item's started once, when the engine first takes it up; heartbeats naming the item
// being sampled; then every result, in order, after all of them were sampled.
// Heartbeats may go out every 5 ms and each sampling window takes 6 ms on the fake clock, so each
// window is announced, with the time since the call began.
TEST(WorkerServiceBatch, StartedOncePerItemHeartbeatsNameTheItemResultsInOrder) {
  FakeClock clock;
  InterleavingBackend backend(&clock);
  const BatchStream s = StreamOfABatch(&backend, &clock, 3);
  ASSERT_TRUE(s.status.ok()) << s.status.error_message();
  std::vector<int> started, results, beat_items;
  std::vector<double> beat_elapsed_s;
  for (const auto& e : s.events) {
    if (e.has_started()) started.push_back(e.index());
    if (e.has_timing()) results.push_back(e.index());
    if (e.has_heartbeat()) {
      beat_items.push_back(e.index());
      beat_elapsed_s.push_back(e.heartbeat().elapsed_s());
      EXPECT_EQ(e.heartbeat().phase(), "sampling");
      EXPECT_TRUE(results.empty()) << "a heartbeat after a result";
    }
    if (e.has_started()) {
      EXPECT_TRUE(results.empty()) << "a start after a result";
    }
  }
  EXPECT_EQ(started, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(results, (std::vector<int>{0, 1, 2}));
  // Three rounds over the three items, one heartbeat per window.
  EXPECT_EQ(beat_items, (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
  ASSERT_EQ(beat_elapsed_s.size(), 9u);
  for (size_t k = 0; k < beat_elapsed_s.size(); ++k) {
    EXPECT_NEAR(beat_elapsed_s[k], 0.006 * static_cast<double>(k + 1), 1e-9) << k;
  }
  EXPECT_EQ(s.events.back().timing().time_s(), 3e-3);
  EXPECT_EQ(s.broken_calls, 0);
}

// A sticky error in the middle of a batch ends the call after the item it came with (INTERNAL,
// so that the server charges that item), and the process is told to go, once.
TEST(WorkerServiceBatch, AStickyErrorEndsTheCallAfterItsItem) {
  FakeClock clock;
  InterleavingBackend backend(&clock, /*sticky=*/1);
  const BatchStream s = StreamOfABatch(&backend, &clock, 3);
  EXPECT_EQ(s.status.error_code(), grpc::StatusCode::INTERNAL);
  std::vector<int> errors;
  for (const auto& e : s.events) {
    EXPECT_FALSE(e.has_timing());
    if (e.has_error()) errors.push_back(e.index());
  }
  // Item 0's UNAVAILABLE, then item 1's INTERNAL ends it: item 2 is never answered.
  EXPECT_EQ(errors, (std::vector<int>{0, 1}));
  EXPECT_EQ(s.broken_calls, 1);
}

// Heartbeats are spaced by a quarter of the watchdog: with 50 ms between them, the nine 6 ms
// windows (54 ms) are announced once, in the window that passes 50 ms (the third item's last).
TEST(WorkerServiceBatch, HeartbeatsComeAtMostOncePerQuarterWatchdog) {
  FakeClock clock;
  InterleavingBackend backend(&clock);
  const BatchStream s = StreamOfABatch(&backend, &clock, 3, /*watchdog_s=*/0.2);
  ASSERT_TRUE(s.status.ok()) << s.status.error_message();
  std::vector<int> beat_items;
  for (const auto& e : s.events) {
    if (e.has_heartbeat()) {
      beat_items.push_back(e.index());
      EXPECT_NEAR(e.heartbeat().elapsed_s(), 0.054, 1e-9);
    }
  }
  EXPECT_EQ(beat_items, (std::vector<int>{2}));
}

}  // namespace
}  // namespace wavecrest
