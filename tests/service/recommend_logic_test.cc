// Recommend's measuring stage with whole-layer measurements, through a fake measurer (the GPU's
// part): which layers it asks for, and how a measured layer changes a candidate's step.
#include <optional>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/analysis.h"
#include "core/layers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/convert.h"
#include "service/recommend_logic.h"
#include "tests/fakes/fake_measurer.h"
#include "tests/service/recommend_answers.h"

namespace wavecrest {
namespace {

using testing::Baseline;
using ::testing::HasSubstr;

v1::RecommendRequest Request() {
  v1::RecommendRequest r;
  r.set_gpu("h100-sxm");
  r.set_mode(v1::MODE_MEASURED);
  v1::ModelSpec* m = r.mutable_model();
  m->set_hidden_size(2560);
  m->set_num_attention_heads(32);
  m->set_num_layers(32);
  m->set_vocab_size(50304);
  m->set_seq_length(2048);
  r.set_measure_top_k(3);
  r.set_top(4);
  return r;
}

// A measurer whose GEMM "measurements" are the predictions and whose layers run `layer_factor`
// times their predicted sum of parts (the baseline's layer `base_factor` times).
struct FakeGpu {
  double layer_factor = 1.0;
  double base_factor = 1.0;
  LayerKey base_layer;
  FakeMeasurer measurer;

  FakeGpu() {
    std::vector<FieldViolation> v;
    base_layer = *MakeLayerKey(LayerKind::kTransformerLayer,
                               *NormalizeSpec(FromProto(Request().model(), &v)));
    measurer.layer_factor = [this](const LayerKey& k) {
      return k == base_layer ? base_factor : layer_factor;
    };
  }
  std::vector<LayerKey> asked() const { return measurer.layers_asked(); }
  CallContext Context() {
    CallContext ctx;
    ctx.measurer = &measurer;
    return ctx;
  }
};

// Layers measured at exactly their sum of parts leave every step as the GEMM sum made it; the
// measured share is reported and each chosen candidate's whole layer was asked for once.
TEST(RecommendLayersTest, LayersAtTheirSumOfPartsChangeNothingButTheLabel) {
  FakeGpu gpu;
  absl::StatusOr<v1::RecommendResponse> with = RunRecommend(Request(), gpu.Context());
  ASSERT_TRUE(with.ok()) << with.status();
  const std::vector<LayerKey> asked = gpu.asked();
  EXPECT_EQ(with->layers_measured(), static_cast<int64_t>(asked.size()));
  ASSERT_GE(asked.size(), 2u);
  for (size_t i = 0; i < asked.size(); ++i) {
    for (size_t j = 0; j < i; ++j) EXPECT_FALSE(asked[i] == asked[j]);
  }
  FakeGpu no_layers;  // a worker that cannot time layers: they come back predicted
  no_layers.measurer.layers_measurable = false;
  absl::StatusOr<v1::RecommendResponse> without = RunRecommend(Request(), no_layers.Context());
  ASSERT_TRUE(without.ok());
  const v1::Candidate& b1 = Baseline(*with);
  const v1::Candidate& b0 = Baseline(*without);
  EXPECT_NEAR(b1.step_time_s(), b0.step_time_s(), 1e-9 * b0.step_time_s());
  EXPECT_GT(b1.layer_measured_share(), 0.8);  // logits and loss are the rest
  EXPECT_EQ(b0.layer_measured_share(), 0);
  EXPECT_THAT(absl::StrJoin(with->notes(), "\n"), HasSubstr("whole transformer layer measured"));
}

// A baseline whose layer runs 20% slower whole than its parts predict loses its place: the
// measured layer, not the GEMM sum, sets its step.
TEST(RecommendLayersTest, AMeasuredLayerSetsTheStep) {
  FakeGpu gpu;
  gpu.base_factor = 1.2;
  absl::StatusOr<v1::RecommendResponse> r = RunRecommend(Request(), gpu.Context());
  ASSERT_TRUE(r.ok()) << r.status();
  const v1::Candidate& base = Baseline(*r);
  const GpuSpec& h100 = **FindGpu("h100-sxm");
  std::vector<FieldViolation> v;
  const ModelSpec spec = *NormalizeSpec(FromProto(Request().model(), &v));
  const Analysis a = *Analyze(spec, h100);
  double logits = 0;
  for (const GemmAnalysis& g : a.gemms) {
    if (g.gemm.name == kLogits) logits += PredictGemmTime(h100, g.gemm.key()) * g.gemm.count;
  }
  const double expected =
      32 * 1.2 * PredictLayer(h100, gpu.base_layer).time_s + logits + a.elementwise.loss_time_s;
  EXPECT_NEAR(base.step_time_s(), expected, 1e-9 * expected);
  EXPECT_EQ(base.source(), v1::SOURCE_MEASURED);
  // Every measured non-baseline candidate now beats it by about 1.2×.
  ASSERT_GT(r->candidates_size(), 1);
  EXPECT_FALSE(r->candidates(0).baseline());
  EXPECT_GT(r->candidates(0).speedup(), 1.1);
}

v1::RecommendRequest Llama2Request(v1::Mode mode) {
  v1::RecommendRequest r;
  r.set_gpu("h100-sxm");
  r.set_mode(mode);
  v1::ModelSpec* m = r.mutable_model();
  m->set_hidden_size(4096);
  m->set_num_attention_heads(32);
  m->set_num_layers(32);
  m->set_vocab_size(32000);
  m->set_ffn_hidden_size(11008);
  m->set_mlp(v1::MLP_SWIGLU);
  m->set_norm(v1::NORM_RMSNORM);
  m->set_seq_length(4096);
  r.set_measure_top_k(3);
  r.set_top(5);
  return r;
}

// Llama-2-7B: nothing beats it (on the H100 nothing did, measured). Every response carries the
// verdict, the baseline is first under KEEP in both modes, the TP degrees candidates were made
// legal for and the rules' refusals are reported.
TEST(RecommendVerdictTest, KeepPutsTheBaselineFirstInEveryMode) {
  FakeGpu gpu;
  for (v1::Mode mode : {v1::MODE_PREDICTED, v1::MODE_MEASURED}) {
    absl::StatusOr<v1::RecommendResponse> r = RunRecommend(Llama2Request(mode), gpu.Context());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->verdict(), v1::VERDICT_KEEP) << r->verdict_reason();
    EXPECT_THAT(r->verdict_reason(), HasSubstr("keep your shape"));
    ASSERT_GT(r->candidates_size(), 1);
    EXPECT_TRUE(r->candidates(0).baseline()) << v1::Mode_Name(mode);
    EXPECT_EQ(r->candidates(0).rank(), 1);
    // The degrees its run would use: TP 1 fits on one GPU of a node, and its neighbour 2.
    EXPECT_THAT(r->tensor_parallel_degrees(), ::testing::ElementsAre(1, 2));
    EXPECT_THAT(r->tensor_parallel_source(), HasSubstr("TP 1 is the smallest"));
    std::vector<std::string> rules;
    for (const v1::Refusal& x : r->refusals()) {
      EXPECT_GT(x.count(), 0);
      EXPECT_FALSE(x.loosen_with().empty());
      rules.push_back(x.rule());
    }
    EXPECT_THAT(rules, ::testing::Contains("heads_divisible_by_tp"));
    for (const v1::Candidate& c : r->candidates()) EXPECT_FALSE(c.beats_baseline());
  }
}

// GPT-2's vocabulary (50257) is padded: CHANGE, and the first candidate beats the baseline.
TEST(RecommendVerdictTest, ChangeWhenTheFirstCandidateBeatsTheBaseline) {
  v1::RecommendRequest r = Llama2Request(v1::MODE_PREDICTED);
  v1::ModelSpec* m = r.mutable_model();
  m->Clear();
  m->set_hidden_size(768);
  m->set_num_attention_heads(12);
  m->set_num_layers(12);
  m->set_vocab_size(50257);
  m->set_seq_length(1024);
  absl::StatusOr<v1::RecommendResponse> out = RunRecommend(r, CallContext());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->verdict(), v1::VERDICT_CHANGE);
  EXPECT_THAT(out->verdict_reason(), HasSubstr("change the shape"));
  EXPECT_FALSE(out->candidates(0).baseline());
  EXPECT_TRUE(out->candidates(0).beats_baseline());
  EXPECT_EQ(out->candidates(0).model().vocab_size() % 64, 0);
}

