// Every shipped example: loads, validates, and has the published parameter count (within 0.5%).
#include <fstream>
#include <iterator>
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
                      // Llama 3.1 405B: "405B" (Meta's model card), three digits: 1%.
                      Published{"examples/models/llama-3.1-405b.json", 405e9, 0.01},
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
                      Published{"examples/models/hf/qwen1.5-moe-a2.7b.json", 14.3e9, 0.01},
                      // Today's families (sources in examples/models/hf/README.md). Qwen3-8B
                      // "8.2B", Qwen3-30B-A3B "30.5B", Qwen3-235B-A22B "235B" (Qwen model
                      // cards); DeepSeek-V3 "671B" (the main model without its MTP module,
                      // DeepSeek's README_WEIGHTS.md), DeepSeek-V2-Lite "15.7B" (DeepSeek-V2
                      // paper); gpt-oss-120b 116.83B and gpt-oss-20b 20.91B (OpenAI's model card,
                      // Table 1); Gemma 3 1B and 27B text models: embedding + non-embedding of the
                      // Gemma 3 report's Table 1 (302M + 698M; 1,416M + 25,600M); Llama 4 Maverick
                      // "400B" and Scout "109B" (Meta's model cards), both with their vision
                      // encoder, which a text model has not: Scout's text model is 1.1% below its
                      // card's total, so 1.5% for it.
                      Published{"examples/models/hf/qwen3-8b.json", 8.2e9, 0.01},
                      Published{"examples/models/hf/qwen3-30b-a3b.json", 30.5e9, 0.01},
                      Published{"examples/models/hf/qwen3-235b-a22b.json", 235e9, 0.01},
                      Published{"examples/models/hf/deepseek-v3.json", 671e9, 0.01},
                      Published{"examples/models/hf/deepseek-v2-lite.json", 15.7e9, 0.01},
                      Published{"examples/models/hf/gpt-oss-120b.json", 116.83e9, 0.01},
                      Published{"examples/models/hf/gpt-oss-20b.json", 20.91e9, 0.01},
                      Published{"examples/models/hf/gemma-3-1b.json", 1.000e9, 0.01},
                      Published{"examples/models/hf/gemma-3-27b.json", 27.016e9, 0.01},
                      Published{"examples/models/hf/llama-4-maverick.json", 400e9, 0.01},
                      Published{"examples/models/hf/llama-4-scout.json", 109e9, 0.015},
                      // Kimi K2 "1 trillion total parameters" (Moonshot AI's model card), a
                      // figure rounded to one digit: 3% for it.
                      Published{"examples/models/hf/kimi-k2.json", 1e12, 0.03}),
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

// Active parameters as each publisher counts them: DeepSeek and OpenAI leave the input embedding
// out (a lookup, not a matrix product), Qwen and Meta keep it. DeepSeek-V3 "36.6B" (README_
// WEIGHTS.md), DeepSeek-V2-Lite "2.4B" (DeepSeek-V2 paper), gpt-oss-120b 5.13B and gpt-oss-20b
// 3.61B (model card, Table 1), Qwen3-30B-A3B "3.3B", Qwen3-235B-A22B "22B", Llama 4 Scout and
// Maverick "17B". Two significant digits ("2.4B", "3.3B", "22B", "17B") get 2.5%.
TEST(HfImportTest, TodaysFamiliesActiveParametersMatchPublished) {
  struct Case {
    const char* file;
    double active;
    bool without_input_embedding;
    double tolerance;
  };
  for (const Case& c : {Case{"deepseek-v3", 36.6e9, true, 0.01},
                        Case{"deepseek-v2-lite", 2.4e9, true, 0.025},
                        Case{"gpt-oss-120b", 5.13e9, true, 0.01},
                        Case{"gpt-oss-20b", 3.61e9, true, 0.01},
                        Case{"qwen3-30b-a3b", 3.3e9, false, 0.025},
                        Case{"qwen3-235b-a22b", 22e9, false, 0.025},
                        Case{"llama-4-scout", 17e9, false, 0.025},
                        Case{"llama-4-maverick", 17e9, false, 0.025}}) {
    auto p = LoadModelFile(Path(std::string("examples/models/hf/") + c.file + ".json"));
    ASSERT_TRUE(p.ok()) << c.file << ": " << p.status();
    auto spec = SpecFromRequest(*p, "model.");
    ASSERT_TRUE(spec.ok()) << c.file << ": " << spec.status();
    double active = static_cast<double>(CountParams(*spec).active_params);
    if (c.without_input_embedding) {
      active -= static_cast<double>(spec->vocab_size) * static_cast<double>(spec->hidden_size);
    }
    EXPECT_NEAR(active / c.active, 1.0, c.tolerance) << c.file << ": " << active;
  }
}

