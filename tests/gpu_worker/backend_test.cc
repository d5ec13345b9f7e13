// Unit tests of the worker's parts that need no GPU: request validation, timing options, CSV and
// model input of bench mode, fault plans, and the analytic backend.
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/cost_model.h"
#include "core/layer_emulation.h"
#include "core/layer_program.h"
#include "gmock/gmock.h"
#include "gpu_worker/backend.h"
#include "gpu_worker/bench.h"
#include "gpu_worker/clock_sampler.h"
#include "gpu_worker/faults.h"
#include "gpu_worker/worker_service.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

TEST(ParseGemmCsv, ReadsShapesWithDefaultsAndSkipsHeaderAndComments) {
  absl::StatusOr<std::vector<BenchGemm>> g = ParseGemmCsv(
      "m,n,k,batch,layout\n# comment\n\n8192, 8192, 8192\n4096,1537,4096,1,nn\n"
      "2048,2048,128,64,NT\n",
      DType::kFp16);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->size(), 3u);
  EXPECT_EQ((*g)[0].key.shape, (GemmShape{8192, 8192, 8192, 1}));
  EXPECT_EQ((*g)[0].key.layout, Layout::kTN);
  EXPECT_EQ((*g)[0].key.dtype, DType::kFp16);
  EXPECT_EQ((*g)[1].key.layout, Layout::kNN);
  EXPECT_EQ((*g)[2].key.shape.batch, 64);
  EXPECT_EQ((*g)[2].key.layout, Layout::kNT);
}

TEST(ParseGemmCsv, ErrorsNameTheLine) {
  for (const char* bad :
       {"1,2\n", "1,2,3,4,5,6\n", "1,0,3\n", "1,x,3\n", "1,2,3,1,TT\n", "1,2,3000000000\n"}) {
    absl::StatusOr<std::vector<BenchGemm>> g =
        ParseGemmCsv(absl::StrCat("m,n,k\n", bad), DType::kBf16);
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(g.status().message()), HasSubstr("line 2")) << bad;
  }
  EXPECT_FALSE(ParseGemmCsv("# nothing\n", DType::kBf16).ok());
}

// bench --samples_log records each stream; replay runs the stopping rule over it on any host.
TEST(SamplesLog, RecordedStreamsReplayUnderTheStoppingRule) {
  // A quiet stream that the spread rule stops at 10 samples, and one with a 15% slow sample in
  // three that only the median criterion stops.
  std::vector<double> quiet(60, 1e-3), lumpy;
  for (int i = 0; i < 400; ++i) lumpy.push_back(i % 3 ? 1e-3 * (1 + 1e-4 * (i % 7)) : 1.15e-3);
  StoppingRule four_launches;
  four_launches.sample_scale = 4;
  const std::string log =
      SamplesLogLine("bf16 TN 4096x4096x4096 b1", quiet, four_launches, 0.06,
                     "spread at most 1.00% ...") +
      SamplesLogLine("bf16 TN 4096x50257x4096 b1", lumpy, StoppingRule(), 0.4,
                     "sample cap (400) reached");
  TimingParams params;
  absl::StatusOr<std::string> table = ReplaySamplesLog(log, params);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(*table, ::testing::ContainsRegex("4096x4096x4096 b1 +60 spread +10 spread"));
  EXPECT_THAT(*table, ::testing::ContainsRegex("4096x50257x4096 b1 +400 sample +[0-9]+ median"));
  // The recorded rule is the one replayed: a long launch's minimum of sampled time (the engine's
  // cold 300 ms before issue 35) keeps the quiet stream going past 10 samples (60 x 1 ms x 4
  // launches = 240 ms).
  StoppingRule long_launch = four_launches;
  long_launch.min_sampled_s = 0.3;
  table = ReplaySamplesLog(
      SamplesLogLine("bf16 TN 8192x8192x8192 b1", quiet, long_launch, 0.06, "budget"), params);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(*table, ::testing::ContainsRegex("8192x8192x8192 b1 +60 budget +60 -"));
  // Lines that are not records are refused, naming the line.
  absl::StatusOr<std::string> bad = ReplaySamplesLog(log + "{\"key\": 1}\n", params);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("line 3"));
}

