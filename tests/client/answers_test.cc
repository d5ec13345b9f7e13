// Every answer states what it assumes and what it is legal for (issue 54): the workload, batch,
// sequence and KV length of analyze, recommend and sweep; at TP t > 1 without a run the kernels'
// MFU named so with the run's beside it; and recommend rows that each say which of the
// tensor-parallel degrees asked they meet, with candidates that meet them all where the baseline
// does not.
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli.h"
#include "client/format.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "service/advisor_logic.h"
#include "service/recommend_logic.h"
#include "service/spec_io.h"
#include "service/sweep_logic.h"
#include "tests/fakes/fake_measurer.h"
#include "tests/test_paths.h"

namespace wavecrest {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::SourcePath;

v1::AnalyzeResponse Analyze(const std::string& rel,
                            const std::function<void(v1::AnalyzeRequest&)>& edit) {
  v1::AnalyzeRequest req;
  absl::StatusOr<v1::ModelSpec> model = LoadModelFile(SourcePath(rel));
  EXPECT_TRUE(model.ok()) << model.status();
  *req.mutable_model() = *model;
  req.set_gpu("h100-sxm");
  if (edit) edit(req);
  absl::StatusOr<v1::AnalyzeResponse> r = HandleAnalyze(req, nullptr);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : v1::AnalyzeResponse();
}

// A 30-head 7B (h 3840 in 30 heads of 128, MHA): no TP 4 or 8 divides its heads.
v1::ModelSpec ThirtyHeads() {
  v1::ModelSpec m;
  m.set_name("h30-7b");
  m.set_hidden_size(3840);
  m.set_num_attention_heads(30);
  m.set_num_kv_heads(30);
  m.set_num_layers(40);
  m.set_ffn_hidden_size(10240);
  m.set_mlp(v1::MLP_SWIGLU);
  m.set_vocab_size(32000);
  m.set_norm(v1::NORM_RMSNORM);
  return m;
}

v1::RecommendResponse RecommendThirtyHeads(std::vector<int64_t> tp_options) {
  v1::RecommendRequest req;
  *req.mutable_model() = ThirtyHeads();
  req.set_gpu("h100-sxm");
  req.set_mode(v1::MODE_PREDICTED);
  for (int64_t t : tp_options) req.add_tensor_parallel_options(t);
  FakeMeasurer fake;
  CallContext ctx;
  ctx.measurer = &fake;
  absl::StatusOr<v1::RecommendResponse> r = RunRecommend(req, ctx);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : v1::RecommendResponse();
}

TEST(AnswersTest, AnalyzeAtTpEightGivesTheRunsMfuBesideTheKernels) {
  const v1::AnalyzeResponse k =
      Analyze("examples/models/hf/llama-3-8b.json",
              [](v1::AnalyzeRequest& q) { q.mutable_model()->set_tensor_parallel(8); });
  // The answer stays one rank's kernels; the run of the same layout is beside it.
  EXPECT_FALSE(k.has_step());
  ASSERT_TRUE(k.has_tensor_parallel_run());
  EXPECT_EQ(k.mfu(), k.kernels().mfu());
  const v1::StepBreakdown& run = k.tensor_parallel_run();
  EXPECT_EQ(run.gpus(), 8);
  EXPECT_EQ(run.tensor_parallel(), 8);
  EXPECT_GT(run.tp_comm_s(), 0);
  EXPECT_LT(run.mfu(), k.kernels().mfu());
  // The same figure as the run asked for by flags (--gpus 8).
  const v1::AnalyzeResponse asked =
      Analyze("examples/models/hf/llama-3-8b.json", [](v1::AnalyzeRequest& q) {
        q.mutable_model()->set_tensor_parallel(8);
        q.mutable_run()->set_num_gpus(8);
      });
  EXPECT_DOUBLE_EQ(run.mfu(), asked.mfu());
  EXPECT_DOUBLE_EQ(run.step_time_s(), asked.step_time_s());
  // The CLI names each.
  const std::string text = FormatAnalysis(k);
  EXPECT_THAT(text, HasSubstr(absl::StrFormat("kernel MFU      %.1f%%", 100 * k.kernels().mfu())));
  EXPECT_THAT(text, HasSubstr("without the TP communication of t=8"));
  EXPECT_THAT(text, HasSubstr(absl::StrFormat("run MFU         %.1f%%", 100 * run.mfu())));
  EXPECT_THAT(text, HasSubstr("a run on 8 GPUs at TP 8"));
  EXPECT_THAT(text, Not(HasSubstr("predicted MFU")));
  // At TP 1 there is no collective to leave out, and inference is not a training run.
  EXPECT_FALSE(Analyze("examples/models/hf/llama-3-8b.json", nullptr).has_tensor_parallel_run());
  EXPECT_FALSE(Analyze("examples/models/hf/llama-3-8b.json", [](v1::AnalyzeRequest& q) {
                 q.mutable_model()->set_tensor_parallel(8);
                 q.mutable_model()->set_workload(v1::WORKLOAD_DECODE);
               }).has_tensor_parallel_run());
}

TEST(AnswersTest, EveryAnswerStatesItsWorkloadBatchSequenceAndKvLength) {
  const v1::AnalyzeResponse train =
      Analyze("examples/models/hf/llama-3-8b.json", [](v1::AnalyzeRequest& q) {
        q.mutable_model()->set_seq_length(4096);
        q.mutable_model()->set_micro_batch_size(2);
        q.mutable_model()->set_tensor_parallel(2);
      });
  EXPECT_EQ(train.assumed().workload(), v1::WORKLOAD_TRAINING);
  EXPECT_EQ(train.assumed().seq_length(), 4096);
  EXPECT_EQ(train.assumed().micro_batch_size(), 2);
  EXPECT_EQ(train.assumed().tensor_parallel(), 2);
  EXPECT_EQ(train.assumed().kv_cache_length(), 0);
  EXPECT_EQ(train.assumed().summary(),
            "training: micro-batch 2 of 4096-token sequences; TP 2, bf16, flash attention");
  const v1::AnalyzeResponse decode =
      Analyze("examples/models/hf/llama-3-8b.json", [](v1::AnalyzeRequest& q) {
        q.mutable_model()->set_workload(v1::WORKLOAD_DECODE);
        q.mutable_model()->set_micro_batch_size(8);
        q.mutable_model()->set_kv_cache_length(4096);
      });
  EXPECT_EQ(decode.assumed().kv_cache_length(), 4096);
  EXPECT_EQ(decode.assumed().micro_batch_size(), 8);
  EXPECT_THAT(decode.assumed().summary(),
              HasSubstr("decode: batch 8, 4096 tokens of KV cache per sequence"));
  const std::string text = FormatAnalysis(decode);
  EXPECT_THAT(text, HasSubstr("assumes: decode: batch 8, 4096 tokens of KV cache"));
  EXPECT_THAT(text, HasSubstr("per output token at batch 8 with 4096 tokens of KV cache"));
  // Recommend and sweep say the same of the baseline.
  v1::RecommendRequest rq;
  *rq.mutable_model() = decode.model();
  rq.set_gpu("h100-sxm");
  rq.set_mode(v1::MODE_PREDICTED);
  rq.set_top(3);
  FakeMeasurer fake;
  CallContext ctx;
  ctx.measurer = &fake;
  absl::StatusOr<v1::RecommendResponse> r = RunRecommend(rq, ctx);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->assumed().summary(), decode.assumed().summary());
  EXPECT_THAT(FormatRecommendation(*r), HasSubstr("assumes: " + decode.assumed().summary()));
  v1::SweepRequest sq;
  *sq.mutable_model() = decode.model();
  sq.set_gpu("h100-sxm");
  sq.set_vary(v1::SWEEP_DIMENSION_HIDDEN);
  sq.set_from(4096);
  sq.set_to(4224);
  sq.set_step(64);
  absl::StatusOr<v1::SweepResponse> s = RunSweep(sq, ctx);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->assumed().summary(), decode.assumed().summary());
  EXPECT_THAT(FormatSweep(*s, "hidden"), HasSubstr("assumes: " + decode.assumed().summary()));
}

