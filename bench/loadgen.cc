// Load generator for wavecrest-server: N Analyze requests at concurrency C, each with a deadline,
// optionally beside R clients that stream Recommend (AUTO) calls for the same model.
// Prints p50/p90/p99/max latency and error counts by code, per RPC.
//
//   loadgen --server 127.0.0.1:50051 --requests 20000 --concurrency 32 --deadline_ms 1000
//     --model examples/models/llama-2-7b.json --gpu h100-sxm [--recommend_clients 32]
#include <algorithm>
#include <memory>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/synchronization/mutex.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "service/spec_io.h"
#include "wavecrest/v1/advisor.grpc.pb.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "Advisor address");
ABSL_FLAG(int, requests, 10000, "Requests in all");
ABSL_FLAG(int, concurrency, 32, "Requests in flight at once (one thread each)");
ABSL_FLAG(int, channels, 4, "gRPC channels shared round-robin by the threads");
ABSL_FLAG(int, deadline_ms, 1000, "Deadline of each request");
ABSL_FLAG(std::string, model, "examples/models/llama-2-7b.json", "Model spec to analyze");
ABSL_FLAG(std::string, gpu, "h100-sxm", "GPU to analyze for");
ABSL_FLAG(int, warmup, 200, "Requests sent first and not counted");
ABSL_FLAG(int, recommend_clients, 0,
          "Clients that send Recommend (mode AUTO) streams, one after another, while the Analyze "
          "requests run");
ABSL_FLAG(int, recommend_deadline_ms, 5000, "Deadline of each Recommend call");
ABSL_FLAG(std::string, client_api, "async",
          "How the Analyze load is sent: async (completion queues, --client_threads threads each "
          "keeping its share of --concurrency calls in flight, as gRPC's own QPS benchmark "
          "client does) or sync (one blocking thread per call in flight)");
ABSL_FLAG(int, client_threads, 1, "async: threads driving the completion queues");

namespace {

// Latencies and status codes of one RPC kind, merged from the client threads.
struct Tally {
  std::mutex mu;
  std::vector<double> latencies_ms;
  std::map<int, int> codes;

  void Merge(const std::vector<double>& ms, const std::map<int, int>& c) {
    std::lock_guard<std::mutex> lock(mu);
    latencies_ms.insert(latencies_ms.end(), ms.begin(), ms.end());
    for (auto [k, v] : c) codes[k] += v;
  }

  // Prints one block and returns the number of calls that did not end OK.
  int Print(const char* what) {
    std::sort(latencies_ms.begin(), latencies_ms.end());
    if (latencies_ms.empty()) return 0;
    auto pct = [&](double p) {
      return latencies_ms[std::min(
          latencies_ms.size() - 1,
          static_cast<size_t>(p * static_cast<double>(latencies_ms.size())))];
    };
    std::printf("%-10s latency ms  p50 %.3f  p90 %.3f  p99 %.3f  max %.3f  (%zu calls)\n", what,
                pct(0.50), pct(0.90), pct(0.99), latencies_ms.back(), latencies_ms.size());
    int errors = 0;
    for (auto [k, v] : codes) {
      if (k != 0) errors += v;
    }
    std::printf("%-10s errors      %d", what, errors);
    for (auto [k, v] : codes) {
      if (k != 0) std::printf("  code %d: %d", k, v);
    }
    std::printf("\n");
    return errors;
  }
};

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // As the server does (server/main.cc): Debian's Abseil leaves Mutex deadlock detection on.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  auto spec = wavecrest::LoadModelFile(absl::GetFlag(FLAGS_model));
  if (!spec.ok()) {
    std::fprintf(stderr, "loadgen: %s\n", std::string(spec.status().message()).c_str());
    return 2;
  }
  wavecrest::v1::AnalyzeRequest request;
  *request.mutable_model() = *spec;
  request.set_gpu(absl::GetFlag(FLAGS_gpu));
  wavecrest::v1::RecommendRequest recommend;
  *recommend.mutable_model() = *spec;
  recommend.set_gpu(absl::GetFlag(FLAGS_gpu));
  recommend.set_mode(wavecrest::v1::MODE_AUTO);

