// Every shipped example: loads, validates, and has the published parameter count (within 0.5%).
#include <string>
#include <tuple>

#include "core/analysis.h"
#include "core/hf_import.h"
#include "core/model_stats.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/advisor_logic.h"
#include "service/convert.h"
#include "service/spec_io.h"

namespace wavecrest {
namespace {

std::string Path(const std::string& rel) { return std::string(WAVECREST_SOURCE_DIR) + "/" + rel; }

int64_t ParamsOf(const std::string& rel) {
  auto p = LoadModelFile(Path(rel));
  EXPECT_TRUE(p.ok()) << rel << ": " << p.status();
  if (!p.ok()) return 0;
  auto spec = SpecFromRequest(*p, "model.");
  EXPECT_TRUE(spec.ok()) << rel << ": " << spec.status();
  if (!spec.ok()) return 0;
  return CountParams(*spec).total_params;
}

struct Published {
  const char* file;
  double params;     // published size
  double tolerance;  // relative
};

// Exact counts from the model cards / safetensors metadata, where published. GPT-3 2.7B is only
// published to two significant digits ("2.7B"), so its tolerance is that rounding.
class ExampleParamsTest : public ::testing::TestWithParam<Published> {};

TEST_P(ExampleParamsTest, MatchesPublishedSize) {
  const Published& p = GetParam();
  const double got = static_cast<double>(ParamsOf(p.file));
  EXPECT_NEAR(got / p.params, 1.0, p.tolerance) << p.file << ": " << got;
}

INSTANTIATE_TEST_SUITE_P(
    Examples, ExampleParamsTest,
    ::testing::Values(Published{"examples/models/pythia-70m.json", 70'426'624, 0.005},
                      Published{"examples/models/pythia-160m.json", 162'322'944, 0.005},
                      Published{"examples/models/pythia-410m.json", 405'334'016, 0.005},
                      Published{"examples/models/pythia-1b.json", 1'011'781'632, 0.005},
                      Published{"examples/models/pythia-1.4b.json", 1'414'647'808, 0.005},
                      Published{"examples/models/pythia-2.8b.json", 2'775'208'960, 0.005},
                      Published{"examples/models/pythia-6.9b.json", 6'857'302'016, 0.005},
                      Published{"examples/models/pythia-12b.json", 11'846'072'320, 0.005},
                      Published{"examples/models/gpt2-small.json", 124'439'808, 0.005},
                      Published{"examples/models/gpt3-2.7b.json", 2.7e9, 0.05 / 2.7},
                      Published{"examples/models/llama-2-7b.json", 6'738'415'616, 0.005},
                      Published{"examples/models/llama-2-13b.json", 13'015'864'320, 0.005},
                      Published{"examples/models/llama-2-70b.json", 68'976'648'192, 0.005},
                      Published{"examples/models/llama-3-8b.json", 8'030'261'248, 0.005},
                      Published{"examples/models/llama-3-70b.json", 70'553'706'496, 0.005},
                      Published{"examples/models/mistral-7b.json", 7'241'732'096, 0.005},
                      Published{"examples/models/qwen2-7b.json", 7'615'616'512, 0.005},
                      // Hugging Face configs, through the importer.
                      Published{"examples/models/hf/gpt2.json", 124'439'808, 0.005},
                      Published{"examples/models/hf/pythia-2.8b.json", 2'775'208'960, 0.005},
                      Published{"examples/models/hf/llama-2-7b.json", 6'738'415'616, 0.005},
                      Published{"examples/models/hf/llama-3-8b.json", 8'030'261'248, 0.005},
                      Published{"examples/models/hf/mistral-7b.json", 7'241'732'096, 0.005},
                      Published{"examples/models/hf/qwen2-7b.json", 7'615'616'512, 0.005},
                      Published{"examples/models/hf/gemma-7b.json", 8'537'680'896, 0.005},
                      Published{"examples/models/hf/phi-2.json", 2'779'683'840, 0.005},
                      Published{"examples/models/hf/phi-3-mini.json", 3'821'079'552, 0.005},
                      // Published to three significant digits: Gemma 2 9B "9.24B" (HF
                      // safetensors metadata 9,241,705,984: Gemma 2 has 4 norms a layer, we
                      // count 2), Falcon-7B "6.92B" (safetensors 6,921,720,704), Mixtral 8x7B
                      // "46.7B total" (Mistral AI, 2023-12-11), Qwen1.5-MoE-A2.7B "14.3B in total"
                      // (Qwen, 2024-03-28).
                      Published{"examples/models/hf/gemma-2-9b.json", 9'241'705'984, 0.005},
                      Published{"examples/models/hf/falcon-7b.json", 6'921'720'704, 0.005},
                      Published{"examples/models/hf/mixtral-8x7b.json", 46.7e9, 0.01},
                      Published{"examples/models/hf/qwen1.5-moe-a2.7b.json", 14.3e9, 0.01}),
    [](const auto& i) {
      std::string n = i.param.file;
      n = n.substr(n.rfind('/') + 1);
      std::string out = std::to_string(i.index) + "_";
      for (char c : n) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return out;
    });

// Mixture of experts: the parameters a token uses. Mixtral 8x7B "only uses 12.9B parameters per
// token" (Mistral AI, 2023-12-11); Qwen1.5-MoE-A2.7B "2.7B activated parameters" (Qwen,
// 2024-03-28).
TEST(HfImportTest, MoeActiveParametersMatchPublished) {
  for (const auto& [file, total, active] :
       {std::tuple<const char*, double, double>{"examples/models/hf/mixtral-8x7b.json", 46.7e9,
                                                12.9e9},
        {"examples/models/hf/qwen1.5-moe-a2.7b.json", 14.3e9, 2.7e9}}) {
    auto p = LoadModelFile(Path(file));
    ASSERT_TRUE(p.ok()) << p.status();
    auto spec = SpecFromRequest(*p, "model.");
    ASSERT_TRUE(spec.ok()) << spec.status();
    const ParamCounts c = CountParams(*spec);
    EXPECT_NEAR(c.total_params / total, 1.0, 0.01) << file;
    EXPECT_NEAR(c.active_params / active, 1.0, 0.01) << file;
    EXPECT_LT(c.active_params, c.total_params);
  }
  // A dense model uses all of its parameters.
  auto dense = SpecFromRequest(*LoadModelFile(Path("examples/models/llama-2-7b.json")), "model.");
  ASSERT_TRUE(dense.ok());
  EXPECT_EQ(CountParams(*dense).active_params, CountParams(*dense).total_params);
}

TEST(HfImportTest, HfAndWavecrestSpecsAgree) {
  for (const char* name : {"llama-2-7b", "llama-3-8b", "mistral-7b", "qwen2-7b", "pythia-2.8b"}) {
    auto hf = LoadModelFile(Path(std::string("examples/models/hf/") + name + ".json"));
    auto wc = LoadModelFile(Path(std::string("examples/models/") + name + ".json"));
    ASSERT_TRUE(hf.ok() && wc.ok()) << name;
    auto a = SpecFromRequest(*hf, "");
    auto b = SpecFromRequest(*wc, "");
    ASSERT_TRUE(a.ok() && b.ok()) << name;
    EXPECT_EQ(a->hidden_size, b->hidden_size) << name;
    EXPECT_EQ(a->num_attention_heads, b->num_attention_heads) << name;
    EXPECT_EQ(a->num_kv_heads, b->num_kv_heads) << name;
    EXPECT_EQ(a->ffn_hidden_size, b->ffn_hidden_size) << name;
    EXPECT_EQ(a->vocab_size, b->vocab_size) << name;
    EXPECT_EQ(a->mlp, b->mlp) << name;
    EXPECT_EQ(BuildGemms(*a).size(), BuildGemms(*b).size()) << name;
  }
}

TEST(HfImportTest, ConfigsAreNamedAfterTheirModelOrTheirFile) {
  // "_name_or_path" when the config has one; else the file's name.
  EXPECT_EQ(LoadModelFile(Path("examples/models/hf/mixtral-8x7b.json"))->name(),
            "mistralai/Mixtral-8x7B-v0.1");
  EXPECT_EQ(LoadModelFile(Path("examples/models/hf/llama-3-8b.json"))->name(), "llama-3-8b");
  EXPECT_EQ(ModelNameFromPath("/models/Meta-Llama-3-8B/config.json"), "Meta-Llama-3-8B");
  EXPECT_EQ(ModelNameFromPath("config.json"), "config");
  EXPECT_EQ(ModelNameFromPath("runs/qwen3.json"), "qwen3");
}

TEST(HfImportTest, GemmaKeepsItsHeadDim) {
  auto p = LoadModelFile(Path("examples/models/hf/gemma-7b.json"));
  ASSERT_TRUE(p.ok());
  auto s = SpecFromRequest(*p, "");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->head_dim, 256);  // not h/a = 192
  EXPECT_TRUE(s->tied_embeddings);
  EXPECT_EQ(s->mlp, Mlp::kSwiglu);
}

TEST(HfImportTest, ErrorsNameTheProblem) {
  using ::testing::HasSubstr;
  auto unsupported = ImportHfConfig(R"({"architectures": ["T5ForConditionalGeneration"]})");
  EXPECT_EQ(unsupported.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unsupported.status().message()), HasSubstr("LlamaForCausalLM"));
  auto missing = ImportHfConfig(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096})");
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("num_attention_heads"));
  auto typed = ImportHfConfig(
      R"({"architectures": ["GPT2LMHeadModel"], "n_embd": "768", "n_head": 12, "n_layer": 12})");
  EXPECT_THAT(std::string(typed.status().message()), HasSubstr("\"n_embd\" must be an integer"));
  EXPECT_FALSE(ImportHfConfig("{not json").ok());
  EXPECT_FALSE(ParseModelJson("[1,2,3]").ok());
  EXPECT_THAT(std::string(ParseModelJson(R"({"hidden_sise": 5})").status().message()),
              HasSubstr("hidden_sise"));
}

TEST(HfImportTest, ModelTypeAloneIsEnough) {
  auto s = ImportHfConfig(
      R"({"model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32,
          "num_key_value_heads": 8, "num_hidden_layers": 32, "intermediate_size": 14336,
          "vocab_size": 32000})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->num_kv_heads, 8);
}

}  // namespace
}  // namespace wavecrest