TEST(ParseFaultPlan, AcceptsTheKindsAndRejectsTheRest) {
  for (const char* k : {"crash", "hang", "sticky", "oom", "slow"}) {
    EXPECT_TRUE(ParseFaultPlan(k, "", 0, 10).ok()) << k;
  }
  absl::StatusOr<FaultPlan> p = ParseFaultPlan("crash", "1x2x3", 4, 10);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->shape->m, 1);
  EXPECT_EQ(p->shape->k, 3);
  EXPECT_EQ(p->after, 4);
  EXPECT_THAT(std::string(ParseFaultPlan("explode", "", 0, 1).status().message()),
              HasSubstr("--fault"));
  EXPECT_THAT(std::string(ParseFaultPlan("hang", "1x2", 0, 1).status().message()),
              HasSubstr("--fault_shape"));
  EXPECT_FALSE(ParseFaultPlan("slow", "", -1, 1).ok());
}

TEST(FaultyBackend, OomAndStickyOnlyOnTheChosenShapeAfterN) {
  auto inner = MakeAnalyticBackend("h100-sxm");
  ASSERT_TRUE(inner.ok());
  absl::StatusOr<FaultPlan> plan = ParseFaultPlan("sticky", "64x64x64", 1, 0);
  ASSERT_TRUE(plan.ok());
  std::unique_ptr<TimingBackend> b = WithFaults(std::move(*inner), *plan);
  const GemmKey hit{{64, 64, 64, 1}, Layout::kTN, DType::kBf16};
  const GemmKey other{{128, 64, 64, 1}, Layout::kTN, DType::kBf16};
  EXPECT_TRUE(b->Time(hit, {}).ok());  // the first GEMM is spared (after = 1)
  EXPECT_TRUE(b->Time(other, {}).ok());
  EXPECT_FALSE(b->Broken());
  absl::StatusOr<v1::GemmTiming> t = b->Time(hit, {});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(b->Broken());
}

TEST(ParamsFromProto, DefaultsAndRanges) {
  absl::StatusOr<TimingParams> p = ParamsFromProto(v1::TimingOptions());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->top_k, 8);
  EXPECT_DOUBLE_EQ(p->target_spread, 0.01);
  EXPECT_DOUBLE_EQ(p->max_seconds, 2.0);
  EXPECT_FALSE(p->warm_l2);
  v1::TimingOptions o;
  o.set_autotune_top_k(65);
  EXPECT_THAT(std::string(ParamsFromProto(o).status().message()), HasSubstr("autotune_top_k"));
  o = {};
  o.set_target_relative_spread(-0.1);
  EXPECT_THAT(std::string(ParamsFromProto(o).status().message()),
              HasSubstr("target_relative_spread"));
  o = {};
  o.set_max_seconds_per_gemm(1e9);
  EXPECT_THAT(std::string(ParamsFromProto(o).status().message()), HasSubstr("max_seconds"));
}

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

