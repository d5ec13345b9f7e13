// Every streaming RPC's logic, in process, as the transport runs it: accept (or plan) the request,
// then stream it with a CallContext whose Measurer is a fake GPU. Each shows the flow (progress,
// results, the answer, where its times came from) and that the call keeps to its deadline and
// stops when cancelled.
#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/recommend_logic.h"
#include "service/sweep_logic.h"
#include "service/timing_logic.h"
#include "tests/fakes/fake_measurer.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

v1::ModelSpec SmallModel() {
  v1::ModelSpec m;
  m.set_hidden_size(2048);
  m.set_num_attention_heads(16);
  m.set_num_layers(8);
  m.set_vocab_size(32000);
  m.set_seq_length(1024);
  return m;
}

// A stream's messages and progress, as a client would see them.
template <typename Response>
struct Stream {
  std::vector<Response> messages;
  std::vector<v1::Progress> progress;
  Send<Response> send() {
    return [this](Response r) { messages.push_back(std::move(r)); };
  }
  // The call's deadline and budget are read on the fake GPU's clock.
  CallContext Context(FakeMeasurer* m) {
    CallContext ctx;
    ctx.clock = &m->clock;
    ctx.measurer = m;
    ctx.progress = [this](const v1::Progress& p) { progress.push_back(p); };
    return ctx;
  }
};

// A context that reports cancelled once `after` progress messages went out.
template <typename Response>
CallContext CancelAfter(Stream<Response>& s, FakeMeasurer* m, size_t after) {
  CallContext ctx = s.Context(m);
  ctx.cancelled = [&s, after] { return s.messages.size() + s.progress.size() >= after; };
  return ctx;
}

TEST(CallFlowTest, TimeGemmsStreamsEveryDistinctGemmWithItsUses) {
  FakeMeasurer gpu;
  v1::TimeGemmsRequest request;
  request.set_gpu(FakeMeasurer::kDevice);  // a worker's device name resolves to its kind
  *request.mutable_model() = SmallModel();
  absl::StatusOr<TimeGemmsPlan> plan = AcceptTimeGemms(request, gpu);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->task.kind, "h100-sxm");
  Stream<v1::TimeGemmsResponse> s;
  absl::StatusOr<MeasureCounts> counts = StreamTimeGemms(*plan, s.Context(&gpu), s.send());
  ASSERT_TRUE(counts.ok()) << counts.status();
  const size_t n = plan->task.gemms.size();
  ASSERT_GT(n, 4u);
  EXPECT_EQ(counts->measured, static_cast<int64_t>(n));
  EXPECT_EQ(gpu.gemms_asked().size(), n);
  // First a progress message announcing the work, then timings with progress between.
  ASSERT_TRUE(s.messages.front().has_progress());
  EXPECT_EQ(s.messages.front().progress().total(), static_cast<int64_t>(n));
  std::vector<bool> seen(n, false);
  for (const v1::TimeGemmsResponse& m : s.messages) {
    if (!m.has_timing()) continue;
    ASSERT_LT(static_cast<size_t>(m.timing().index()), n);
    seen[m.timing().index()] = true;
    EXPECT_GT(m.timing().used_by_size(), 0) << m.timing().index();
    EXPECT_EQ(m.timing().provenance().source(), v1::SOURCE_MEASURED);
  }
  EXPECT_THAT(seen, ::testing::Each(true));
}