  const int n = absl::GetFlag(FLAGS_requests);
  const int c = std::max(1, absl::GetFlag(FLAGS_concurrency));
  const auto deadline = std::chrono::milliseconds(absl::GetFlag(FLAGS_deadline_ms));
  const auto recommend_deadline =
      std::chrono::milliseconds(absl::GetFlag(FLAGS_recommend_deadline_ms));
  std::vector<std::unique_ptr<wavecrest::v1::Advisor::Stub>> stubs;
  for (int i = 0; i < std::max(1, absl::GetFlag(FLAGS_channels)); ++i) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.channel_id", i);  // distinct channels, not one shared subchannel
    stubs.push_back(wavecrest::v1::Advisor::NewStub(grpc::CreateCustomChannel(
        absl::GetFlag(FLAGS_server), grpc::InsecureChannelCredentials(), args)));
  }
  auto analyze_once = [&](int i, grpc::StatusCode* code) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    wavecrest::v1::AnalyzeResponse response;
    const absl::Time t0 = absl::Now();
    *code = stubs[i % stubs.size()]->Analyze(&ctx, request, &response).error_code();
    return absl::ToDoubleMilliseconds(absl::Now() - t0);
  };
  auto call_recommend = [&](int i, grpc::StatusCode* code) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + recommend_deadline);
    const absl::Time t0 = absl::Now();
    auto reader = stubs[i % stubs.size()]->Recommend(&ctx, recommend);
    wavecrest::v1::RecommendResponse msg;
    while (reader->Read(&msg)) {
    }
    *code = reader->Finish().error_code();
    return absl::ToDoubleMilliseconds(absl::Now() - t0);
  };
  for (int i = 0; i < absl::GetFlag(FLAGS_warmup); ++i) {
    grpc::StatusCode code;
    analyze_once(i, &code);
  }

  std::atomic<int> next{0};
  std::atomic<bool> analyze_done{false};
  Tally analyze, recommends;
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  const bool async = absl::GetFlag(FLAGS_client_api) == "async";
  if (!async && absl::GetFlag(FLAGS_client_api) != "sync") {
    std::fprintf(stderr, "loadgen: --client_api: \"%s\"; allowed: async, sync\n",
                 absl::GetFlag(FLAGS_client_api).c_str());
    return 2;
  }
  const int drivers = async ? std::clamp(absl::GetFlag(FLAGS_client_threads), 1, c) : 0;
  for (int t = 0; t < drivers; ++t) {
    // Thread t keeps calls t, t + drivers, ... of the c in flight on its own completion queue.
    threads.emplace_back([&, t] {
      struct Call {
        grpc::ClientContext ctx;
        wavecrest::v1::AnalyzeResponse response;
        grpc::Status status;
        std::unique_ptr<grpc::ClientAsyncResponseReader<wavecrest::v1::AnalyzeResponse>> reader;
        absl::Time t0;
      };
      grpc::CompletionQueue cq;
      std::vector<double> mine;
      std::map<int, int> my_codes;
      int slot = t;
      auto start_one = [&]() {
        if (next.fetch_add(1) >= n) return false;
        auto* call = new Call;
        call->ctx.set_deadline(std::chrono::system_clock::now() + deadline);
        call->t0 = absl::Now();
        call->reader = stubs[slot++ % stubs.size()]->AsyncAnalyze(&call->ctx, request, &cq);
        call->reader->Finish(&call->response, &call->status, call);
        return true;
      };
      int in_flight = 0;
      for (int k = t; k < c; k += drivers) in_flight += start_one() ? 1 : 0;
      void* tag;
      bool ok;
      while (in_flight > 0 && cq.Next(&tag, &ok)) {
        std::unique_ptr<Call> done(static_cast<Call*>(tag));
        mine.push_back(absl::ToDoubleMilliseconds(absl::Now() - done->t0));
        ++my_codes[static_cast<int>(done->status.error_code())];
        --in_flight;
        done.reset();
        in_flight += start_one() ? 1 : 0;
      }
      analyze.Merge(mine, my_codes);
    });
  }
  for (int t = 0; t < (async ? 0 : c); ++t) {
    threads.emplace_back([&, t] {
      std::vector<double> mine;
      std::map<int, int> my_codes;
      while (next.fetch_add(1) < n) {
        grpc::StatusCode code;
        mine.push_back(analyze_once(t, &code));
        ++my_codes[static_cast<int>(code)];
      }
      analyze.Merge(mine, my_codes);
    });
  }
  std::vector<std::thread> recommenders;
  for (int t = 0; t < absl::GetFlag(FLAGS_recommend_clients); ++t) {
    recommenders.emplace_back([&, t] {
      std::vector<double> mine;
      std::map<int, int> my_codes;
      while (!analyze_done.load()) {
        grpc::StatusCode code;
        mine.push_back(call_recommend(t, &code));
        ++my_codes[static_cast<int>(code)];
      }
      recommends.Merge(mine, my_codes);
    });
  }
  for (auto& th : threads) th.join();
  const double wall_s = absl::ToDoubleSeconds(absl::Now() - start);
  analyze_done.store(true);
  for (auto& th : recommenders) th.join();
  std::printf("Analyze %s on %s: %d requests, concurrency %d, %d channels, deadline %d ms, %s",
              absl::GetFlag(FLAGS_model).c_str(), absl::GetFlag(FLAGS_gpu).c_str(), n, c,
              static_cast<int>(stubs.size()), absl::GetFlag(FLAGS_deadline_ms),
              async ? absl::StrFormat("async client (%d threads)", drivers).c_str()
                    : "sync client (a thread per call)");
  if (absl::GetFlag(FLAGS_recommend_clients) > 0) {
    std::printf("; beside %d Recommend (AUTO) clients, deadline %d ms",
                absl::GetFlag(FLAGS_recommend_clients), absl::GetFlag(FLAGS_recommend_deadline_ms));
  }
  std::printf("\nthroughput  %.0f Analyze requests/s over %.2f s\n", n / wall_s, wall_s);
  const int errors = analyze.Print("Analyze") + recommends.Print("Recommend");
  return errors == 0 ? 0 : 1;
}