// When every leading row was measured, the note about rows within each other's uncertainty does
// not send the user to measure them.
TEST(RecommendVerdictTest, MeasuredRowsAreNotSentToBeMeasured) {
  FakeGpu gpu;
  gpu.base_factor = 1.2;  // every measured candidate beats the baseline by about 1.2x
  absl::StatusOr<v1::RecommendResponse> r = RunRecommend(Request(), gpu.Context());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict(), v1::VERDICT_CHANGE);
  for (const std::string& n : r->notes()) EXPECT_THAT(n, ::testing::Not(HasSubstr("mode MEASURED")));
}

// Decode is ranked by tokens/s, and each row says its time per output token and MBU.
TEST(RecommendVerdictTest, DecodeRowsCarryTimePerTokenAndBandwidthUtilisation) {
  v1::RecommendRequest r = Llama2Request(v1::MODE_PREDICTED);
  r.mutable_model()->set_workload(v1::WORKLOAD_DECODE);
  r.mutable_model()->set_micro_batch_size(8);
  r.mutable_model()->set_kv_cache_length(2048);
  absl::StatusOr<v1::RecommendResponse> out = RunRecommend(r, CallContext());
  ASSERT_TRUE(out.ok()) << out.status();
  for (const v1::Candidate& c : out->candidates()) {
    EXPECT_DOUBLE_EQ(c.time_per_output_token_s(), c.step_time_s());
    EXPECT_GT(c.memory_bandwidth_utilization(), 0.05);
    EXPECT_LT(c.memory_bandwidth_utilization(), 1.0);
  }
  EXPECT_THAT(out->verdict_reason(), ::testing::AnyOf(HasSubstr("tokens/s"), HasSubstr("keep")));
}

}  // namespace
}  // namespace wavecrest