TEST(AnalyticBackend, PredictsLabelsAndChecksDtypeAndMemory) {
  auto b = MakeAnalyticBackend("a100-sxm-80gb");
  ASSERT_TRUE(b.ok());
  const v1::DeviceFingerprint fp = (*b)->Fingerprint();
  EXPECT_EQ(fp.backend(), "analytic");
  EXPECT_EQ(fp.catalog_name(), "a100-sxm-80gb");
  EXPECT_THAT(fp.name(), HasSubstr("emulated"));
  const GemmKey key{{4096, 4096, 4096, 1}, Layout::kNN, DType::kBf16};
  absl::StatusOr<v1::GemmTiming> t = (*b)->Time(key, {});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->provenance().source(), v1::SOURCE_PREDICTED);
  EXPECT_EQ(t->provenance().method(), TimingMethod("analytic", false, false));
  EXPECT_EQ(t->layout(), v1::LAYOUT_NN);
  EXPECT_GT(t->time_s(), 0);
  // A100 has no FP8 tensor cores.
  EXPECT_EQ((*b)->Time({{64, 64, 64, 1}, Layout::kTN, DType::kFp8E4M3}, {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // 3 × 2^34 elements of BF16 do not fit in 80 GB.
  EXPECT_EQ((*b)->Time({{int64_t{1} << 17, int64_t{1} << 17, int64_t{1} << 17, 1},
                        Layout::kTN,
                        DType::kBf16},
                       {})
                .status()
                .code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(MakeAnalyticBackend("h900").status().code(), absl::StatusCode::kNotFound);
}

// The emulating worker refuses what the cuBLASLt engine would (core/gemm_plan.h), so that CI sees
// the GPU worker's answers: FP8 backward layouts run (as TN on transposed copies), FP8 dimensions
// off the 16-byte rule and GEMMs longer than the watchdog allows are refused with the reason.
TEST(AnalyticBackend, RefusesWhatTheGpuEngineWouldRefuse) {
  auto b = MakeAnalyticBackend("h100-sxm");
  ASSERT_TRUE(b.ok()) << b.status();
  TimingParams params;
  EXPECT_TRUE((*b)->Time({{4096, 4096, 4096, 1}, Layout::kNN, DType::kFp8E4M3}, params).ok());
  absl::StatusOr<v1::GemmTiming> odd =
      (*b)->Time({{4096, 4096, 4100, 1}, Layout::kTN, DType::kFp8E4M3}, params);
  EXPECT_EQ(odd.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(odd.status().message()), HasSubstr("not a multiple of 16"));
  params.watchdog_s = 1;
  absl::StatusOr<v1::GemmTiming> slow =
      (*b)->Time({{40000, 40000, 40000, 1}, Layout::kTN, DType::kFp32}, params);
  EXPECT_EQ(slow.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(slow.status().message()), HasSubstr("watchdog"));
  params.watchdog_s = 0;
  EXPECT_TRUE((*b)->Time({{40000, 40000, 40000, 1}, Layout::kTN, DType::kFp32}, params).ok());
}

// NVML is optional: without it (or without its entry points) the sampler says why and the engine
// falls back to its clock probe.
TEST(AnalyticBackend, TimesLayersAsTheirProgramAndRefusesWhatCannotFit) {
  auto b = MakeAnalyticBackend("h100-sxm");
  ASSERT_TRUE(b.ok());
  ModelSpec m;
  m.hidden_size = 4096;
  m.num_attention_heads = 32;
  m.num_layers = 32;
  m.vocab_size = 50304;
  m.attention = Attention::kUnfused;
  auto key = MakeLayerKey(LayerKind::kUnfusedAttention, *NormalizeSpec(m));
  ASSERT_TRUE(key.ok());
  TimingParams params;
  absl::StatusOr<v1::LayerTiming> t = (*b)->TimeLayer(*key, params);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->provenance().source(), v1::SOURCE_PREDICTED);
  EXPECT_EQ(t->provenance().method(),
            absl::StrCat(kCostModelName, " emulated layer program cold-L2"));
  // The program priced kernel by kernel, beside the planner's sum of parts.
  const GpuSpec& h100 = **FindGpu("h100-sxm");
  EXPECT_DOUBLE_EQ(t->time_s(), EmulateLayerProgram(h100, *key, *PlanLayerProgram(*key)).time_s);
  EXPECT_DOUBLE_EQ(t->predicted_program_s(), t->time_s());
  EXPECT_DOUBLE_EQ(t->predicted_sum_s(), PredictLayer(h100, *key).time_s);
  EXPECT_GT(t->predicted_elementwise_s(), 0);  // the softmax
  EXPECT_TRUE(t->sum_of_parts_reason().empty());
  EXPECT_EQ(t->key(), LayerKeyString(*key));
  // Unfused attention at s = 65536 holds b·a·s² scores: far beyond 80 GB.
  m.seq_length = 65536;
  key = MakeLayerKey(LayerKind::kUnfusedAttention, *NormalizeSpec(m));
  ASSERT_TRUE(key.ok());
  EXPECT_GT(PlanLayerProgram(*key)->bytes, int64_t{80} << 30);
  t = (*b)->TimeLayer(*key, params);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(t.status().message(), ::testing::HasSubstr("MiB of device memory"));
  // FP8 on an A100: refused as the GPU engine would.
  auto a100 = MakeAnalyticBackend("a100-sxm4-80gb");
  m.seq_length = 2048;
  m.dtype = DType::kFp8E4M3;
  key = MakeLayerKey(LayerKind::kTransformerLayer, *NormalizeSpec(m));
  EXPECT_EQ((*a100)->TimeLayer(*key, params).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // A mixture of experts runs whole: its program, grouped experts included; slower than the
  // planner's batched experts under a skewed routing.
  m.dtype = DType::kBf16;
  m.num_experts = 8;
  m.experts_per_token = 2;
  const ModelSpec moe = *NormalizeSpec(m);
  key = MakeLayerKey(LayerKind::kTransformerLayer, moe, DefaultRole(moe), MoeRouting{1.5, {}});
  t = (*b)->TimeLayer(*key, params);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->key(), ::testing::HasSubstr("moe8x2 zipf1.5"));
  EXPECT_GT(t->time_s(), t->predicted_sum_s());
}

TEST(ClockSampler, OpensOnlyARealNvmlAndSaysWhyNot) {
  std::string why;
  EXPECT_EQ(ClockSampler::Open("0000:00:00.0", &why, "libwavecrest-no-such-nvml.so"), nullptr);
  EXPECT_THAT(why, HasSubstr("libwavecrest-no-such-nvml.so"));
  EXPECT_EQ(ClockSampler::Open("0000:00:00.0", &why, "libm.so.6"), nullptr);
  EXPECT_THAT(why, HasSubstr("entry points"));
  EXPECT_EQ(MedianMhz({}), 0);
  EXPECT_EQ(MedianMhz({1980, 1755, 1980, 1410, 1980}), 1980);
}

TEST(CublasLtBackend, WithoutAGpuFailsWithAClearMessage) {
  std::string why;
  if (!ListCudaDevices(&why).empty()) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_FALSE(why.empty());
  absl::StatusOr<std::unique_ptr<TimingBackend>> b = MakeCublasLtBackend(0);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(b.status().message()), HasSubstr("--backend=analytic"));
}

}  // namespace
}  // namespace wavecrest