// Done when: a 30-head 7B config with --tp-options 1,2,4,8 gets candidates legal at TP 8, each
// row saying so.
TEST(AnswersTest, ThirtyHeadsAskedForTpEightGetCandidatesLegalAtEightEachRowSaysSo) {
  const v1::RecommendResponse r = RecommendThirtyHeads({1, 2, 4, 8});
  EXPECT_THAT(r.tensor_parallel_degrees(), ElementsAre(1, 2, 4, 8));
  int others = 0;
  for (const v1::Candidate& c : r.candidates()) {
    const v1::ModelSpec& m = c.model();
    if (c.baseline()) {
      EXPECT_THAT(c.tensor_parallel_legal(), ElementsAre(1, 2));  // 30 heads: not 4, not 8
      EXPECT_EQ(c.rank(), r.candidates_size());                   // after what was asked for
      continue;
    }
    ++others;
    EXPECT_THAT(c.tensor_parallel_legal(), ElementsAre(1, 2, 4, 8)) << c.rank();
    EXPECT_EQ(m.num_attention_heads() % 8, 0) << c.rank();
    EXPECT_TRUE(m.num_kv_heads() % 8 == 0 || 8 % m.num_kv_heads() == 0) << c.rank();
    EXPECT_EQ(m.hidden_size() % 8, 0);
    EXPECT_EQ(m.ffn_hidden_size() % 8, 0);
    // The same model: the KV group and head-dim floor held.
    EXPECT_EQ(m.num_attention_heads(), m.num_kv_heads());
    EXPECT_GE(m.head_dim(), 64);
    // The head change is what the degrees need: kept, and said so.
    bool required = false;
    for (const v1::KnobGain& g : c.knob_gains()) required |= g.required();
    EXPECT_TRUE(required) << c.rank();
  }
  EXPECT_GT(others, 0);
  EXPECT_EQ(r.verdict(), v1::VERDICT_CHANGE) << r.verdict_reason();
  EXPECT_THAT(r.verdict_reason(), HasSubstr("not legal for tensor parallelism 4, 8"));
  const std::string text = FormatRecommendation(r);
  EXPECT_THAT(text, HasSubstr("except #" + std::to_string(r.candidates_size()) +
                              " (the baseline) only for 1,2"));
  EXPECT_THAT(text, Not(HasSubstr("each legal for tensor parallelism 1, 2, 4, 8")));
  EXPECT_THAT(text, HasSubstr("1,2,4,8"));
  // Degrees the baseline meets leave every row legal, and the header says so.
  const v1::RecommendResponse two = RecommendThirtyHeads({1, 2});
  for (const v1::Candidate& c : two.candidates()) {
    EXPECT_THAT(c.tensor_parallel_legal(), ElementsAre(1, 2)) << c.rank();
  }
  EXPECT_THAT(FormatRecommendation(two), HasSubstr("each legal for tensor parallelism 1, 2"));
}

}  // namespace
}  // namespace wavecrest
