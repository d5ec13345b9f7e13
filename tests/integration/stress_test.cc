// Concurrency stress of the real server: many short streams that end while the server is still
// writing them, streams cancelled by the client mid-way, and unary calls beside them. Before the
// stream reactor was made shared (server/stream_reactor.h), a job thread could unlock a reactor
// that gRPC had already deleted on another thread once Finish was issued; this test drives that
// window as hard as a test can. It asserts the server lives, stays healthy, answers every call
// with an expected code, and counts every call in its metrics.
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/integration/process.h"
#include "wavecrest/v1/advisor.grpc.pb.h"

namespace wavecrest {
namespace {

using testing::ServerUnderTest;
using testing::Shell;

// Sum of a counter's samples whose labels contain `label`.
double CounterSum(const std::string& metrics, const std::string& name, const std::string& label) {
  double sum = 0;
  for (absl::string_view line : absl::StrSplit(metrics, '\n')) {
    if (!absl::StartsWith(line, name + "{") || !absl::StrContains(line, label)) continue;
    double v = 0;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) sum += v;
  }
  return sum;
}

v1::TimeGemmsRequest OneGemm(int i) {
  v1::TimeGemmsRequest req;
  req.set_gpu("h100-sxm");
  req.set_mode(v1::MODE_PREDICTED);
  auto* g = req.add_gemms();
  g->set_m(64 + i % 7);
  g->set_n(128);
  g->set_k(256);
  return req;
}

TEST(ServerStressTest, ShortAndCancelledStreamsBesideUnaryCallsLeaveTheServerHealthy) {
  ServerUnderTest server({"--threads=2", "--queue_capacity=1024"});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Advisor::NewStub(channel);

  constexpr int kThreads = 12;
  constexpr int kPerThread = 250;
  std::atomic<int> ok{0}, cancelled{0}, unexpected{0};
  std::mutex mu;
  std::map<std::string, int> unexpected_codes;  // "CODE: message" of each unexpected status
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        grpc::Status st;
        if (t % 3 == 2) {  // unary beside the streams
          v1::AnalyzeRequest req;
          auto* m = req.mutable_model();
          m->set_hidden_size(2048);
          m->set_num_attention_heads(16);
          m->set_num_layers(4);
          m->set_vocab_size(50304);
          req.set_gpu("a100-sxm-80gb");
          v1::AnalyzeResponse resp;
          st = stub->Analyze(&ctx, req, &resp);
        } else {
          auto reader = stub->TimeGemms(&ctx, OneGemm(i));
          v1::TimeGemmsResponse msg;
          const bool cancel = (i + t) % 4 == 0;
          while (reader->Read(&msg)) {
            if (cancel) ctx.TryCancel();
          }
          st = reader->Finish();
        }
        if (st.ok()) {
          ++ok;
        } else if (st.error_code() == grpc::StatusCode::CANCELLED) {
          ++cancelled;
        } else {
          ++unexpected;
          std::lock_guard<std::mutex> lock(mu);
          ++unexpected_codes[absl::StrCat(st.error_code(), ": ", st.error_message())];
        }
      }
    });
  }
  for (auto& th : threads) th.join();

  EXPECT_EQ(unexpected.load(), 0) << [&] {
    std::string all;
    for (const auto& [what, n] : unexpected_codes) absl::StrAppend(&all, n, " × ", what, "\n");
    return all;
  }();
  EXPECT_EQ(ok.load() + cancelled.load(), kThreads * kPerThread);
  EXPECT_GT(ok.load(), 0);
  ASSERT_EQ(server.process().Wait(absl::ZeroDuration()), -1) << "server exited\n" << server.Log();
  EXPECT_TRUE(server.WaitHealth("", "SERVING", absl::Seconds(10)));
  // Every call is counted once the server is done with it (OnDone ran for each stream); the
  // client may see its status a moment before that, so poll with a deadline.
  std::string metrics;
  double counted = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    metrics =
        Shell(absl::StrCat("curl -s http://127.0.0.1:", server.metrics_port(), "/metrics")).second;
    counted = CounterSum(metrics, "wavecrest_requests_total", "method=\"TimeGemms\"") +
              CounterSum(metrics, "wavecrest_requests_total", "method=\"Analyze\"");
    if (counted >= kThreads * kPerThread) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(counted, kThreads * kPerThread) << metrics;
}

}  // namespace
}  // namespace wavecrest