TEST(CallFlowTest, TimeGemmsKeepsToTheDeadlineAndStopsWhenCancelled) {
  FakeMeasurer gpu;
  gpu.per_unit = absl::Milliseconds(30);
  v1::TimeGemmsRequest request;
  request.set_gpu("h100-sxm");
  *request.mutable_model() = SmallModel();
  const TimeGemmsPlan plan = *AcceptTimeGemms(request, gpu);

  Stream<v1::TimeGemmsResponse> late;
  CallContext ctx = late.Context(&gpu);
  ctx.deadline = gpu.clock.Now() + absl::Milliseconds(50);
  EXPECT_EQ(StreamTimeGemms(plan, ctx, late.send()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  // It stopped at the deadline: two GEMMs (30 ms each) fit in 50 ms, the third starts past it.
  EXPECT_EQ(gpu.gemms_asked().size(), 2u);
  EXPECT_LT(gpu.gemms_asked().size(), plan.task.gemms.size());

  Stream<v1::TimeGemmsResponse> cancelled;
  EXPECT_EQ(
      StreamTimeGemms(plan, CancelAfter(cancelled, &gpu, 3), cancelled.send()).status().code(),
      absl::StatusCode::kCancelled);
  EXPECT_LT(gpu.gemms_asked().size(), plan.task.gemms.size());
}

TEST(CallFlowTest, TimeGemmsRefusesBeforeAnyWork) {
  FakeMeasurer gpu;
  v1::TimeGemmsRequest request;
  request.set_gpu("h100-sxm");
  absl::StatusOr<TimeGemmsPlan> none = AcceptTimeGemms(request, gpu);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("gemms"));
  // More GPU time than one request may hold: refused, naming the field.
  v1::GemmShape* g = request.add_gemms();
  g->set_m(65536);
  g->set_n(65536);
  g->set_k(65536);
  g->set_batch(64);
  absl::StatusOr<TimeGemmsPlan> huge = AcceptTimeGemms(request, gpu);
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(huge.status().message()), HasSubstr("GPU time"));
  EXPECT_TRUE(gpu.gemms_asked().empty());
}

TEST(CallFlowTest, TimeLayersStreamsLayersAndTheirNotes) {
  FakeMeasurer gpu;
  v1::TimeLayersRequest request;
  request.set_gpu("h100-sxm");
  *request.mutable_model() = SmallModel();
  absl::StatusOr<LayerTask> task = AcceptTimeLayers(request, gpu);
  ASSERT_TRUE(task.ok()) << task.status();
  Stream<v1::TimeLayersResponse> s;
  CallContext ctx = s.Context(&gpu);
  absl::StatusOr<MeasureCounts> counts = StreamTimeLayers(*task, ctx, s.send());
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->measured, static_cast<int64_t>(task->layers.size()));
  int timings = 0;
  for (const auto& m : s.messages) timings += m.has_timing();
  EXPECT_EQ(timings, static_cast<int>(task->layers.size()));

  // Past the measuring budget the rest is predicted, and a note says so.
  LayerTask spent = *task;
  spent.measure_by = gpu.clock.Now() - absl::Seconds(1);
  Stream<v1::TimeLayersResponse> s2;
  counts = StreamTimeLayers(spent, s2.Context(&gpu), s2.send());
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->measured, 0);
  ASSERT_TRUE(s2.messages.back().notes_size() > 0);
  EXPECT_THAT(s2.messages.back().notes(0), HasSubstr("budget"));
}

// A model whose layers differ answers each kind with how many of its layers run it; a MoE
// layer's routing is part of its key and a bad one is refused naming the field.
TEST(CallFlowTest, TimeLayersAnswersEachKindOfLayerWithItsCount) {
  FakeMeasurer gpu;
  v1::TimeLayersRequest request;
  request.set_gpu("h100-sxm");
  v1::ModelSpec m = SmallModel();
  m.set_sliding_window(256);
  m.set_sliding_window_layers(6);  // 6 local, 2 global
  m.set_num_experts(8);
  m.set_experts_per_token(2);
  m.set_first_dense_layers(2);  // 6 MoE, 2 dense
  *request.mutable_model() = m;
  request.set_routing("zipf:1.2");
  absl::StatusOr<LayerTask> task = AcceptTimeLayers(request, gpu);
  ASSERT_TRUE(task.ok()) << task.status();
  Stream<v1::TimeLayersResponse> s;
  ASSERT_TRUE(StreamTimeLayers(*task, s.Context(&gpu), s.send()).ok());
  std::map<std::string, int64_t> layers_of_role;
  int64_t whole = 0;
  for (const auto& msg : s.messages) {
    if (!msg.has_timing()) continue;
    const v1::LayerTiming& t = msg.timing();
    EXPECT_GT(t.model_layers(), 0) << t.key();
    if (t.shape().kind() != v1::LAYER_KIND_TRANSFORMER) continue;
    whole += t.model_layers();
    layers_of_role[t.role()] += t.model_layers();
    if (t.shape().layer().num_experts() > 0) {
      EXPECT_EQ(t.shape().routing(), "zipf1.2");
      EXPECT_THAT(t.key(), HasSubstr("moe8x2 zipf1.2"));
    }
  }
  EXPECT_EQ(whole, 8);
  // 6 local of 8 spread over 6 MoE and 2 dense layers: round(6·6/8) = 5 local MoE.
  EXPECT_EQ(layers_of_role["MoE local"], 5);
  EXPECT_EQ(layers_of_role["MoE global"], 1);
  EXPECT_EQ(layers_of_role["dense local"], 1);
  EXPECT_EQ(layers_of_role["dense global"], 1);

  request.set_routing("counts:1,2,3");
  absl::StatusOr<LayerTask> bad = AcceptTimeLayers(request, gpu);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("routing"));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("3 counts for a layer of 8 experts"));
}

