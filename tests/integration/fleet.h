// Test helpers for a fleet: a measured timing as a worker would store it, store options for
// fault tests, a slowed remote emulating worker, a TimeGemms request of distinct GEMMs, and the
// PostgreSQL skip.
#ifndef WAVECREST_TESTS_INTEGRATION_FLEET_H_
#define WAVECREST_TESTS_INTEGRATION_FLEET_H_

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/gemm.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "server/measurement_store.h"
#include "service/convert.h"
#include "tests/integration/process.h"
#include "wavecrest/v1/advisor.pb.h"
#include "wavecrest/v1/worker.grpc.pb.h"

#define SKIP_WITHOUT_POSTGRES(pg) \
  if (!(pg).why_not().empty()) GTEST_SKIP() << "no PostgreSQL here: " << (pg).why_not()

namespace wavecrest::testing {

// A MEASURED timing of `key` as a cuBLASLt worker on an H100 would store it.
inline v1::GemmTiming Measured(const GemmKey& key, double seconds) {
  v1::GemmTiming t = TimingOf(key);
  t.set_time_s(seconds);
  t.set_tflops(GemmFlops(key.shape) / seconds / 1e12);
  v1::Provenance* p = t.mutable_provenance();
  p->set_source(v1::SOURCE_MEASURED);
  p->set_method("cublaslt-timing-v2 cold-L2 heuristic");
  p->set_samples(42);
  p->set_relative_spread(0.004);
  p->mutable_measured_at()->set_seconds(1764000000);
  v1::DeviceFingerprint* d = p->mutable_device();
  d->set_name("NVIDIA H100 80GB HBM3");
  d->set_backend("cublaslt");
  d->set_sm_count(132);
  d->set_driver_version("580.159.04");
  d->set_cuda_runtime_version("13.0");
  d->set_cublaslt_version("13.1.0");
  d->set_cudnn_version("91900");
  return t;
}

// Store options quick to notice faults and to recover, as a test needs (the defaults are 2 s
// and 1 s); `spool` as StoreOptions::spool ("none": no spool).
inline StoreOptions Fast(const std::string& spool = "none") {
  StoreOptions o;
  o.op_timeout = absl::Milliseconds(500);
  o.probe_every = absl::Milliseconds(100);
  o.drain_every = absl::Milliseconds(100);
  o.claim_lease = absl::Milliseconds(1500);
  o.spool = spool;
  return o;
}

// The i-th of a run of distinct GEMMs.
inline GemmKey Key(int i) { return {{256 * i, 4096, 4096, 1}, Layout::kTN, DType::kBf16}; }

// Polls `done` every 50 ms until it holds or `timeout` passes.
template <typename Done>
bool WaitFor(Done done, absl::Duration timeout = absl::Seconds(15)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return done();
}

// A remote emulating worker, slowed so that two replicas' requests overlap.
class SlowWorker {
 public:
  explicit SlowWorker(int slow_ms) {
    process_ = std::make_unique<Process>(
        std::vector<std::string>{BinaryPath("gpu_worker/wavecrest-worker"), "--backend=analytic",
                                 "--listen=127.0.0.1:0", "--port_file=" + dir_.File("port.json"),
                                 "--request_log=" + dir_.File("requests.jsonl"), "--fault=slow",
                                 absl::StrCat("--fault_slow_ms=", slow_ms)},
        dir_.File("worker.log"));
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (absl::Now() < deadline && port_ == 0) {
      std::ifstream in(dir_.File("port.json"));
      nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
      if (!j.is_discarded() && j.contains("port")) port_ = j["port"].get<int>();
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  int port() const { return port_; }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  // The GEMMs it was asked to time, one line each.
  std::vector<std::string> Requests() const {
    std::ifstream in(dir_.File("requests.jsonl"));
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) {
      if (!l.empty()) lines.push_back(l);
    }
    return lines;
  }
  // The worker's own count of GEMMs timed (its Describe).
  int64_t GemmsTimed() const {
    auto stub = v1::GemmWorker::NewStub(
        grpc::CreateChannel(address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::DescribeResponse d;
    return stub->Describe(&ctx, v1::DescribeRequest(), &d).ok() ? d.gemms_timed() : -1;
  }

 private:
  TempDir dir_;
  std::unique_ptr<Process> process_;
  int port_ = 0;
};

inline v1::TimeGemmsRequest Gemms(int count) {
  v1::TimeGemmsRequest r;
  r.set_gpu("h100-sxm");
  r.set_mode(v1::MODE_MEASURED);
  for (int i = 1; i <= count; ++i) {
    v1::GemmShape* g = r.add_gemms();
    g->set_m(512 * i);
    g->set_n(4096);
    g->set_k(4096);
  }
  return r;
}

}  // namespace wavecrest::testing

#endif  // WAVECREST_TESTS_INTEGRATION_FLEET_H_
