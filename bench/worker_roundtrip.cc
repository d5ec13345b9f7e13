// Latency of the measuring path, end to end, against a running wavecrest-server with a worker:
// TimeGemms of GEMMs the cache has never seen (server -> worker -> server, per GEMM), the same
// request answered from the measurement store, and a Recommend whose measuring stage goes through the
// worker. With an emulating (analytic) worker the device time is microseconds, so what this
// measures is wavecrest's own overhead around a measurement. Prints medians and p90 over --repeat.
//
//   worker_roundtrip --server 127.0.0.1:50051 --gpu h100-sxm --repeat 20
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/advisor_client.h"
#include "service/spec_io.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "Advisor address");
ABSL_FLAG(std::string, gpu, "h100-sxm", "GPU kind of the worker");
ABSL_FLAG(int, repeat, 20, "Requests per case");
ABSL_FLAG(int, gemms, 100, "GEMMs per TimeGemms request");
ABSL_FLAG(std::string, model, "examples/models/pythia-2.8b.json", "Model for the Recommend case");

namespace {

struct Stats {
  double p50 = 0, p90 = 0;
};
Stats Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 9 / 10)]};
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  using namespace wavecrest;
  AdvisorClient client(absl::GetFlag(FLAGS_server), absl::Seconds(120));
  const int repeat = absl::GetFlag(FLAGS_repeat), n = absl::GetFlag(FLAGS_gemms);
  auto request = [&](int base) {
    v1::TimeGemmsRequest r;
    r.set_gpu(absl::GetFlag(FLAGS_gpu));
    r.set_mode(v1::MODE_MEASURED);
    for (int i = 0; i < n; ++i) {
      v1::GemmShape* g = r.add_gemms();
      g->set_m(64 * (base + i + 1));
      g->set_n(4096);
      g->set_k(4096);
    }
    return r;
  };
  auto time_request = [&](const v1::TimeGemmsRequest& r, int64_t* from_cache) -> double {
    const absl::Time t0 = absl::Now();
    int64_t cached = 0, results = 0;
    absl::Status st = client.TimeGemms(r, [&](const v1::TimeGemmsResponse& m) {
      if (!m.has_timing()) return;
      ++results;
      cached += m.timing().provenance().from_cache();
    });
    const double s = absl::ToDoubleSeconds(absl::Now() - t0);
    if (!st.ok() || results != r.gemms_size()) {
      std::fprintf(stderr, "worker_roundtrip: %s (%lld results)\n", st.ToString().c_str(),
                   static_cast<long long>(results));
      std::exit(1);
    }
    if (from_cache) *from_cache += cached;
    return s;
  };

  std::vector<double> miss, hit, rec;
  int64_t miss_cached = 0, hit_cached = 0;
  for (int i = 0; i < repeat; ++i) {
    miss.push_back(time_request(request(1000 + i * n), &miss_cached));  // never seen before
  }
  const v1::TimeGemmsRequest fixed = request(0);
  time_request(fixed, nullptr);  // fills the cache
  for (int i = 0; i < repeat; ++i) hit.push_back(time_request(fixed, &hit_cached));

  absl::StatusOr<v1::ModelSpec> spec = LoadModelFile(absl::GetFlag(FLAGS_model));
  if (!spec.ok()) {
    std::fprintf(stderr, "worker_roundtrip: %s\n", spec.status().ToString().c_str());
    return 2;
  }
  v1::RecommendRequest rr;
  *rr.mutable_model() = *spec;
  rr.mutable_model()->set_attention(v1::ATTENTION_UNFUSED);
  rr.set_gpu(absl::GetFlag(FLAGS_gpu));
  rr.set_mode(v1::MODE_AUTO);
  int64_t rec_gemms = 0;
  for (int i = 0; i < repeat; ++i) {
    const absl::Time t0 = absl::Now();
    v1::RecommendResponse final;
    absl::Status st = client.Recommend(rr, [&](const v1::RecommendResponse& m) {
      if (m.done()) final = m;
    });
    if (!st.ok()) {
      std::fprintf(stderr, "worker_roundtrip: recommend: %s\n", st.ToString().c_str());
      return 1;
    }
    rec.push_back(absl::ToDoubleSeconds(absl::Now() - t0));
    if (i == 0) rec_gemms = final.gemms_measured() + final.gemms_cached() + final.gemms_predicted();
  }
  const Stats m = Summarize(miss), h = Summarize(hit), r = Summarize(rec);
  std::printf("%-44s %10s %10s %14s\n", "case", "p50", "p90", "per GEMM (p50)");
  std::printf("%-44s %8.2fms %8.2fms %12.1fus\n",
              absl::StrFormat("TimeGemms, %d new GEMMs (worker round trip)", n).c_str(),
              m.p50 * 1e3, m.p90 * 1e3, m.p50 / n * 1e6);
  std::printf("%-44s %8.2fms %8.2fms %12.1fus\n",
              absl::StrFormat("TimeGemms, %d GEMMs from the measurement store", n).c_str(), h.p50 * 1e3,
              h.p90 * 1e3, h.p50 / n * 1e6);
  std::printf("%-44s %8.2fms %8.2fms\n", "Recommend (AUTO, measuring stage via worker)",
              r.p50 * 1e3, r.p90 * 1e3);
  std::printf(
      "repeats %d; cache answers: %lld of %lld in the first case, %lld of %lld in the "
      "second; the first Recommend timed %lld GEMMs\n",
      repeat, static_cast<long long>(miss_cached), static_cast<long long>(repeat) * n,
      static_cast<long long>(hit_cached), static_cast<long long>(repeat) * n,
      static_cast<long long>(rec_gemms));
  return 0;
}
