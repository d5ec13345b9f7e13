// Export to a Hugging Face config.json reads back as the same model: for every shipped example
// and the candidates Recommend offers for it, ImportHfConfig(ExportHfConfig(spec)) runs the same
// GEMMs and has the same parameter count; what cannot be said in a config is refused by field.
#include "core/hf_export.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/gemm.h"
#include "core/hf_import.h"
#include "core/model_stats.h"
#include "core/recommend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "service/advisor_logic.h"
#include "service/convert.h"
#include "service/spec_io.h"
#include "tests/test_paths.h"

namespace wavecrest {
namespace {

using testing::SourcePath;

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
    for (const auto& e : std::filesystem::directory_iterator(SourcePath(dir))) {
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
  // A mixture of experts with LayerNorm is Phi-3.5-MoE's; a dense gated MLP with it is no one's.
  s.norm = Norm::kLayerNorm;
  EXPECT_THAT(*ExportHfConfig(s), ::testing::HasSubstr("\"PhimoeForCausalLM\""));
  ModelSpec layernorm = s;
  layernorm.num_experts = 0;
  layernorm.experts_per_token = 0;
  layernorm = *NormalizeSpec(layernorm);
  EXPECT_THAT(std::string(ExportHfConfig(layernorm).status().message()),
              ::testing::StartsWith("norm: "));
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

std::string ReadText(const std::string& rel) {
  std::ifstream in(SourcePath(rel));
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The base config's spec, as a run would normalize it.
ModelSpec BaseSpec(const std::string& rel) {
  absl::StatusOr<v1::ModelSpec> proto = LoadModelFile(SourcePath(rel));
  EXPECT_TRUE(proto.ok()) << rel;
  absl::StatusOr<ModelSpec> spec = SpecFromRequest(*proto, "");
  EXPECT_TRUE(spec.ok()) << rel << ": " << spec.status();
  return *spec;
}

// The layer types an export over `rel` writes for the base with `layers` layers; empty when it
// writes none.
std::vector<std::string> ExportedLayerTypes(const std::string& rel, int64_t layers,
                                            std::vector<std::string>* changed,
                                            std::string* text) {
  const ModelSpec candidate = *NormalizeSpec(WithLayers(BaseSpec(rel), layers));
  absl::StatusOr<std::string> out = ExportHfConfigOver(candidate, ReadText(rel), changed);
  EXPECT_TRUE(out.ok()) << rel << " L " << layers << ": " << out.status();
  if (!out.ok()) return {};
  *text = *out;
  const nlohmann::json j = nlohmann::json::parse(*out);
  std::vector<std::string> types;
  if (j.contains("layer_types")) {
    for (const auto& t : j["layer_types"]) types.push_back(t.get<std::string>());
  }
  return types;
}

// GPT-OSS alternates local and full attention from its first layer: a candidate with other layers
// keeps the alternation (period 2, the first local), whatever the count.
TEST(HfExportOverTest, LayerTypesKeepTheBasesAlternation) {
  for (int64_t layers : {20, 22, 23, 26, 27}) {
    std::vector<std::string> changed;
    std::string text;
    const std::vector<std::string> types =
        ExportedLayerTypes("examples/models/hf/gpt-oss-20b.json", layers, &changed, &text);
    ASSERT_EQ(static_cast<int64_t>(types.size()), layers);
    for (int64_t i = 0; i < layers; ++i) {
      EXPECT_EQ(types[i], i % 2 == 0 ? "sliding_attention" : "full_attention")
          << "L " << layers << " layer " << i;
    }
    EXPECT_THAT(changed, ::testing::Contains("layer_types"));
    EXPECT_THAT(changed, ::testing::Contains("num_hidden_layers"));
  }
}

// Gemma 3 says its pattern as sliding_window_pattern 6 (every sixth layer global): an export with
// other layers writes no layer_types to contradict it, and reads back with the pattern's local
// layers.
TEST(HfExportOverTest, GemmaKeepsItsEverySixthLayerPattern) {
  for (int64_t layers : {18, 24, 25, 30, 31}) {
    std::vector<std::string> changed;
    std::string text;
    const std::vector<std::string> types =
        ExportedLayerTypes("examples/models/hf/gemma-3-1b.json", layers, &changed, &text);
    EXPECT_TRUE(types.empty()) << "L " << layers;
    EXPECT_THAT(changed, ::testing::ElementsAre("num_hidden_layers")) << "L " << layers;
    const nlohmann::json j = nlohmann::json::parse(text);
    EXPECT_EQ(j["sliding_window_pattern"], 6);
    absl::StatusOr<ModelSpec> back = ImportHfConfig(text);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(Derive(WithDefaults(*back)).window_layers, layers - layers / 6) << "L " << layers;
  }
  // The canonical export (no base) says the same pattern in layer_types.
  const std::vector<std::string> types = LayerTypesFor(26, 22);
  for (int i = 0; i < 26; ++i) {
    EXPECT_EQ(types[i], (i + 1) % 6 == 0 ? "full_attention" : "sliding_attention") << i;
  }
}

// Mixtral's config class has intermediate_size and num_local_experts, not Qwen-MoE's
// moe_intermediate_size and num_experts: an export that changes the expert width writes the
// former and adds nothing MixtralConfig lacks.
TEST(HfExportOverTest, MixtralKeepsItsOwnKeys) {
  const std::string rel = "examples/models/hf/mixtral-8x7b.json";
  ModelSpec candidate = BaseSpec(rel);
  candidate.ffn_hidden_size = 14848;
  candidate = *NormalizeSpec(candidate);
  std::vector<std::string> changed;
  absl::StatusOr<std::string> text = ExportHfConfigOver(candidate, ReadText(rel), &changed);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(changed, ::testing::ElementsAre("intermediate_size"));
  EXPECT_THAT(*text, ::testing::Not(::testing::HasSubstr("moe_intermediate_size")));
  EXPECT_THAT(*text, ::testing::Not(::testing::HasSubstr("\"num_experts\"")));
  EXPECT_EQ(nlohmann::json::parse(*text)["intermediate_size"], 14848);
}

// DBRX spells its shape d_model, n_layers and ffn_config.ffn_hidden_size: an export over it
// writes those.
TEST(HfExportOverTest, DbrxKeepsItsOwnSpelling) {
  const std::string rel = "examples/models/hf/dbrx-base.json";
  ModelSpec candidate = BaseSpec(rel);
  candidate.ffn_hidden_size = 11264;
  candidate.num_layers = 39;
  candidate = *NormalizeSpec(candidate);
  std::vector<std::string> changed;
  absl::StatusOr<std::string> text = ExportHfConfigOver(candidate, ReadText(rel), &changed);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(changed, ::testing::UnorderedElementsAre("n_layers", "ffn_config.ffn_hidden_size"));
  const nlohmann::json j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["ffn_config"]["ffn_hidden_size"], 11264);
  EXPECT_EQ(j["n_layers"], 39);
  EXPECT_FALSE(j.contains("intermediate_size"));
}

// A config class without head_dim (Granite) gets none: a head dim of hidden / heads is the
// class's own, another one cannot be said over this base.
TEST(HfExportOverTest, NoKeyTheClassLacks) {
  const std::string rel = "examples/models/hf/granite-3.0-8b.json";
  ModelSpec candidate = BaseSpec(rel);
  candidate.num_attention_heads = 64;
  candidate.num_kv_heads = 16;
  candidate.head_dim = 64;  // 4096 / 64: the class derives it
  candidate = *NormalizeSpec(candidate);
  std::vector<std::string> changed;
  absl::StatusOr<std::string> text = ExportHfConfigOver(candidate, ReadText(rel), &changed);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, ::testing::Not(::testing::HasSubstr("head_dim")));
  candidate.num_attention_heads = 16;
  candidate.num_kv_heads = 8;
  candidate.head_dim = 128;  // 16 × 128 ≠ 4096
  candidate = *NormalizeSpec(candidate);
  text = ExportHfConfigOver(candidate, ReadText(rel), &changed);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(text.status().message()), ::testing::StartsWith("head_dim: "));
}

}  // namespace
}  // namespace wavecrest