namespace wavecrest {
namespace {

// Each sample gets the last NVML reading taken at or before its end (the clock it ran at), so
// that a clock that steps while sampling is seen per sample (core/sample_policies.h).
TEST(ClockPerSample, EachSampleTakesTheLastReadingBeforeItsEnd) {
  const std::vector<ClockReading> readings = {{100, 1980}, {200, 1980}, {300, 1485}, {400, 1485}};
  EXPECT_THAT(ClockPerSample(readings, {50, 150, 250, 300, 350, 900}),
              ::testing::ElementsAre(1980, 1980, 1980, 1485, 1485, 1485));
  EXPECT_THAT(ClockPerSample({}, {1, 2}), ::testing::ElementsAre(0, 0));
  const int64_t first = SteadyNowNs();
  EXPECT_LE(first, SteadyNowNs());  // steady
}

// A backend that works on a batch as the cuBLASLt engine does: each item announced while it is
// prepared, then every item again in each of three sampling rounds, then the results. Item
// `sticky` (if any) breaks the context in the second round.
class InterleavingBackend final : public TimingBackend {
 public:
  explicit InterleavingBackend(int sticky = -1) : sticky_(sticky) {}
  v1::DeviceFingerprint Fingerprint() const override { return {}; }
  int64_t FreeMemoryBytes() override { return 0; }
  bool Broken() const override { return broken_; }
  absl::StatusOr<v1::GemmTiming> Time(const GemmKey&, const TimingParams&) override {
    return absl::UnimplementedError("batches only");
  }
  std::vector<absl::StatusOr<v1::GemmTiming>> TimeTogether(
      const std::vector<GemmKey>& keys, const TimingParams& params, const OnItem& on_item,
      const OnDone<v1::GemmTiming>& /*on_done: all answers come back at the end*/) override {
    std::vector<absl::StatusOr<v1::GemmTiming>> out;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!on_item(i)) return Cancelled(keys.size());
    }
    for (int round = 0; round < 3; ++round) {
      for (size_t i = 0; i < keys.size(); ++i) {
        if (!on_item(i)) return Cancelled(keys.size());
        std::this_thread::sleep_for(std::chrono::milliseconds(6));
        params.heartbeat("sampling");
        if (round == 1 && static_cast<int>(i) == sticky_) broken_ = true;
      }
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      if (broken_) {
        out.push_back(static_cast<int>(i) == sticky_
                          ? absl::Status(absl::InternalError("an illegal address"))
                          : absl::Status(absl::UnavailableError("context unusable")));
        continue;
      }
      v1::GemmTiming t;
      t.set_time_s(1e-3 * static_cast<double>(i + 1));
      out.push_back(t);
    }
    return out;
  }

