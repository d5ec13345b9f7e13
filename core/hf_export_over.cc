// ExportHfConfigOver (core/hf_export.h): a candidate written into the config.json it came from,
// in that config class's own spelling.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/hf_export.h"
#include "core/hf_import.h"
#include "core/json_limits.h"
#include "core/ordered_json.h"
#include "nlohmann/json.hpp"

namespace wavecrest {
namespace {

using nlohmann::json;
using ordered = nlohmann::ordered_json;

// A config class as an export over it sees it: where the canonical export's keys (core/
// hf_export.cc) live in it ("a.b" = key b of its object a; of several spellings of one key, the
// one the base has, else the first), and the keys it has that a config may leave out (so that
// writing one adds nothing the class lacks). Keys of transformers' config classes (MixtralConfig,
// DbrxConfig, GPTJConfig, ...).
struct BaseClass {
  absl::string_view arch;
  std::vector<std::pair<absl::string_view, absl::string_view>> rename;
  std::vector<absl::string_view> may_add;
};

// The classes that spell the canonical export's keys as LlamaConfig does: only the keys they may
// add.
std::vector<BaseClass> LlamaSpelledClasses() {
  return {
      {"LlamaForCausalLM", {}, {"head_dim", "attention_bias"}},
      {"MistralForCausalLM", {}, {"head_dim", "sliding_window"}},
      {"Qwen2ForCausalLM", {}, {"use_sliding_window", "sliding_window", "attention_bias"}},
      {"Qwen3ForCausalLM",
       {},
       {"head_dim", "attention_bias", "use_sliding_window", "sliding_window", "layer_types"}},
      {"GemmaForCausalLM", {}, {"head_dim", "attention_bias"}},
      {"Gemma2ForCausalLM", {}, {"head_dim", "attention_bias"}},
      {"Gemma3ForCausalLM", {}, {"head_dim", "attention_bias"}},
      {"Phi3ForCausalLM", {}, {"sliding_window"}},
      {"Qwen2MoeForCausalLM",
       {},
       {"mlp_only_layers", "decoder_sparse_step", "shared_expert_intermediate_size",
        "use_sliding_window", "sliding_window"}},
      {"Qwen3MoeForCausalLM",
       {},
       {"head_dim", "attention_bias", "mlp_only_layers", "decoder_sparse_step",
        "use_sliding_window", "sliding_window", "layer_types"}},
      {"Llama4ForCausalLM", {}, {"head_dim", "interleave_moe_layer_step", "intermediate_size_mlp"}},
      {"GptOssForCausalLM", {}, {"head_dim", "layer_types", "sliding_window", "attention_bias"}},
      {"DeepseekV3ForCausalLM", {}, {"q_lora_rank", "n_group", "topk_group", "n_shared_experts"}},
      {"DeepseekV2ForCausalLM", {}, {"q_lora_rank", "n_group", "topk_group", "n_shared_experts"}},
      {"GPTNeoXForCausalLM", {}, {}},
      {"PhiForCausalLM", {}, {"num_key_value_heads"}},
      {"Starcoder2ForCausalLM", {}, {"use_bias"}},
      {"Olmo2ForCausalLM", {}, {"attention_bias"}},
      {"PhimoeForCausalLM", {}, {"attention_bias", "sliding_window"}},
      {"PhiMoEForCausalLM", {}, {"attention_bias", "sliding_window"}},
      {"GraniteForCausalLM", {}, {"attention_bias", "mlp_bias"}},
  };
}

// The classes with spellings of their own (GPT-J's n_embd, MPT's d_model, DBRX's nested configs,
// Mixtral's num_local_experts, ...).
std::vector<BaseClass> RenamingClasses() {
  return {
      {"MixtralForCausalLM",
       {{"moe_intermediate_size", "intermediate_size"}, {"num_experts", "num_local_experts"}},
       {"head_dim", "sliding_window"}},
      {"BloomForCausalLM",
       {{"hidden_size", "hidden_size"},
        {"hidden_size", "n_embed"},
        {"num_attention_heads", "n_head"},
        {"num_attention_heads", "num_attention_heads"},
        {"num_hidden_layers", "n_layer"},
        {"num_hidden_layers", "num_hidden_layers"}},
       {}},
      {"GPTJForCausalLM",
       {{"hidden_size", "n_embd"},
        {"num_attention_heads", "n_head"},
        {"num_hidden_layers", "n_layer"},
        {"intermediate_size", "n_inner"}},
       {"n_inner"}},
      {"MptForCausalLM",
       {{"hidden_size", "d_model"},
        {"num_attention_heads", "n_heads"},
        {"num_hidden_layers", "n_layers"}},
       {}},
      {"MPTForCausalLM",
       {{"hidden_size", "d_model"},
        {"num_attention_heads", "n_heads"},
        {"num_hidden_layers", "n_layers"}},
       {}},
      {"DbrxForCausalLM",
       {{"hidden_size", "d_model"},
        {"num_attention_heads", "n_heads"},
        {"num_hidden_layers", "n_layers"},
        {"num_key_value_heads", "attn_config.kv_n_heads"},
        {"intermediate_size", "ffn_config.ffn_hidden_size"},
        {"num_local_experts", "ffn_config.moe_num_experts"},
        {"num_experts_per_tok", "ffn_config.moe_top_k"}},
       {}},
      {"InternLM2ForCausalLM", {{"attention_bias", "bias"}}, {"bias"}},
      {"OlmoeForCausalLM", {{"moe_intermediate_size", "intermediate_size"}}, {"attention_bias"}},
      {"GraniteMoeForCausalLM",
       {{"moe_intermediate_size", "intermediate_size"}, {"num_experts", "num_local_experts"}},
       {}},
  };
}

const std::vector<BaseClass>& BaseClasses() {
  static const auto* classes = [] {
    auto* all = new std::vector<BaseClass>(LlamaSpelledClasses());
    for (BaseClass& c : RenamingClasses()) all->push_back(std::move(c));
    return all;
  }();
  return *classes;
}

const BaseClass* ClassOf(const std::string& arch) {
  for (const BaseClass& c : BaseClasses()) {
    if (c.arch == arch) return &c;
  }
  return nullptr;
}

// The fields of a config that describe how a run is set up, not the model's shape: a candidate
// inherits them from the base, so that an export never moves them.
ModelSpec WithRunOf(ModelSpec shape, const ModelSpec& run) {
  shape.name = run.name;
  shape.seq_length = run.seq_length;
  shape.kv_cache_length = run.kv_cache_length;
  shape.dtype = run.dtype;
  return shape;
}

absl::StatusOr<json> ExportedJson(const ModelSpec& s) {
  absl::StatusOr<std::string> text = ExportHfConfig(s);
  if (!text.ok()) return text.status();
  return json::parse(*text);
}

// Keys of `a` and `b` whose values differ (present in one only included).
std::vector<std::string> DifferingKeys(const json& a, const json& b) {
  std::vector<std::string> out;
  for (auto it = b.begin(); it != b.end(); ++it) {
    if (!a.contains(it.key()) || a[it.key()] != it.value()) out.push_back(it.key());
  }
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (!b.contains(it.key())) out.push_back(it.key());
  }
  return out;
}

std::string FirstString(const ordered& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array() && !it->empty() && (*it)[0].is_string()) return (*it)[0].get<std::string>();
  return "";
}

