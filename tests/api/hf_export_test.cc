// Export to a Hugging Face config.json reads back as the same model: for every shipped example
// and the candidates Recommend offers for it, ImportHfConfig(ExportHfConfig(spec)) runs the same
// GEMMs and has the same parameter count; what cannot be said in a config is refused by field.
#include "core/hf_export.h"

#include <filesystem>
#include <string>

#include "core/gemm.h"
#include "core/hf_import.h"
#include "core/model_stats.h"
#include "core/recommend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/convert.h"
#include "service/advisor_logic.h"
#include "service/spec_io.h"

namespace wavecrest {
namespace {

std::string Path(const std::string& rel) { return std::string(WAVECREST_SOURCE_DIR) + "/" + rel; }

// What the shape is, as the GEMMs and parameters see it.
void ExpectSameModel(const ModelSpec& a, const ModelSpec& b, const std::string& what) {
  EXPECT_EQ(CountParams(a).total_params, CountParams(b).total_params) << what;
  EXPECT_EQ(CountParams(a).active_params, CountParams(b).active_params) << what;
  EXPECT_EQ(a.expert_groups, b.expert_groups) << what;
  EXPECT_EQ(a.expert_groups_per_token, b.expert_groups_per_token) << what;
  const std::vector<Gemm> ga = BuildGemms(a), gb = BuildGemms(b);
  ASSERT_EQ(ga.size(), gb.size()) << what;
  for (size_t i = 0; i < ga.size(); ++i) {
    EXPECT_EQ(ga[i].name, gb[i].name) << what;
    EXPECT_EQ(ga[i].shape, gb[i].shape) << what << " " << ga[i].name;
    EXPECT_EQ(ga[i].count, gb[i].count) << what << " " << ga[i].name;
    EXPECT_EQ(ga[i].window, gb[i].window) << what << " " << ga[i].name;
  }
}

// The round trip of one normalized spec; false when the export refused it (with a reason).
bool RoundTrips(const ModelSpec& spec, const std::string& what) {
  absl::StatusOr<std::string> config = ExportHfConfig(spec);
  if (!config.ok()) {
    EXPECT_EQ(config.status().code(), absl::StatusCode::kFailedPrecondition) << what;
    EXPECT_THAT(std::string(config.status().message()), ::testing::HasSubstr("wavecrest spec"));
    return false;
  }
  EXPECT_TRUE(LooksLikeHfConfig(*config)) << what;
  absl::StatusOr<ModelSpec> back = ImportHfConfig(*config);
  EXPECT_TRUE(back.ok()) << what << ": " << back.status() << "\n" << *config;
  if (!back.ok()) return false;
  // A config says nothing of how the model is trained: those fields come from the spec.
  ModelSpec run = *back;
  run.seq_length = spec.seq_length;
  run.micro_batch_size = spec.micro_batch_size;
  run.tensor_parallel = spec.tensor_parallel;
  run.pipeline_parallel = spec.pipeline_parallel;
  run.data_parallel = spec.data_parallel;
  run.dtype = spec.dtype;
  run.attention = spec.attention;
  run.workload = spec.workload;
  run.kv_cache_length = spec.kv_cache_length;
  run.fused_gate_up = spec.fused_gate_up;
  absl::StatusOr<ModelSpec> normalized = NormalizeSpec(run);
  EXPECT_TRUE(normalized.ok()) << what << ": " << normalized.status() << "\n" << *config;
  if (!normalized.ok()) return false;
  EXPECT_EQ(normalized->name, spec.name) << what;
  ExpectSameModel(spec, *normalized, what);
  return true;
}

TEST(HfExportTest, EveryExampleAndItsCandidatesReadBackAsTheSameModel) {
  int exported = 0, candidates = 0;
  for (const char* dir : {"examples/models", "examples/models/hf"}) {
    for (const auto& e : std::filesystem::directory_iterator(Path(dir))) {
      if (e.path().extension() != ".json") continue;
      const std::string what = e.path().filename().string();
      absl::StatusOr<v1::ModelSpec> proto = LoadModelFile(e.path().string());
      ASSERT_TRUE(proto.ok()) << what;
      absl::StatusOr<ModelSpec> spec = SpecFromRequest(*proto, "");
      ASSERT_TRUE(spec.ok()) << what << ": " << spec.status();
      ASSERT_TRUE(RoundTrips(*spec, what)) << what << " did not export";
      ++exported;
      int64_t generated = 0;
      absl::StatusOr<std::vector<ModelSpec>> cands =
          GenerateCandidates(*spec, RecommendConstraints(), &generated);
      ASSERT_TRUE(cands.ok()) << what;
      for (size_t i = 1; i < cands->size() && i <= 6; ++i) {
        const std::string which = what + " candidate " + std::to_string(i);
        EXPECT_TRUE(RoundTrips((*cands)[i], which)) << which << " did not export";
        ++candidates;
      }
    }
  }
  EXPECT_GE(exported, 30);
  EXPECT_GT(candidates, 50);
}

TEST(HfExportTest, WhatNoArchitectureSaysIsRefusedByField) {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_layers = 8;
  s.vocab_size = 32000;
  s.mlp = Mlp::kSwiglu;
  s.norm = Norm::kRmsNorm;
  s.num_experts = 8;
  s.experts_per_token = 2;
  s.shared_expert_ffn_hidden_size = 8192;  // shared, ungated, not one expert wide
  s = *NormalizeSpec(s);
  absl::StatusOr<std::string> r = ExportHfConfig(s);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              ::testing::StartsWith("shared_expert_ffn_hidden_size: "));
  s.shared_expert_ffn_hidden_size = 0;
  ModelSpec grouped = s;  // group-limited routing is DeepSeek's alone
  grouped.expert_groups = 4;
  grouped.expert_groups_per_token = 2;
  grouped = *NormalizeSpec(grouped);
  EXPECT_THAT(std::string(ExportHfConfig(grouped).status().message()),
              ::testing::StartsWith("expert_groups: "));
  s.norm = Norm::kLayerNorm;
  EXPECT_THAT(std::string(ExportHfConfig(s).status().message()), ::testing::StartsWith("norm: "));
  // The architecture that says the spec: a dense gated MLP is a Llama, local attention on every
  // layer a Mistral, on some layers a Qwen3 with layer_types.
  ModelSpec dense = s;
  dense.num_experts = 0;
  dense.experts_per_token = 0;
  dense.norm = Norm::kRmsNorm;
  dense = *NormalizeSpec(dense);
  EXPECT_THAT(*ExportHfConfig(dense), ::testing::HasSubstr("\"LlamaForCausalLM\""));
  dense.sliding_window = 1024;
  EXPECT_THAT(*ExportHfConfig(dense), ::testing::HasSubstr("\"MistralForCausalLM\""));
  dense.sliding_window_layers = 6;
  EXPECT_THAT(*ExportHfConfig(dense), ::testing::HasSubstr("\"Qwen3ForCausalLM\""));
}

}  // namespace
}  // namespace wavecrest