 private:
  static std::vector<absl::StatusOr<v1::GemmTiming>> Cancelled(size_t n) {
    return std::vector<absl::StatusOr<v1::GemmTiming>>(n, absl::CancelledError("stopped"));
  }
  int sticky_;
  bool broken_ = false;
};

struct BatchStream {
  std::vector<v1::GemmWorkerTimeGemmsResponse> events;
  grpc::Status status;
  int broken_calls = 0;
};

BatchStream StreamOfABatch(TimingBackend* backend, int gemms) {
  BatchStream out;
  WorkerService service(backend, "", [&] { ++out.broken_calls; });
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
  request.mutable_options()->set_watchdog_s(0.02);  // heartbeats at most every 5 ms
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
TEST(WorkerServiceBatch, StartedOncePerItemHeartbeatsNameTheItemResultsInOrder) {
  InterleavingBackend backend;
  const BatchStream s = StreamOfABatch(&backend, 3);
  ASSERT_TRUE(s.status.ok()) << s.status.error_message();
  std::vector<int> started, results, beat_items;
  for (const auto& e : s.events) {
    if (e.has_started()) started.push_back(e.index());
    if (e.has_timing()) results.push_back(e.index());
    if (e.has_heartbeat()) {
      beat_items.push_back(e.index());
      EXPECT_TRUE(results.empty()) << "a heartbeat after a result";
    }
    if (e.has_started()) {
      EXPECT_TRUE(results.empty()) << "a start after a result";
    }
  }
  EXPECT_EQ(started, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(results, (std::vector<int>{0, 1, 2}));
  EXPECT_FALSE(beat_items.empty());
  for (int i : beat_items) EXPECT_TRUE(i >= 0 && i < 3) << i;
  EXPECT_EQ(s.events.back().timing().time_s(), 3e-3);
  EXPECT_EQ(s.broken_calls, 0);
}

// A sticky error in the middle of a batch ends the call after the item it came with (INTERNAL,
// so that the server charges that item), and the process is told to go, once.
TEST(WorkerServiceBatch, AStickyErrorEndsTheCallAfterItsItem) {
  InterleavingBackend backend(/*sticky=*/1);
  const BatchStream s = StreamOfABatch(&backend, 3);
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

}  // namespace
}  // namespace wavecrest