// The text model's class of a multimodal config (its text_config's architectures, or its
// model_type's class).
std::string TextClassOf(const ordered& text) {
  if (std::string a = FirstString(text, "architectures"); !a.empty()) return a;
  static const std::pair<const char*, const char*> kTypes[] = {
      {"llama", "LlamaForCausalLM"},         {"mistral", "MistralForCausalLM"},
      {"qwen2", "Qwen2ForCausalLM"},         {"gemma3_text", "Gemma3ForCausalLM"},
      {"llama4_text", "Llama4ForCausalLM"}};
  const std::string type = FirstString(text, "model_type");
  for (const auto& [t, a] : kTypes) {
    if (type == t) return a;
  }
  return "";
}

// The smallest period p of `types` (types[i] == types[i − p] for every i ≥ p), by the prefix
// function: linear in the layers.
size_t PeriodOf(const std::vector<std::string>& types) {
  const size_t n = types.size();
  std::vector<size_t> border(n, 0);
  for (size_t i = 1; i < n; ++i) {
    size_t k = border[i - 1];
    while (k > 0 && types[i] != types[k]) k = border[k - 1];
    if (types[i] == types[k]) ++k;
    border[i] = k;
  }
  return n == 0 ? 0 : n - border[n - 1];
}

// The base's layer_types continued to `layers` layers with its own period and phase; nullopt when
// the base lists none (its class says the pattern another way).
std::optional<ordered> ContinuedLayerTypes(const ordered& owner, int64_t layers) {
  auto it = owner.find("layer_types");
  if (it == owner.end() || !it->is_array() || it->empty()) return std::nullopt;
  std::vector<std::string> types;
  types.reserve(it->size());
  for (const ordered& t : *it) types.push_back(t.is_string() ? t.get<std::string>() : t.dump());
  const size_t period = PeriodOf(types);
  ordered out = ordered::array();
  for (int64_t i = 0; i < layers; ++i) out.push_back(types[static_cast<size_t>(i) % period]);
  return out;
}