// What each family's config becomes: the layer mix, latent attention and local windows.
TEST(HfImportTest, TodaysFamiliesKeepTheirStructure) {
  auto load = [](const char* name) {
    auto p = LoadModelFile(Path(std::string("examples/models/hf/") + name + ".json"));
    EXPECT_TRUE(p.ok()) << name;
    auto s = SpecFromRequest(*p, "model.");
    EXPECT_TRUE(s.ok()) << name << ": " << s.status();
    return *s;
  };
  const ModelSpec v3 = load("deepseek-v3");
  EXPECT_EQ(v3.kv_lora_rank, 512);
  EXPECT_EQ(v3.q_lora_rank, 1536);
  EXPECT_EQ(v3.head_dim, 192);  // 128 without rotary + 64 rotary
  EXPECT_EQ(Derive(v3).v_head_dim, 128);
  EXPECT_EQ(Derive(v3).dense_layers, 3);
  EXPECT_EQ(Derive(v3).moe_layers, 58);
  EXPECT_EQ(v3.shared_expert_ffn_hidden_size, 2048);
  // Group-limited routing: 8 groups, 4 per token (n_group, topk_group); one group is none.
  EXPECT_EQ(v3.expert_groups, 8);
  EXPECT_EQ(v3.expert_groups_per_token, 4);
  EXPECT_EQ(load("kimi-k2").expert_groups, 0);
  // "greedy" top-k (DeepSeek-V2-Lite's method) ignores the groups a config may still list.
  std::ifstream in(Path("examples/models/hf/deepseek-v3.json"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("\"noaux_tc\""), 10, "\"greedy\"");
  absl::StatusOr<ModelSpec> greedy = ImportHfConfig(text);
  ASSERT_TRUE(greedy.ok()) << greedy.status();
  EXPECT_EQ(greedy->expert_groups, 0);
  EXPECT_EQ(load("deepseek-v2-lite").q_lora_rank, 0);  // null: a full query projection
  const ModelSpec maverick = load("llama-4-maverick");
  EXPECT_EQ(Derive(maverick).moe_layers, 24);  // every second layer
  EXPECT_EQ(DenseFfnWidth(maverick), 16384);
  EXPECT_EQ(maverick.shared_expert_ffn_hidden_size, 8192);
  EXPECT_EQ(Derive(load("llama-4-scout")).dense_layers, 0);
  const ModelSpec gemma = load("gemma-3-27b");  // text_config, with Gemma3TextConfig's defaults
  EXPECT_EQ(gemma.vocab_size, 262208);
  EXPECT_EQ(gemma.sliding_window, 1024);
  EXPECT_EQ(Derive(gemma).window_layers, 62 - 62 / 6);  // five local layers in six
  EXPECT_TRUE(gemma.tied_embeddings);
  const ModelSpec oss = load("gpt-oss-120b");
  EXPECT_EQ(oss.sliding_window, 128);
  EXPECT_EQ(Derive(oss).window_layers, 18);  // from layer_types
  EXPECT_EQ(oss.bias, Bias::kAll);
  EXPECT_EQ(load("qwen3-8b").sliding_window, 0);  // use_sliding_window: false
  // Dense layers beyond the first ones are refused with the reason.
  auto mixed = ImportHfConfig(
      R"({"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048, "num_attention_heads": 32,
          "num_hidden_layers": 4, "intermediate_size": 6144, "vocab_size": 1000,
          "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 768,
          "mlp_only_layers": [1, 3]})");
  EXPECT_THAT(std::string(mixed.status().message()), ::testing::HasSubstr("mlp_only_layers"));
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

// A config that names nothing itself is named after its file (a checkout's config.json after its
// folder), or without a file after its model_type: never the table's stand-in "model".
TEST(HfImportTest, AConfigIsNamedByItsNameItsFileOrItsKind) {
  const std::string path = Path("examples/models/hf/llama-3-8b.json");
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(text.find("_name_or_path"), std::string::npos);
  EXPECT_EQ(ParseModelJson(text, path)->name(), "llama-3-8b");
  EXPECT_EQ(ParseModelJson(text, "/models/Meta-Llama-3-8B/config.json")->name(),
            "Meta-Llama-3-8B");
  EXPECT_EQ(ParseModelJson(text)->name(), "llama");
  EXPECT_EQ(ParseModelJson(R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 768, "n_head": 12,
                               "n_layer": 12, "vocab_size": 50257, "_name_or_path": "gpt2"})",
                           path)
                ->name(),
            "gpt2");
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