TEST(CallFlowTest, TimeLayersKeepsToTheDeadline) {
  FakeMeasurer gpu;
  v1::TimeLayersRequest request;
  request.set_gpu("h100-sxm");
  *request.mutable_model() = SmallModel();
  const LayerTask task = *AcceptTimeLayers(request, gpu);
  Stream<v1::TimeLayersResponse> s;
  CallContext ctx = s.Context(&gpu);
  ctx.deadline = gpu.clock.Now() - absl::Milliseconds(1);
  EXPECT_EQ(StreamTimeLayers(task, ctx, s.send()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  Stream<v1::TimeLayersResponse> c;
  EXPECT_EQ(StreamTimeLayers(task, CancelAfter(c, &gpu, 1), c.send()).status().code(),
            absl::StatusCode::kCancelled);
}

v1::RecommendRequest SmallRecommend(v1::Mode mode) {
  v1::RecommendRequest r;
  r.set_gpu(FakeMeasurer::kDevice);
  r.set_mode(mode);
  *r.mutable_model() = SmallModel();
  r.set_measure_top_k(2);
  r.set_top(3);
  return r;
}

TEST(CallFlowTest, RecommendMeasuresTheBestAndAnswersLast) {
  FakeMeasurer gpu;
  absl::StatusOr<v1::RecommendRequest> accepted =
      AcceptRecommend(SmallRecommend(v1::MODE_MEASURED));
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  Stream<v1::RecommendResponse> s;
  absl::StatusOr<MeasureCounts> counts = StreamRecommend(*accepted, s.Context(&gpu), s.send());
  ASSERT_TRUE(counts.ok()) << counts.status();
  ASSERT_EQ(s.messages.size(), 1u);  // the answer; progress went through the context
  const v1::RecommendResponse& r = s.messages.back();
  EXPECT_TRUE(r.done());
  EXPECT_EQ(r.gpu(), "h100-sxm");  // answered with the catalog name, not the device's
  EXPECT_GT(counts->measured, 0);
  EXPECT_EQ(counts->measured, r.gemms_measured());
  EXPECT_EQ(r.gemms_measured(), static_cast<int64_t>(gpu.gemms_asked().size()));
  EXPECT_EQ(r.candidates(0).source(), v1::SOURCE_MEASURED);
  std::vector<std::string> what;
  for (const v1::Progress& p : s.progress) what.push_back(p.message());
  EXPECT_THAT(absl::StrJoin(what, "|"), HasSubstr("measuring"));
  EXPECT_EQ(s.progress.back().message(), "done");
}

TEST(CallFlowTest, RecommendKeepsToTheDeadlineAndStopsWhenCancelled) {
  FakeMeasurer gpu;
  Stream<v1::RecommendResponse> late;
  CallContext ctx = late.Context(&gpu);
  ctx.deadline = gpu.clock.Now() - absl::Milliseconds(1);
  EXPECT_EQ(StreamRecommend(SmallRecommend(v1::MODE_AUTO), ctx, late.send()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(late.messages.empty());

  Stream<v1::RecommendResponse> c;
  EXPECT_EQ(StreamRecommend(SmallRecommend(v1::MODE_AUTO), CancelAfter(c, &gpu, 2), c.send())
                .status()
                .code(),
            absl::StatusCode::kCancelled);
  EXPECT_TRUE(c.messages.empty());
}

// The measuring budget ends before the deadline: a slow GPU leaves the rest predicted, and the
// call still answers in time.
TEST(CallFlowTest, RecommendAnswersBeforeItsDeadlineThroughASlowGpu) {
  FakeMeasurer gpu;
  gpu.per_unit = absl::Milliseconds(200);
  Stream<v1::RecommendResponse> s;
  CallContext ctx = s.Context(&gpu);
  ctx.deadline = gpu.clock.Now() + absl::Seconds(2);
  absl::StatusOr<MeasureCounts> counts =
      StreamRecommend(SmallRecommend(v1::MODE_MEASURED), ctx, s.send());
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_LE(gpu.clock.Now(), ctx.deadline);
  EXPECT_GT(counts->predicted, 0);
  EXPECT_THAT(absl::StrJoin(s.messages.back().notes(), "\n"), HasSubstr("budget spent"));
}

// A GPU 20% faster than the model, measured in part (the budget ends after some GEMMs): the GEMMs
// left predicted are scaled by the measured/predicted ratio beside them, so every measured row
// times as it would had the budget covered all, and a note says so.
TEST(CallFlowTest, RecommendScalesTheGemmsTheBudgetLeftPredicted) {
  auto run = [](int64_t limit, size_t* planned) {
    FakeMeasurer gpu;
    gpu.gemm_factor = 0.8;
    gpu.layers_measurable = false;
    gpu.measure_limit = limit;
    Stream<v1::RecommendResponse> s;
    absl::StatusOr<MeasureCounts> counts =
        StreamRecommend(SmallRecommend(v1::MODE_AUTO), s.Context(&gpu), s.send());
    EXPECT_TRUE(counts.ok()) << counts.status();
    if (planned != nullptr) *planned = gpu.gemms_asked().size();
    return s.messages.back();
  };
  size_t planned = 0;
  const v1::RecommendResponse all = run(-1, &planned);
  ASSERT_GT(planned, 8u);
  const v1::RecommendResponse part = run(static_cast<int64_t>(planned) - 4, nullptr);
  EXPECT_EQ(part.gemms_measured(), static_cast<int64_t>(planned) - 4);
  EXPECT_THAT(absl::StrJoin(part.notes(), "\n"),
              HasSubstr("4 GEMMs of the measured rows were not measured; each of their "
                        "predictions is scaled"));
  EXPECT_THAT(absl::StrJoin(part.notes(), "\n"), HasSubstr("median ratio 0.80"));
  ASSERT_EQ(part.candidates_size(), all.candidates_size());
  int compared = 0;
  for (const v1::Candidate& c : part.candidates()) {
    if (c.measured_share() == 0) continue;  // ranked by the model alone
    for (const v1::Candidate& a : all.candidates()) {
      if (a.model().SerializeAsString() != c.model().SerializeAsString()) continue;
      EXPECT_NEAR(c.step_time_s() / a.step_time_s(), 1.0, 1e-9) << c.rank();
      EXPECT_NEAR(c.speedup(), a.speedup(), 1e-9) << c.rank();
      ++compared;
    }
  }
  EXPECT_GE(compared, 2);
}

TEST(CallFlowTest, MeasuredModeWithoutAWorkerIsTheMeasurersError) {
  FakeMeasurer gpu;
  gpu.up = false;
  Stream<v1::RecommendResponse> s;
  absl::StatusOr<MeasureCounts> r =
      StreamRecommend(SmallRecommend(v1::MODE_MEASURED), s.Context(&gpu), s.send());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("fake: no h100-sxm worker"));
  // MODE_AUTO answers, predicted, and says why.
  Stream<v1::RecommendResponse> a;
  ASSERT_TRUE(StreamRecommend(SmallRecommend(v1::MODE_AUTO), a.Context(&gpu), a.send()).ok());
  EXPECT_THAT(absl::StrJoin(a.messages.back().notes(), "\n"),
              HasSubstr("no h100-sxm worker is up: every number is PREDICTED"));
  EXPECT_TRUE(gpu.gemms_asked().empty());
}

TEST(CallFlowTest, RecommendIsRefusedBeforeQueueingWhenItCannotSucceed) {
  v1::RecommendRequest r = SmallRecommend(v1::MODE_AUTO);
  r.clear_gpu();
  EXPECT_THAT(std::string(AcceptRecommend(r).status().message()), HasSubstr("gpu"));
  r = SmallRecommend(v1::MODE_AUTO);
  r.set_top(-1);
  EXPECT_EQ(AcceptRecommend(r).status().code(), absl::StatusCode::kInvalidArgument);
  r = SmallRecommend(v1::MODE_AUTO);
  r.clear_model();
  r.set_hf_config_json(
      R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 1024, "num_attention_heads": 16,
      "num_hidden_layers": 4, "vocab_size": 32000, "intermediate_size": 2816,
      "max_position_embeddings": 2048})");
  absl::StatusOr<v1::RecommendRequest> imported = AcceptRecommend(r);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->model().hidden_size(), 1024);
}

// A sweep of n over a 4096 x n x 4096 BF16 GEMM on the H100, `from` to `to` in steps of 32.
v1::SweepRequest GemmNSweep(v1::Mode mode, int64_t from, int64_t to) {
  v1::SweepRequest request;
  request.set_gpu("h100-sxm");
  request.set_mode(mode);
  request.set_vary(v1::SWEEP_DIMENSION_GEMM_N);
  request.mutable_gemm()->set_m(4096);
  request.mutable_gemm()->set_n(4096);
  request.mutable_gemm()->set_k(4096);
  request.set_from(from);
  request.set_to(to);
  request.set_step(32);
  return request;
}

TEST(CallFlowTest, SweepMeasuresItsPointsAndKeepsToTheDeadline) {
  FakeMeasurer gpu;
  absl::StatusOr<v1::SweepRequest> accepted =
      AcceptSweep(GemmNSweep(v1::MODE_MEASURED, 4032, 4160));
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  Stream<v1::SweepResponse> s;
  absl::StatusOr<MeasureCounts> counts = StreamSweep(*accepted, s.Context(&gpu), s.send());
  ASSERT_TRUE(counts.ok()) << counts.status();
  ASSERT_EQ(s.messages.size(), 1u);
  EXPECT_TRUE(s.messages[0].done());
  EXPECT_EQ(counts->measured, 5);
  EXPECT_EQ(gpu.gemms_asked().size(), 5u);
  EXPECT_FALSE(s.progress.empty());

  Stream<v1::SweepResponse> late;
  CallContext ctx = late.Context(&gpu);
  ctx.deadline = gpu.clock.Now() - absl::Milliseconds(1);
  EXPECT_EQ(StreamSweep(*accepted, ctx, late.send()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  Stream<v1::SweepResponse> c;
  EXPECT_EQ(StreamSweep(*accepted, CancelAfter(c, &gpu, 1), c.send()).status().code(),
            absl::StatusCode::kCancelled);
}

// A sweep whose budget ends part-way: the points left predicted are scaled by the ratio the
// measured ones showed (a GPU 20% faster than the model), so the curve does not jump there.
TEST(CallFlowTest, SweepScalesThePointsTheBudgetLeftPredicted) {
  FakeMeasurer gpu;
  gpu.gemm_factor = 0.8;
  gpu.measure_limit = 4;
  Stream<v1::SweepResponse> s;
  ASSERT_TRUE(
      StreamSweep(*AcceptSweep(GemmNSweep(v1::MODE_AUTO, 4032, 4288)), s.Context(&gpu), s.send())
          .ok());
  const v1::SweepResponse& r = s.messages.back();
  ASSERT_EQ(r.points_size(), 9);
  int predicted = 0;
  for (const v1::SweepPoint& p : r.points()) {
    const GemmKey key{{4096, static_cast<int64_t>(p.value()), 4096, 1}, Layout::kTN,
                      DType::kBf16};
    EXPECT_NEAR(p.time_s() / PredictGemmTime(**FindGpu("h100-sxm"), key), 0.8, 1e-9) << p.value();
    predicted += p.source() == v1::SOURCE_PREDICTED;
  }
  EXPECT_EQ(predicted, 5);
  EXPECT_EQ(r.gemms_predicted(), 5);
  EXPECT_THAT(absl::StrJoin(r.notes(), "\n"),
              HasSubstr("5 GEMMs of the points were not measured; each of their predictions is "
                        "scaled"));
}

}  // namespace
}  // namespace wavecrest