// The object holding `path` ("a.b": b of a) under `root`, created when missing, and the last key.
std::pair<ordered*, std::string> Place(ordered& root, absl::string_view path) {
  std::vector<std::string> parts = absl::StrSplit(path, '.');
  ordered* at = &root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) at = &(*at)[parts[i]];
  return {at, parts.back()};
}

// Whether `root` has `path` ("a.b": b of a), creating nothing.
bool Has(const ordered& root, absl::string_view path) {
  const ordered* at = &root;
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    if (!at->is_object()) return false;
    auto it = at->find(std::string(part));
    if (it == at->end()) return false;
    at = &*it;
  }
  return true;
}

// Writes one differing canonical key into the base (its class's spelling), or says why not.
class Editor {
 public:
  Editor(ordered& base, const ModelSpec& spec) : base_(base), spec_(spec) {
    arch_ = FirstString(base, "architectures");
    nested_ = absl::EndsWith(arch_, "ForConditionalGeneration") && base.contains("text_config") &&
              base["text_config"].is_object();
    const std::string cls = nested_ ? TextClassOf(base["text_config"]) : arch_;
    class_name_ = cls.empty() ? arch_ : cls;
    class_ = ClassOf(class_name_);
  }

  // A class without head_dim derives it as hidden / heads: a candidate with another one cannot
  // be said over this base.
  absl::Status CheckHeadDim(const json& from) const {
    const bool has = Has(base_, "head_dim") || (nested_ && Has(base_["text_config"], "head_dim"));
    // (Latent attention's head dim is its own fields' sum, nope + rope.)
    if (has || class_ == nullptr || spec_.kv_lora_rank > 0 || MayAdd("head_dim", from)) {
      return absl::OkStatus();
    }
    if (spec_.head_dim * spec_.num_attention_heads == spec_.hidden_size) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "head_dim: the base config's class (", class_name_, ") has none and derives hidden_size / "
        "heads (", spec_.hidden_size, " / ", spec_.num_attention_heads, "), not the candidate's ",
        spec_.head_dim, ": export it without the base config"));
  }

  absl::Status Write(const std::string& key, const json& from, const json& to,
                     std::vector<std::string>& changed) {
    if (key == "layer_types") return WriteLayerTypes(changed);
    const std::string target_key = OwnKey(key);
    ordered& root = nested_ && !base_.contains(target_key) ? base_["text_config"] : base_;
    auto [owner, leaf] = Place(root, target_key);
    const bool present = owner->contains(leaf);
    if (!present && !MayAdd(target_key, from)) {
      // What a class without the field derives: the head dim hidden_size / heads, as many KV
      // heads as heads (multi-head attention).
      if (key == "head_dim" && spec_.head_dim * spec_.num_attention_heads == spec_.hidden_size) {
        return absl::OkStatus();
      }
      if ((key == "num_kv_heads" || key == "num_key_value_heads") &&
          spec_.num_kv_heads == spec_.num_attention_heads) {
        return absl::OkStatus();
      }
      return absl::FailedPreconditionError(absl::StrCat(
          target_key, ": the base config's class (", class_name_,
          ") has no such field, and the candidate changes what it says: export it without the "
          "base config"));
    }
    if (to.contains(key)) {
      (*owner)[leaf] = ordered::parse(to[key].dump());
    } else {
      owner->erase(leaf);
    }
    if (std::find(changed.begin(), changed.end(), target_key) == changed.end()) {
      changed.push_back(target_key);
    }
    return absl::OkStatus();
  }

 private:
  // The class's spelling of a canonical key.
  std::string OwnKey(const std::string& key) const {
    if (class_ == nullptr) return key;
    std::string first;
    for (const auto& [canonical, own] : class_->rename) {
      if (canonical != key) continue;
      if (Has(base_, own) || (nested_ && Has(base_["text_config"], own))) return std::string(own);
      if (first.empty()) first = std::string(own);
    }
    return first.empty() ? key : first;
  }

  // A key absent from the base may be added when its class has it: the candidate's own class
  // (the canonical export is of the base's class) or a key the class lists.
  bool MayAdd(const std::string& key, const json& from) const {
    if (from.contains("architectures") && from["architectures"].is_array() &&
        !from["architectures"].empty() && from["architectures"][0] == class_name_) {
      return true;
    }
    // Every class has these (PretrainedConfig's tie_word_embeddings); a class spelled as Llama's
    // (no rename of hidden_size) has the Llama core a nested text_config may leave to defaults.
    static const absl::string_view kEvery[] = {"vocab_size", "tie_word_embeddings"};
    static const absl::string_view kLlamaCore[] = {
        "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads"};
    if (std::find(std::begin(kEvery), std::end(kEvery), key) != std::end(kEvery)) return true;
    if (class_ == nullptr) return false;
    if (LlamaSpelled() &&
        std::find(std::begin(kLlamaCore), std::end(kLlamaCore), key) != std::end(kLlamaCore)) {
      return true;
    }
    return std::find(class_->may_add.begin(), class_->may_add.end(), key) !=
           class_->may_add.end();
  }

  bool LlamaSpelled() const {
    if (class_ == nullptr) return false;
    for (const auto& [canonical, own] : class_->rename) {
      if (canonical == "hidden_size" || canonical == "num_hidden_layers") return false;
    }
    static const absl::string_view kOthers[] = {"GPTNeoXForCausalLM", "PhiForCausalLM",
                                                "Starcoder2ForCausalLM"};
    return std::find(std::begin(kOthers), std::end(kOthers), class_->arch) == std::end(kOthers);
  }

  absl::Status WriteLayerTypes(std::vector<std::string>& changed) {
    ordered& owner =
        nested_ && !base_.contains("layer_types") ? base_["text_config"] : base_;
    std::optional<ordered> types = ContinuedLayerTypes(owner, spec_.num_layers);
    // Without a list the class's own pattern (sliding_window_pattern, Gemma 2's alternation)
    // carries over; the read-back checks that it gives the candidate's local layers.
    if (!types) return absl::OkStatus();
    owner["layer_types"] = *std::move(types);
    changed.push_back("layer_types");
    return absl::OkStatus();
  }

  ordered& base_;
  const ModelSpec& spec_;
  std::string arch_, class_name_;
  bool nested_ = false;
  const BaseClass* class_ = nullptr;
};

}  // namespace

absl::StatusOr<std::string> ExportHfConfigOver(const ModelSpec& spec,
                                               absl::string_view base_config_json,
                                               std::vector<std::string>* changed) {
  changed->clear();
  if (absl::Status st = CheckJsonLimits(base_config_json); !st.ok()) return st;
  absl::StatusOr<ModelSpec> imported = ImportHfConfig(base_config_json);
  if (!imported.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the base config: ", imported.status().message()));
  }
  // The base's shape and the candidate, exported alike: what differs is what the candidate
  // changed, in the spelling of the architecture that expresses both.
  absl::StatusOr<json> from = ExportedJson(WithDefaults(WithRunOf(*imported, spec)));
  if (!from.ok()) return from.status();
  absl::StatusOr<json> to = ExportedJson(spec);
  if (!to.ok()) return to.status();
  if ((*from)["architectures"] != (*to)["architectures"]) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the candidate needs ", (*to)["architectures"][0].get<std::string>(),
        ", not the base's architecture: export it without the base config"));
  }
  absl::StatusOr<ordered> parsed = ParseOrderedJson(base_config_json);  // linear in its keys
  if (!parsed.ok()) return parsed.status();
  ordered& base = *parsed;
  Editor editor(base, spec);
  if (absl::Status st = editor.CheckHeadDim(*from); !st.ok()) return st;
  for (const std::string& key : DifferingKeys(*from, *to)) {
    if (absl::Status st = editor.Write(key, *from, *to, *changed); !st.ok()) return st;
  }
  const std::string text = base.dump(2) + "\n";
  // Read back: the same shape as the candidate, or say what the base's architecture lost.
  absl::StatusOr<ModelSpec> back = ImportHfConfig(text);
  if (!back.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the edited config does not read back: ", back.status().message()));
  }
  absl::StatusOr<json> again = ExportedJson(WithDefaults(WithRunOf(*back, spec)));
  if (!again.ok()) return again.status();
  if (const std::vector<std::string> lost = DifferingKeys(*to, *again); !lost.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the base config's architecture (", FirstString(base, "architectures"),
        ") cannot carry the change of ", absl::StrJoin(lost, ", "),
        ": export it without the base config"));
  }
  return text;
}

}  // namespace wavecrest
