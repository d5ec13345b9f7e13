// Prices published training runs with the planner (core/parallelism.h) and reports how far each
// prediction is from what its publisher measured: median and p90 |error| by source and metric,
// the signed median (bias), the rows refused and why, and one line per row with --rows (and the
// predicted step's parts under it with --components); with
// several files, their rows together (the "all:" line is the whole, a figure per row; the "runs:"
// line counts each run once, where its publisher gave one measurement as several figures).
//
//   published_runs [--rows | --components] [--moe-host-ms MS] [--sustained-stretch X]
//                  [--max-median F --max-p90 F [--by-run]] FILE.csv...
//   published_runs --bands [--check] FILE.csv...
//
// --bands: the planner's error band by kind of run (core/parallelism.h PlannerBands): measured
// step time / predicted - 1 at p10 and p90 over the runs of all the files, one figure per run
// (its step time, else tokens/s, model TFLOP/s or MFU, all inverse to the step); a run with
// expert parallelism is "expert-parallel MoE", one with context parallelism "context parallel",
// the rest "dense". --check exits 1 when core's constants are more than a point off them.
//
// FILE is ../shared/reference/published-runs-a100.csv's schema (its README lists the columns;
// bench/data/published-runs-h100.csv, MosaicML's H100 tables, has it too; NVIDIA's DGX-H100 runs,
// bench/data/published-runs-nemo-h100.csv, add vp, ep, fsdp and config, a model's config.json under
// examples/models relative to the repository root FILE is two folders below). The GPU is the
// catalog part the row's board names (before its system's parenthesis): SXM unless it says PCIe or
// NVL, the 96 GB H100 when it says 96GB, any other by the catalog's and nvidia-smi's names (B200);
// an uncatalogued one (GH200, H800) is refused with the catalog's reason. --components prints the
// part, the attention priced and the step's parts under each row. Each run priced as its publisher
// described it (model shape, parallel layout, batch, recompute, sequence parallelism, dtype, FSDP
// sharding), the rest left to wavecrest's defaults. A published rate (MFU, model TFLOP/s) is
// compared under the publisher's own FLOP count per token, from the predicted tokens/s: MosaicML
// 6N + 12·L·h·s (N with embeddings), Korthikanti et al. eq. 7 72·L·h²(1 + s/6h + v/12hL) (also
// Megatron-LM's own count for the MHA, 4h-MLP models of its weak-scaling table,
// bench/data/published-runs-megatron-h100.csv), Narayanan et al. eq. 3 96·L·h²(1 + s/6h + v/16hL)
// (which counts the recomputation's forward). Unknown tensor/pipeline splits take t = 8 (one node)
// and p from the stated model-parallel size. Nothing of the planner is fitted to these runs: a
// benchmark, whose output scripts/bench.sh commits under bench/results/.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/analysis.h"
#include "core/hf_import.h"
#include "core/model_stats.h"
#include "core/parallelism.h"
#include "core/units.h"

namespace wavecrest {
namespace {

// A CSV line split into fields (double quotes around a field with commas; "" inside is ").
std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

using Row = std::map<std::string, std::string>;

int64_t Int(const Row& r, const char* key, int64_t fallback = 0) {
  int64_t v = 0;
  auto it = r.find(key);
  return it != r.end() && absl::SimpleAtoi(it->second, &v) ? v : fallback;
}

std::string SourceOf(const Row& r) { return r.at("id").substr(0, r.at("id").find('_')); }

// The run as its publisher described it; an empty status message when it can be priced.
struct Priced {
  ModelSpec spec;
  RunConfig run;
  std::string why_not;
};

// The value of a column the row may not have ("" when absent).
std::string Col(const Row& r, const char* key) {
  auto it = r.find(key);
  return it == r.end() ? "" : it->second;
}

// A row's `config` (a Hugging Face config.json under examples/models, relative to the repository
// root `root`): the model's shape instead of the h/a/L/ffn/vocab columns.
absl::StatusOr<ModelSpec> ConfigShape(const std::string& root, const std::string& config) {
  std::ifstream in(root + "/" + config);
  if (!in) return absl::NotFoundError("cannot read config " + config);
  std::stringstream text;
  text << in.rdbuf();
  return ImportHfConfig(text.str());
}

// The NVIDIA release (NeMo or Megatron-Bridge container) a row's runs came in, as YYMMPP (240700
// for 24.07, 240301 for 24.03.01, 260201 for 26.02.01): the first "YY.MM" (".PP" optional) of its
// source text, else its id's second field (YYMM or YYMMPP); 0 when neither says.
int ReleaseOf(const Row& r) {
  const std::string& src = r.at("source");
  const auto digit = [&](size_t i) {
    return i < src.size() && absl::ascii_isdigit(static_cast<unsigned char>(src[i]));
  };
  const auto two = [&](size_t i) { return 10 * (src[i] - '0') + (src[i + 1] - '0'); };
  for (size_t i = 0; i + 5 <= src.size(); ++i) {
    const bool starts = i == 0 || !(digit(i - 1) || src[i - 1] == '.');
    const bool ends = !digit(i + 5);
    if (starts && ends && digit(i) && digit(i + 1) && src[i + 2] == '.' && digit(i + 3) &&
        digit(i + 4)) {
      const bool patch = i + 5 < src.size() && src[i + 5] == '.' && digit(i + 6) &&
                         digit(i + 7) && !digit(i + 8);
      return 10000 * two(i) + 100 * two(i + 3) + (patch ? two(i + 6) : 0);
    }
  }
  const std::vector<std::string> fields = absl::StrSplit(r.at("id"), '_');
  int id = 0;
  if (fields.size() > 1 && absl::SimpleAtoi(fields[1], &id)) {
    if (fields[1].size() == 4) return 100 * id;
    if (fields[1].size() == 6) return id;
  }
  return 0;
}

// How NVIDIA's NeMo and Megatron-Bridge performance recipes run (Megatron-Core), and Megatron-LM's
// own H100 weak-scaling runs (README: --overlap-grad-reduce --overlap-param-gather, so the
// distributed optimizer, and --tp-comm-overlap): the distributed
// optimizer (ZeRO 1) or FSDP where the table says so, the interleaved schedule of the table's VP,
// expert parallelism of its EP, sequence parallelism with tensor parallelism (the generator's
// seq_parallel column); Megatron-Bridge's perf recipes reduce gradients in BF16
// (_benchmark_common: grad_reduce_in_fp32 = False).
void NvidiaRecipe(const Row& r, const std::string& source, ModelSpec& s, RunConfig& run) {
  int64_t ep = Int(r, "ep", 1), fsdp = Int(r, "fsdp", 0);
  s.expert_parallel = std::max<int64_t>(ep, 1);
  // Their MoE recipes run whole experts (expert_tensor_parallel_size = 1: perf_recipes/deepseek/
  // common.py, gpt_oss/*, qwen/*/qwen3_moe.py).
  if (s.num_experts > 0) s.expert_tensor_parallel = 1;
  run.zero_stage = fsdp > 0 ? 3 : 1;
  if (source == "mbridge") run.gradient_bytes = 2;
  // Their recipes overlap the tensor-parallel collectives with the GEMMs (tp_comm_overlap, on
  // with tensor parallelism: priced as hidden) and the gradient reduce-scatter and weight
  // all-gather with compute (overlap_grad_reduce, overlap_param_gather: recipes/common.py),
  // priced as RunConfig::overlap_grad_reduce says.
  if (s.tensor_parallel > 1) run.tp_overlap = 1;
  run.overlap_grad_reduce = true;
  // Megatron-FSDP (use_megatron_fsdp, the FSDP column) overlaps its gathers and reduce-scatters
  // with the layers by the same two flags: priced with zero3_prefetch (PyTorch FSDP's published
  // runs measure otherwise, RunConfig::zero3_prefetch).
  run.zero3_prefetch = fsdp > 0;
  // Megatron-Bridge's FP8 precision configs keep and gather the weights in FP8
  // (src/megatron/bridge/training/mixed_precision.py, bf16_with_fp8_delayed_scaling_mixed and
  // bf16_with_fp8_current_scaling_mixed: fp8_param_gather = True, at every release tag from
  // v0.1.0rc4 to v0.5.0; the perf configs take them through get_precision_config/_perf_precision).
  if (source == "mbridge" && s.dtype == DType::kFp8E4M3) run.fp8_param_gather = true;
  // Their experts run Megatron-Core's TEGroupedMLP without fused MoE kernels: biased experts'
  // output bias added expert by expert in FP32, a clamped GLU's clamp outside the fused
  // activation (core/elementwise_cost.h, MoeUnfusedOpsBytesPerToken; the code at the Megatron-LM
  // submodule commits of NeMo 25.11, 26.02 and 26.04; the loop was vectorised in 883533e049,
  // 2026-08-14, after every release here). Of these rows only GPT-OSS-120B's experts have either.
  run.moe_unfused_ops = true;
  // NeMo's 24.03.01 and 24.07 runs (releases up to 24.07: ReleaseOf) came through
  // NeMo-Framework-Launcher (most of the 24.07
  // table's layouts are its launcher_scripts/conf/training configs' at 24.07: GPT-3 5B and 20B,
  // Llama 2 7B, 13B and 70B, Llama 3 8B's CP 2 at 8k, Nemotron-22B), whose config turns Transformer
  // Engine's cuDNN attention off for every job (launcher_scripts/conf/config.yaml at 24.03.01 and
  // 24.07: "NVTE_FUSED_ATTN: 0 # Disable cudnn FA until we've tested it more"), so their
  // DotProductAttention ran flash-attn 2: FlashAttention-2, priced at its published rates. Had
  // 24.03.01 run cuDNN, its image's would have been 8.9.x (the Dockerfile builds on
  // nvcr.io/nvidia/pytorch:24.01-py3, older than cuDNN 9.0.0: NVIDIA's redist index lists 8.9.7.29
  // on 2023-12-05 and 9.0.0 on 2024-02-07), whose Hopper flash attention cuDNN 9.0.0's release
  // notes make "up to 50%" slower than 9.0's: the same class (Transformer Engine's documentation
  // measures cuDNN 9 at 1.35x-1.59x flash-attn 2.4.2 on an H100, attention.ipynb at v1.8).
  // From 24.09 the launcher's config no longer turns it off (a6490ffe "(1) Enable cuDNN FA",
  // 2024-07-15, and 04b8d098 "enable fused attention", 2024-08-29: in tag 24.09, not in 24.07):
  // later NeMo releases, and a row whose release is not stated, run cuDNN's, the default.
  const int release = ReleaseOf(r);
  if (source == "nemo" && release > 0 && release < 240800) s.attention = Attention::kFlash2;
}

// The expert-parallel knobs of Megatron-Bridge's H100 perf configs for the release a row names
// (ReleaseOf; github.com/NVIDIA-NeMo/Megatron-Bridge, scripts/performance at the tag of that
// release, as docs/releases/software-versions.md pairs them: v0.1.0rc4 for 25.09, v0.2.0 for
// 25.11, v0.3.0 for 26.02, v0.3.1 for 26.02.01 (tagged 2026-03-20, the day before the
// "patch container data" commit cfeddcd94 added 26.02.01's table), v0.4.0 for 26.04, v0.5.0 for
// 26.06). The table gives the layout; the config what the table does not say:
// - DeepSeek-V3 (25.09, run_script.py): DeepEP (the flex dispatcher), the all-to-all overlap
//   (A2A_1F1B), and no overlap_grad_reduce on H100. Of its recompute_modules ["mla_up_proj",
//   "mlp"] the first is priced (RunConfig::recompute_mla_up_proj, since 2026-11-29); "mlp", the
//   dense layers' MLP, is left out.
// - Qwen3-235B-A22B: moe_a2a_overlap=True from 25.11 (v0.2.0 to v0.5.0; not in 25.09's YAML).
// - Qwen3-30B-A3B: moe_a2a_overlap=True in 25.11 and 26.02 only (v0.2.0, v0.3.0; PP 2 / EP 8),
//   with DeepEP for FP8 in 26.02; from 26.02.01 the flex dispatcher (HybridEP) and no overlap
//   (f29a269f8, "Update Qwen3 30B H100 Base Configs with HybridEP", in v0.3.1: EP 16, no PP; the
//   26.02.01 table still gives 26.02's PP 2 / VP 12 / EP 8, priced as given).
// - Nemotron 3 Nano (26.02.01 to 26.06): HybridEP (the flex dispatcher), no overlap; its FP8
//   recompute_modules recompute the MoE layers (recompute_moe).
// - GPT-OSS-120B: neither (the alltoall dispatcher, no overlap; its recompute_modules
//   ["layernorm", "moe_act"] recompute elementwise work only and are left out).
// - Rows their table marks "(tokendrop)" (25.09's Qwen3 rows on H100: scripts/performance/
//   run_script.py at v0.1.0rc4 applies apply_moe_token_drop to both Qwen3 recipes): Megatron-
//   Bridge's token drop, moe_expert_capacity_factor 1.0 with moe_pad_expert_input_to_capacity
//   (src/megatron/bridge/training/utils/moe_token_drop.py's defaults): static shapes, no host
//   wait (ModelSpec::moe_capacity_factor).
// - A row whose source names its dispatcher backend (HybridEP, DeepEP: the flex dispatcher) or
//   its overlap ("EP overlap on"/"off": Megatron-Bridge's MoE overlap skill, a controlled
//   comparison of one configuration) takes them as named.
void NvidiaMoeRecipe(const Row& r, const std::string& source, ModelSpec& s, RunConfig& run) {
  if (s.num_experts == 0) return;
  if (absl::StrContains(Col(r, "quote"), "(tokendrop)")) s.moe_capacity_factor = 1.0;
  const int yymm = ReleaseOf(r);
  const std::string model = absl::AsciiStrToLower(r.at("model"));
  if (absl::StrContains(model, "deepseek")) {
    // 25.09's recipe trains its multi-token prediction module (deepseek_v3_pretrain_config's
    // mtp_num_layers 1; on H100 the layout Et|(tt|)*30mL puts it and the loss in the last chunk);
    // later tables name their rows "(w/o MTP)".
    // NeMo 2's recipes train it too (use_mtp=True: DgxcRecipe's rows). Every NVIDIA DeepSeek-V3
    // recipe recomputes the MLA up-projections; the dispatcher, overlap and gradient reduce below
    // are Megatron-Bridge's H100 config (DGX Cloud's rows state their own).
    if (!absl::StrContains(Col(r, "quote"), "w/o MTP")) run.mtp_layers = 1;
    run.recompute_mla_up_proj = true;
    if (source == "mbridge") {
      run.ep_dispatcher = EpDispatcher::kFlex;
      run.ep_overlap = true;
      run.overlap_grad_reduce = false;
    }
  } else if (absl::StrContains(model, "qwen3-235b")) {
    run.ep_overlap = yymm >= 251100;
  } else if (absl::StrContains(model, "qwen3-30b")) {
    run.ep_overlap = yymm >= 251100 && yymm < 260201;
    if (yymm >= 260200 && s.dtype == DType::kFp8E4M3) run.ep_dispatcher = EpDispatcher::kFlex;
  } else if (absl::StrContains(model, "nemotron-3-nano")) {
    // Every release's H100 config (nemotron_3_nano_workload_base_configs.py at v0.3.1,
    // nemotron_3_workload_base_configs.py at v0.4.0 and v0.5.0): HybridEP, and for FP8
    // recompute_modules ["moe", "layernorm", "core_attn", "moe_act"]: the MoE layers' forward
    // again (recompute_moe); the norms' and the activation's are elementwise work and the six
    // attention layers' core is left out (flash attention's recomputation is not priced).
    run.ep_dispatcher = EpDispatcher::kFlex;
    run.recompute_moe = s.dtype == DType::kFp8E4M3;
  }
  const std::string& src = r.at("source");
  if (absl::StrContains(src, "HybridEP") || absl::StrContains(src, "DeepEP")) {
    run.ep_dispatcher = EpDispatcher::kFlex;
  }
  if (absl::StrContains(src, "EP overlap on")) run.ep_overlap = true;
  if (absl::StrContains(src, "EP overlap off")) run.ep_overlap = false;
}

// What a DGX Cloud row's source says beyond NVIDIA's other Megatron-Core runs
// (make_dgxc_h100_runs.py writes it from the README and, for the MFU examples of v25.07 on, from
// the NeMo perf script at the commit the tag pins: EXAMPLE_NOTES):
// - "ETP as TP": tables without an ETP column (NeMo 24.09 to 25.04) ran Megatron-Core's default
//   of the time, the experts split over the tensor-parallel ranks as the dense MLP is
//   (expert_tensor_parallel_size arrived in core_r0.10.0); the 25.05 table's ETP 1 keeps them
//   whole.
// - "alltoall", "token drop" (MegatronTokenDropCallback: capacity factor 1.0, padded), "TP comm
//   overlap off" (the recipe's MegatronCommOverlapCallback(tp_comm_overlap=False)) as they say;
//   "recompute M,N,..." (the table's RecomputeModule column, Megatron-Core's recompute_modules):
//   "moe" and "mla_up_proj" priced (RunConfig::recompute_moe, recompute_mla_up_proj), the rest
//   ("mlp" of the dense layers, "core_attn") left out.
// - DeepSeek-V3 through NeMo 2 (25.04.01, 25.07.01): gradients reduced in BF16
//   (grad_reduce_in_fp32 False); the gradient reduce and weight gather overlapped as NvidiaRecipe
//   has them (the callback's default with data parallelism).
void DgxcRecipe(const Row& r, ModelSpec& s, RunConfig& run) {
  const std::string& src = r.at("source");
  if (absl::StrContains(src, "ETP as TP")) s.expert_tensor_parallel = 0;
  if (absl::StrContains(src, "alltoall")) run.ep_dispatcher = EpDispatcher::kAllToAll;
  if (absl::StrContains(src, "token drop")) s.moe_capacity_factor = 1.0;
  if (absl::StrContains(src, "TP comm overlap off")) run.tp_overlap = 0;
  if (const size_t at = src.find("recompute "); at != std::string::npos) {
    const std::string modules = src.substr(at + 10, src.find_first_of(";)", at) - at - 10);
    for (absl::string_view m : absl::StrSplit(modules, ',')) {
      if (m == "moe") run.recompute_moe = true;
      if (m == "mla_up_proj") run.recompute_mla_up_proj = true;
    }
  }
  if (absl::StrContains(absl::AsciiStrToLower(r.at("model")), "deepseek")) run.gradient_bytes = 2;
}

// How NeMo AutoModel's benchmark recipes run (PyTorch; github.com/NVIDIA-NeMo/Automodel: the MoE
// rows' examples/benchmark/configs/*_te_deepep.yaml at 89e3a9fdd, the commit that published them,
// and the Llama row's examples/llm_pretrain/custom_llama3_1_70b_pretrain_benchmark_8nodes.yaml at
// 2013a4dd6): FSDP2 over the table's FSDP ranks (ZeRO 3), its gathers hidden under the layers only
// where the table names fsdp2_prefetch (elsewhere the planner's default, as PyTorch FSDP's other
// published runs measure); gradients reduced in FP32 on the MoE path (moe/parallelizer.py's
// apply_fsdp, MixedPrecisionPolicy reduce_dtype float32) and in BF16 on the dense one (the FSDP2
// manager's policy); whole experts over DeepEP or HybridEP (the flex dispatcher); the table's VP
// as PyTorch's interleaved 1F1B schedule. Attention: Transformer Engine's (cuDNN on Hopper) for
// "TE"; FlexAttention (the GPT-OSS rows) and PyTorch's SDPA (the Llama row, whose backend order
// puts FlashAttention-2 first: pytorch/pytorch#138907) priced as FlashAttention-2's class (on an
// H100 FlexAttention's forward measured 5-10% slower than SDPA's FlashAttention-2:
// co-me-tokens/CoMe#5), and its context parallelism PyTorch's ring (CpRing::kTorch).
void AutoModelRecipe(const Row& r, ModelSpec& s, RunConfig& run) {
  s.expert_parallel = std::max<int64_t>(Int(r, "ep", 1), 1);
  if (s.num_experts > 0) {
    s.expert_tensor_parallel = 1;
    run.ep_dispatcher = EpDispatcher::kFlex;
  } else {
    run.gradient_bytes = 2;
  }
  run.zero_stage = 3;
  const std::string& src = r.at("source");
  run.zero3_prefetch = absl::StrContains(src, "fsdp2_prefetch");
  if (absl::StrContains(src, "FlexAttn") || absl::StrContains(src, "SDPA")) {
    s.attention = Attention::kFlash2;
  }
  // Context parallelism over SDPA is PyTorch's context_parallel (components/distributed/
  // cp_utils.py's create_context_parallel_ctx: PyTorch's default rotate method); TE's attention
  // takes TE's ring.
  if (absl::StrContains(src, "SDPA")) run.cp_ring = CpRing::kTorch;
}

// How Meta ran Llama 3 405B's pre-training (arXiv:2407.21783 sec. 3.3;
// bench/data/published-runs-llama3-h100.md): the row's VP (8: one layer per model chunk, sec.
// 3.3.2) as the interleaved schedule, over RoCE at 400 Gb/s per GPU (sec. 3.3.1). Sequence
// parallelism, recomputation and offload are not stated and the run's memory decides them: the
// planner's plan chooses them (PlanLayout, as `analyze --plan`), and the ZeRO stage with them. It
// takes ZeRO 1, the traffic of Meta's FSDP: the optimizer state and the FP32 gradients sharded
// (accumulated over the micro-batches, then reduce-scattered), the gathered weights kept from
// forward to backward, one reduce-scatter and one all-gather a step.
void MetaLlama3Recipe(RunConfig& run) {
  run.network = "roce-400g";
  run.plan = true;
}

// How a publisher's MFU and TFLOP/s count attention's s × s products, where the planner's model
// FLOPs stand for its count (the sources without a formula of their own here; see Price):
// - nemo: NeMo 24.03-24.07 counted the whole product (nemo/utils/flops_formulas.py halves it for
//   causal masks only from 6251117f4c, 2025-08-09; published-runs-nemo-h100.md).
// - mbridge: Megatron-Bridge counts the causal half (its flop_utils: "only half of the attention
//   matrix is non-zero", seq_length / hidden_size / 2, as Megatron-LM's training.py does since
//   2025); its rows are tokens/s, which no count changes.
// - automodel: step times, which no count changes.
// - llama3: the Llama 3 paper does not say; the whole product, the planner's default
//   (published-runs-llama3-h100.md: at 8k tokens the two differ by 1.4% on these rows).
FlopCount PublisherFlopCount(const std::string& source) {
  return source == "mbridge" ? FlopCount::kCausal : FlopCount::kFull;
}

// How TorchTitan ran its Llama 3.1 H100 benchmarks (github.com/pytorch/torchtitan at 9dec370,
// benchmarks/llama3_h100_202412_torchtitan.md; bench/data/published-runs-torchtitan-h100.md):
// FSDP2 over the FSDP and context-parallel ranks (ZeRO 3), each layer's all-gather issued ahead of
// its compute on its own stream (FSDP2's implicit prefetch: zero3_prefetch), weights resharded
// after forward unless pipelined (its "default" reshard_after_forward_policy = not pp_enabled),
// gradients reduced in FP32 (training.mixed_precision_reduce); PyTorch's SDPA, whose backend
// order puts FlashAttention-2 first (FlashAttention-2's class); Float8 as FP8 linears, the 405B's
// weights gathered in float8 (its train_configs/llama3_405b.toml: enable_fsdp_float8_all_gather);
// AsyncTP as the share of the tensor-parallel collectives its published pairs hid
// (kAsyncTpHiddenShare); the interleaved schedule's two stages per rank; 400 Gb/s of RDMA per
// GPU (RoCE). The same for the runs others submitted to its benchmarks folder (H200s): what the
// page says each ran, the rest torchtitan's configs at the commit it names.
void TorchTitanRecipe(const Row& r, ModelSpec& s, RunConfig& run) {
  run.zero_stage = 3;
  run.zero3_prefetch = true;
  run.reshard_after_forward = s.pipeline_parallel <= 1;
  s.attention = Attention::kFlash2;
  const std::string& src = r.at("source");
  if (absl::StrContains(src, "AsyncTP") && s.tensor_parallel > 1) {
    run.tp_overlap = kAsyncTpHiddenShare;
  }
  // Its tensor-parallel plan shards the norms over the sequence (SequenceParallel on
  // attention_norm, ffn_norm and norm: parallelisms/parallelize_llama.py at 9dec370).
  run.sequence_parallel = s.tensor_parallel > 1;
  // Float8 weights all-gathered in float8: the 405B's config enables it, other rows say so.
  if (s.dtype == DType::kFp8E4M3 && (absl::StrContains(r.at("model"), "405B") ||
                                     absl::StrContains(src, "Float8 all-gather"))) {
    run.fp8_param_gather = true;
  }
  // Float8 with rowwise scales (the June 2025 page's "float8 rowwise"): torchao's rowwise recipe,
  // its tensor parallelism in 16 bits (Fp8Recipe).
  if (absl::StrContains(src, "rowwise")) run.fp8_recipe = Fp8Recipe::kRowwise;
  run.network = "roce-400g";
  // Its context parallelism is PyTorch's context_parallel with torchtitan's default rotate
  // method, allgather (experimental.context_parallel_rotate_method in config_manager.py at
  // 9dec370), over the query heads' K and V (CpRing::kTorch).
  run.cp_ring = CpRing::kTorch;
  // The page's "selective activation checkpointing" is torchtitan's default option at 9dec370,
  // selective_ac_option = 'op' (train_configs/llama3_8b.toml): the op-level policy.
  if (run.recompute == Recompute::kSelective) run.recompute = Recompute::kOp;
  // Without torch.compile its Llama block runs eager, each elementwise op a kernel; with it the
  // rotary embedding still does: its apply_rotary_emb multiplies complex numbers
  // (torch.view_as_complex, models/llama/model.py at 9dec370, models/llama3/model.py at e7c0cae
  // and 820504e), for which TorchInductor generates no code (pytorch/torchtitan#15).
  run.eager = !absl::StrContains(src, "torch.compile");
  run.rope_unfused = true;
  // Its loss, cross_entropy over `pred.flatten(0, 1).float()`, ran uncompiled until 2025-04:
  // train.py at 9dec370 has the loss's torch.compile commented out (e8977b0, 2024-12-18, "turning
  // off compile on loss function"), compiled with the model again from bbb1b61 (2025-04-02,
  // build_loss_fn). The December 2024 page and torchao's March 2025 runs (torchtitan 0.0.2)
  // predate it; the June 2025 pages' runs compiled it.
  const std::string& id = r.at("id");
  if (run.eager || absl::StartsWith(id, "torchtitan_2412_") ||
      absl::StartsWith(id, "torchtitan_2503ao_")) {
    run.loss = LossKernel::kEager;
  }
}

Priced Describe(const Row& r, const std::string& root) {
  Priced p;
  const std::string source = SourceOf(r);
  ModelSpec& s = p.spec;
  if (const std::string config = Col(r, "config"); !config.empty()) {
    absl::StatusOr<ModelSpec> shape = ConfigShape(root, config);
    if (!shape.ok()) {
      p.why_not = std::string(shape.status().message());
      return p;
    }
    s = *shape;
  }
  s.name = r.at("id");
  const bool shaped = !Col(r, "config").empty();
  if (!shaped) {
    s.hidden_size = Int(r, "h");
    s.num_attention_heads = Int(r, "a");
    s.num_kv_heads = Int(r, "a_kv", s.num_attention_heads);
    s.num_layers = Int(r, "L");
    s.ffn_hidden_size = Int(r, "ffn", 4 * s.hidden_size);
    s.vocab_size = Int(r, "vocab");
    s.mlp = Mlp::kGelu;
    s.norm = Norm::kLayerNorm;
  }
  s.seq_length = Int(r, "seq");
  s.micro_batch_size = Int(r, "micro_batch", 1);
  const std::string dtype = r.at("dtype");
  s.dtype = dtype == "mixed16"                   ? DType::kFp16
            : absl::StrContains(dtype, "fp8")    ? DType::kFp8E4M3
                                                 : DType::kBf16;
  if (source == "mpt") {
    // llm-foundry's MPT with tied embeddings; the table's NumParams, L(12h² + 13h) + Vh + sh + 2h,
    // counts biased linears and learned positions of the sequence length. Its attention is
    // flash-attn 1.0's Triton kernel: the A100 tables were run by scripts/train/benchmarking/
    // sweep.sh (300cc5c58, torch 1.13.1 image; the 80 GB table re-run in b2a43a147), which never
    // sets --attn_impl, and submit_benchmarks.py defaults it to 'triton' (model
    // attn_impl = triton -> flash_attn.flash_attn_triton, flash-attn==1.0.3.post0 in setup.py).
    // Rows that name their attn_impl (bench/data/published-runs-h100.csv) say which: "flash" is
    // flash-attn 2 there.
    s.attention = absl::StrContains(r.at("source"), "attn_impl flash") ? Attention::kFlash2
                                                                        : Attention::kFlash1Triton;
    s.bias = Bias::kAll;
    s.tied_embeddings = true;
    s.learned_position_embeddings = s.seq_length;
  } else if (source == "kort22" || source == "nar21") {
    // Megatron-LM GPT of 2021-2022: unfused attention, biases, learned positions.
    s.attention = Attention::kUnfused;
    s.bias = Bias::kAll;
    s.learned_position_embeddings = s.seq_length;
  } else if (shaped) {
    // The model's own config.json says its shape; the run is today's Megatron-Core stack.
    s.attention = Attention::kFlash;
  } else {
    // Any other source: today's Megatron-Core / NeMo stack (Transformer Engine's fused attention,
    // cuDNN on Hopper) and the model family its name says. Llama-like (Llama, Mistral, Mixtral,
    // Qwen, Grok-1): gated MLP of the row's ffn, RMSNorm, no biases, rotary positions; Mixtral
    // 8x7B and 8x22B and Grok-1 (its gated GELU MLP has a SwiGLU's GEMMs): 8 experts, 2 per
    // token. Nemotron (NeMo's NemotronConfig): a squared-ReLU MLP (the
    // GEMMs of a GELU one), LayerNorm, no biases, rotary positions. Otherwise GPT-3 style: GELU,
    // LayerNorm, biases, learned positions.
    s.attention = Attention::kFlash;
    const std::string model = absl::AsciiStrToLower(r.at("model"));
    const bool llama_like = absl::StrContains(model, "llama") ||
                            absl::StrContains(model, "mistral") ||
                            absl::StrContains(model, "mixtral") || absl::StrContains(model, "qwen") ||
                            absl::StrContains(model, "grok");
    if (llama_like) {
      s.mlp = Mlp::kSwiglu;
      s.norm = Norm::kRmsNorm;
      s.bias = Bias::kNone;
      if (absl::StrContains(model, "mixtral") || absl::StrContains(model, "grok")) {
        s.num_experts = 8;
        s.experts_per_token = 2;
      }
    } else if (absl::StrContains(model, "nemotron")) {
      s.bias = Bias::kNone;
    } else {
      s.bias = Bias::kAll;
      s.learned_position_embeddings = s.seq_length;
    }
  }
  int64_t tp = Int(r, "tp"), pp = Int(r, "pp");
  const int64_t gpus = Int(r, "gpus");
  if (tp == 0 && pp == 0) {
    // "model-parallel size 96" in the source, else Korthikanti's t8 p35 for 530B.
    int64_t mp = 0;
    const std::string& src = r.at("source");
    if (const size_t at = src.find("model-parallel size "); at != std::string::npos) {
      (void)absl::SimpleAtoi(src.substr(at + 20, src.find_first_not_of("0123456789", at + 20) -
                                                     (at + 20)),
                             &mp);
    }
    if (mp == 0 && absl::StrContains(r.at("model"), "530")) mp = 280;
    tp = mp > 0 ? 8 : 1;
    pp = mp > 0 ? mp / 8 : 1;
  }
  s.tensor_parallel = std::max<int64_t>(tp, 1);
  s.pipeline_parallel = std::max<int64_t>(pp, 1);
  s.context_parallel = std::max<int64_t>(Int(r, "cp", 1), 1);
  RunConfig& run = p.run;
  run.num_gpus = gpus;
  run.global_batch = Int(r, "global_batch");
  std::string recompute = r.at("recompute");
  // Narayanan 2021 leaves Table 2's recomputation unstated; its FLOP count, eq. (3), "assumes
  // activation recomputation" (the rows' TFLOP/s count the recomputed forward), as Table 1 does.
  if (recompute.empty() && source == "nar21") recompute = "full";
  run.recompute = absl::StartsWith(recompute, "full")        ? Recompute::kFull
                  : absl::StartsWith(recompute, "selective") ? Recompute::kSelective
                                                             : Recompute::kNone;
  run.sequence_parallel = r.at("seq_parallel") == "yes";
  // The interleaved schedule of the row's VP (virtual stages per rank; 1 where it has none) ...
  run.interleave = std::max<int64_t>(Int(r, "vp", 1), 1);
  // ... and Megatron's where the paper used it (175B, 530B: 3 stages per rank).
  if (source == "kort22" && s.pipeline_parallel > 1 && !absl::StrContains(r.at("model"), "1T")) {
    run.interleave = 3;
  }
  // Megatron-LM's pipeline-send overlap arrived in 2023 (f9283c5a8a, 2023-05-31): not in the
  // 2021-2022 papers' runs.
  if (source == "kort22" || source == "nar21") run.pp_overlap = false;
  const std::string& src = r.at("source");
  if (source == "nemo" || source == "mbridge" || source == "mlm2407" || source == "dgxc") {
    NvidiaRecipe(r, source, s, run);
    NvidiaMoeRecipe(r, source, s, run);
  }
  if (source == "dgxc") DgxcRecipe(r, s, run);
  if (source == "automodel") AutoModelRecipe(r, s, run);
  if (source == "llama3") MetaLlama3Recipe(run);
  if (source == "torchtitan") TorchTitanRecipe(r, s, run);
  run.flop_count = PublisherFlopCount(source);
  if (absl::StrContains(src, "FULL_SHARD") || absl::StrContains(src, "ZeRO-3")) {
    run.zero_stage = 3;
  } else if (absl::StrContains(src, "SHARD_GRAD_OP")) {
    run.zero_stage = 2;
  }
  return p;
}

// The board a row's `gpu` text names: what comes before its system's parenthesis ("H100-80GB
// SXM (DGX H100; NVLink 4 ...)" -> "H100-80GB SXM").
std::string BoardOf(const Row& r) {
  const std::string& gpu = r.at("gpu");
  return std::string(absl::StripAsciiWhitespace(gpu.substr(0, gpu.find('('))));
}

// The catalog's GPU for the row's `gpu` text; empty when there is none.
std::string GpuOf(const Row& r) {
  // The board's form factor and memory, NVL as a word (not NVLink's prefix).
  const std::string board = absl::AsciiStrToUpper(BoardOf(r));
  const std::vector<std::string> words =
      absl::StrSplit(board, absl::ByAnyChar(" -_,;/"), absl::SkipEmpty());
  const auto has = [&](absl::string_view w) {
    return std::find(words.begin(), words.end(), w) != words.end();
  };
  const bool pcie = absl::StrContains(board, "PCIE"), nvl = has("NVL");
  const bool gb40 = absl::StrContains(board, "40GB");
  if (absl::StrContains(board, "A100")) {
    if (pcie) return gb40 ? "a100-pcie-40gb" : "a100-pcie-80gb";
    return gb40 ? "a100-sxm-40gb" : "a100-sxm-80gb";
  }
  // The GH200's GPU is not catalogued (the catalogue says why), and its name holds "H200".
  if (absl::StrContains(board, "GH200")) return "";
  if (absl::StrContains(board, "H100")) {
    if (nvl) return "h100-nvl";
    if (pcie) return "h100-pcie";
    return absl::StrContains(board, "96GB") ? "h100-sxm-96gb" : "h100-sxm";
  }
  if (absl::StrContains(board, "H200")) return nvl ? "h200-nvl" : "h200";
  // Any other GPU by the catalogue's names and nvidia-smi's (B200, L40S, V100, ...).
  absl::StatusOr<const GpuSpec*> gpu = FindGpu(board);
  return gpu.ok() ? (*gpu)->name : "";
}

// The publisher's FLOPs per token (see the header).
double PublishedFlopsPerToken(const Row& r, const ModelSpec& s, const ParamCounts& params) {
  const double h = static_cast<double>(s.hidden_size), L = static_cast<double>(s.num_layers);
  const double seq = static_cast<double>(s.seq_length), v = static_cast<double>(s.vocab_size);
  const std::string source = SourceOf(r);
  if (source == "mpt") {
    const double n = L * (12 * h * h + 13 * h) + v * h + seq * h + 2 * h;  // the table's NumParams
    return 6 * n + 12 * L * h * seq;
  }
  (void)params;
  if (source == "nar21") return 96 * L * h * h * (1 + seq / (6 * h) + v / (16 * h * L));
  return 72 * L * h * h * (1 + seq / (6 * h) + v / (12 * h * L));
}

struct Outcome {
  Outcome(double p = 0, std::string why = "") : predicted(p), why_not(std::move(why)) {}
  double predicted = 0;
  std::string why_not;
  std::string components;  // the step's parts, seconds (--components)
  bool fits = true;        // the planner's memory estimate of the layout as published fits
};

// The predicted step's parts in one line: what --components prints beside a row (with the
// expert-parallel dispatcher and overlap of a row with expert parallelism).
std::string Components(const StepBreakdown& b, const ModelSpec& spec, const RunConfig& run,
                       const GpuSpec& gpu) {
  const std::string ep =
      spec.num_experts > 0 && spec.expert_parallel > 1
          ? absl::StrCat(run.ep_dispatcher == EpDispatcher::kFlex ? ", flex" : ", alltoall",
                         run.ep_overlap ? " dispatch, overlapped" : " dispatch")
          : "";
  return absl::StrFormat(
      "on %s, %s attention%s; step %.3f s: compute %.3f recompute %.3f tp %.3f ep %.3f moe-host %.3f "
      "cp %.3f offload %.3f bubble %.3f pp %.3f dp %.3f optimizer %.3f; m %d; memory %.1f GiB of "
      "%.0f%s (weights %.1f, gradients %.1f, optimizer %.1f, activations %.1f, gathered %.1f), %s",
      gpu.name, AttentionName(spec.attention), ep, b.step_s, b.compute_s, b.recompute_s, b.tp_comm_s,
      b.ep_comm_s, b.moe_host_s, b.cp_comm_s, b.offload_s, b.pp_bubble_s, b.pp_comm_s, b.dp_comm_s,
      b.optimizer_s, b.microbatches, b.memory.total_bytes / static_cast<double>(kGiB),
      b.memory.capacity_bytes / static_cast<double>(kGiB),
      b.memory.stage > 0 ? absl::StrFormat(" on stage %d", b.memory.stage) : "",
      b.memory.weights_bytes / kGiB, b.memory.gradients_bytes / kGiB,
      b.memory.optimizer_bytes / kGiB, b.memory.activations_bytes / kGiB,
      b.memory.gathered_bytes / kGiB, b.memory.fits ? "fits" : "does NOT fit");
}

// The row's metric from the priced step.
Outcome PriceMetric(const Row& r, const ModelSpec& spec, const GpuSpec& gpu, const Analysis& a,
                    const StepBreakdown& step) {
  const StepBreakdown* b = &step;
  const std::string metric = r.at("metric");
  const double rate = b->tokens_per_s_per_gpu * PublishedFlopsPerToken(r, spec, a.params);
  if (metric == "step_time_s") return {b->step_s, ""};
  if (metric == "tokens_per_s_per_gpu") return {b->tokens_per_s_per_gpu, ""};
  // Sources without a FLOP count of their own here (today's MFU definitions count the model's
  // FLOPs, GQA and gated MLPs included): the planner's model FLOPs, attention counted as the
  // publisher counts it (PublisherFlopCount).
  const std::string source = SourceOf(r);
  const bool own_count =
      source == "mpt" || source == "kort22" || source == "nar21" || source == "mlm2407";
  const double per_gpu_rate = own_count ? rate : b->mfu * gpu.PeakFlops(spec.dtype);
  if (metric == "mfu") return {100 * per_gpu_rate / gpu.PeakFlops(spec.dtype), ""};
  if (metric == "tflops_per_gpu") return {per_gpu_rate / 1e12, ""};
  // A run's peak allocated memory per GPU as its publisher logged it (PyTorch's
  // max_memory_allocated): the estimate's total, the fullest stage's GPU.
  if (metric == "memory_peak_gib") {
    return {b->memory.total_bytes / (1024.0 * 1024 * 1024), ""};
  }
  if (metric == "memory_gib") {
    const MemoryEstimate& m = b->memory;
    const double bytes = absl::StrContains(r.at("id"), "param_opt")
                             ? m.weights_bytes + m.gradients_bytes + m.optimizer_bytes
                             : m.activations_bytes;
    return {bytes / (1024.0 * 1024 * 1024), ""};
  }
  return {0, "unknown metric " + metric};
}

// --moe-host-ms: a host wait per MoE layer and micro-batch for every MoE row (RunConfig::
// moe_host_s), to see what one value does across the sets (how kMoeHostWaitS was fitted and
// cross-validated); unset, the planner's default.
std::optional<double> g_moe_host_s;
// --sustained-stretch X: the stretch of every row on the H100 die (the SXM and the 96 GB part:
// RunConfig::sustained_gemm_stretch in place of their GpuSpec's), to see what one value does
// across the sets (how kH100SustainedGemmStretch was fitted and cross-validated:
// bench/data/fit_sustained_stretch.py); unset, the catalogue's.
std::optional<double> g_h100_stretch;

Outcome Price(const Row& r, const std::string& root) {
  Priced p = Describe(r, root);
  if (g_moe_host_s) p.run.moe_host_s = g_moe_host_s;
  if (!p.why_not.empty()) return {0, p.why_not};
  const std::string gpu_name = GpuOf(r);
  if (g_h100_stretch && absl::StartsWith(gpu_name, "h100-sxm")) {
    p.run.sustained_gemm_stretch = g_h100_stretch;
  }
  if (gpu_name.empty()) {
    // The catalogue's own word where it has one (the GH200, the L40), else the row's text.
    absl::StatusOr<const GpuSpec*> named = FindGpu(BoardOf(r));
    return {0, absl::StrCat("no catalog GPU for \"", r.at("gpu"), "\"",
                            named.ok() ? "" : absl::StrCat(": ", named.status().message()))};
  }
  absl::StatusOr<const GpuSpec*> gpu = FindGpu(gpu_name);
  if (!gpu.ok()) return {0, std::string(gpu.status().message())};
  absl::StatusOr<ModelSpec> spec = NormalizeSpec(p.spec);
  if (!spec.ok()) return {0, std::string(spec.status().message())};
  absl::StatusOr<Analysis> a = Analyze(*spec, **gpu);
  if (!a.ok()) return {0, std::string(a.status().message())};
  absl::StatusOr<StepBreakdown> b = PlanStep(*a, p.run);
  if (!b.ok()) return {0, std::string(b.status().message())};
  Outcome out = PriceMetric(r, *spec, **gpu, *a, *b);
  out.components = Components(*b, *spec, p.run, **gpu);
  out.fits = b->memory.fits;
  return out;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(at));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

// The repository root, for rows' `config` files: FILE is ROOT/bench/data/NAME.csv.
std::string RootOf(const std::string& file) {
  return std::filesystem::absolute(file).parent_path().parent_path().parent_path().string();
}

// The rows of a CSV file as maps from column to value.
std::vector<Row> ReadRows(const std::string& file) {
  std::vector<Row> rows;
  std::ifstream in(file);
  std::string line;
  if (!std::getline(in, line)) return rows;
  const std::vector<std::string> header = SplitCsv(line);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> fields = SplitCsv(line);
    Row r;
    for (size_t i = 0; i < header.size() && i < fields.size(); ++i) r[header[i]] = fields[i];
    rows.push_back(std::move(r));
  }
  return rows;
}

// A row's run: its id less the metric suffix (the figures of one measurement share it).
std::string RunOf(const Row& r) {
  const std::string& id = r.at("id");
  return id.substr(0, id.rfind('_'));
}

// Which of a run's figures stands for it, best first (all but step time are inverse to the step);
// -1 for a figure that is not a rate of the step (memory).
int FigureRank(const std::string& metric) {
  static const std::vector<std::string> preferred = {"step_time_s", "tokens_per_s_per_gpu",
                                                     "tflops_per_gpu", "mfu"};
  const auto it = std::find(preferred.begin(), preferred.end(), metric);
  return it == preferred.end() ? -1 : static_cast<int>(it - preferred.begin());
}


// --bands: measured step / predicted step - 1 at p10 and p90 by kind of run, one figure per run.
int Bands(const std::vector<std::string>& files, bool check) {
  std::map<std::string, std::pair<int, Row>> runs;  // run -> (preference, row)
  std::map<std::string, std::string> root_of;       // run -> repository root for its config
  for (const std::string& file : files) {
    const std::string root = RootOf(file);
    for (const Row& r : ReadRows(file)) {
      const int p = FigureRank(r.at("metric"));
      if (p < 0) continue;
      const std::string run = RunOf(r);
      auto it = runs.find(run);
      if (it == runs.end() || p < it->second.first) {
        runs[run] = {p, r};
        root_of[run] = root;
      }
    }
  }
  std::map<std::string, std::vector<double>> by_kind;
  std::set<std::string> gpus;  // the catalogue GPUs the runs ran on
  int refused = 0;
  for (const auto& [run, entry] : runs) {
    const Row& r = entry.second;
    double value = 0;
    if (!absl::SimpleAtod(r.at("value"), &value) || value <= 0) continue;
    const Outcome o = Price(r, root_of[run]);
    if (!o.why_not.empty() || o.predicted <= 0) {
      ++refused;
      continue;
    }
    const double ratio =
        r.at("metric") == "step_time_s" ? value / o.predicted : o.predicted / value;
    const Priced described = Describe(r, root_of[run]);
    by_kind[PlannerBandKind(described.spec, described.run)].push_back(ratio - 1);
    gpus.insert(GpuOf(r));
  }
  std::printf("# the planner's error band: measured step time / predicted - 1, by kind of run\n");
  std::printf("%-34s %5s %8s %8s\n", "kind", "runs", "p10", "p90");
  bool off = false;
  for (const auto& [kind, e] : by_kind) {
    const double p10 = Quantile(e, 0.1), p90 = Quantile(e, 0.9);
    std::printf("%-34s %5zu %+7.1f%% %+7.1f%%\n", kind.c_str(), e.size(), 100 * p10, 100 * p90);
    const PlannerBand& b = PlannerBandOf(kind);
    if (check && (std::fabs(b.p10 - p10) > 0.01 || std::fabs(b.p90 - p90) > 0.01 ||
                  b.runs != static_cast<int>(e.size()))) {
      std::printf("FAIL: core's %s band is %+.3f .. %+.3f over %d runs\n", kind.c_str(), b.p10,
                  b.p90, b.runs);
      off = true;
    }
  }
  std::printf("on: %s\n", absl::StrJoin(gpus, ", ").c_str());
  if (check && std::vector<std::string>(gpus.begin(), gpus.end()) != PlannerBandGpus()) {
    std::printf("FAIL: core's band GPUs are %s\n", absl::StrJoin(PlannerBandGpus(), ", ").c_str());
    off = true;
  }
  std::printf("refused: %d\n", refused);
  return off || refused > 0 ? 1 : 0;
}

}  // namespace
}  // namespace wavecrest

int main(int argc, char** argv) {
  using namespace wavecrest;
  bool rows_wanted = false;
  bool components_wanted = false;  // --components: each row's step parts under it
  std::vector<std::string> files;
  if (argc > 1 && std::string(argv[1]) == "--bands") {
    bool check = false;
    for (int i = 2; i < argc; ++i) {
      if (std::string(argv[i]) == "--check") {
        check = true;
      } else {
        files.push_back(argv[i]);
      }
    }
    return Bands(files, check);
  }
  // --max-median F --max-p90 F: exit 1 when the |error| quantiles exceed them or a row is refused
  // (the CTest published_runs_a100 holds the planner to its committed accuracy); with --by-run,
  // the quantiles over runs (one figure each) rather than over figures.
  double max_median = 0, max_p90 = 0;
  bool by_run = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--rows") {
      rows_wanted = true;
    } else if (arg == "--moe-host-ms" && i + 1 < argc) {
      double ms = 0;
      (void)absl::SimpleAtod(argv[++i], &ms);
      g_moe_host_s = ms / 1000;
    } else if (arg == "--sustained-stretch" && i + 1 < argc) {
      double stretch = 1;
      (void)absl::SimpleAtod(argv[++i], &stretch);
      g_h100_stretch = stretch;
    } else if (arg == "--components") {
      rows_wanted = components_wanted = true;
    } else if (arg == "--by-run") {
      by_run = true;
    } else if ((arg == "--max-median" || arg == "--max-p90") && i + 1 < argc) {
      (void)absl::SimpleAtod(argv[++i], arg == "--max-median" ? &max_median : &max_p90);
    } else {
      files.push_back(arg);
    }
  }
  for (const std::string& file : files) {
    if (!std::ifstream(file)) {
      std::fprintf(stderr, "usage: published_runs [--rows] FILE.csv... (cannot read \"%s\")\n",
                   file.c_str());
      return 2;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: published_runs [--rows] FILE.csv...\n");
    return 2;
  }
  std::map<std::string, std::vector<double>> errors;  // "source metric" -> signed errors
  std::map<std::string, int> refused;                 // "source metric" -> rows
  std::map<std::string, int> reasons;
  std::vector<double> all;
  std::map<std::string, std::pair<int, double>> run_error;  // run -> (figure rank, |error|)
  std::set<std::string> unfit;  // runs whose layout, as published, the estimate says cannot fit
  int total = 0;
  std::vector<std::pair<Row, std::string>> rows;  // (row, repository root of its file)
  for (const std::string& file : files) {
    for (Row& r : ReadRows(file)) rows.emplace_back(std::move(r), RootOf(file));
  }
  for (auto& [r, root] : rows) {
    double value = 0;
    if (!absl::SimpleAtod(r["value"], &value) || value <= 0) continue;
    ++total;
    const std::string group = absl::StrCat(SourceOf(r), " ", r["metric"]);
    const Outcome o = Price(r, root);
    if (!o.why_not.empty()) {
      ++refused[group];
      ++reasons[o.why_not.substr(0, 100)];
      if (rows_wanted) std::printf("%-48s refused: %s\n", r["id"].c_str(), o.why_not.c_str());
      continue;
    }
    // A figure of the step (not a memory figure, which may describe a layout that never ran).
    if (!o.fits && FigureRank(r["metric"]) >= 0) unfit.insert(RunOf(r));
    const double e = o.predicted / value - 1;
    errors[group].push_back(e);
    all.push_back(std::fabs(e));
    const int rank = FigureRank(r["metric"]);
    auto at = run_error.find(RunOf(r));
    if (rank >= 0 && (at == run_error.end() || rank < at->second.first)) {
      run_error[RunOf(r)] = {rank, std::fabs(e)};
    }
    if (rows_wanted) {
      std::printf("%-48s %-20s published %10.3f predicted %10.3f %+7.1f%%\n", r["id"].c_str(),
                  r["metric"].c_str(), value, o.predicted, 100 * e);
      if (components_wanted) std::printf("    %s\n", o.components.c_str());
    }
  }
  // Three constants of the planner are fitted to published runs, each checked on the sets it was
  // not fitted to: the MoE host wait (kMoeHostWaitS), async TP's share (kAsyncTpHiddenShare) and
  // the H100's sustained-load stretch (kH100SustainedGemmStretch).
  std::printf(
      "Published runs priced by the planner (PREDICTED; fitted to published runs: the MoE host "
      "wait to Megatron-Bridge's MoE runs, async TP's share to TorchTitan's June 2025 pairs, the "
      "H100's sustained-load stretch to the DGX Cloud set): %s\n",
      absl::StrJoin(files, " ").c_str());
  std::printf("%-28s %5s %8s %8s %9s %8s\n", "source metric", "rows", "median", "p90",
              "bias", "refused");
  for (const auto& [group, e] : errors) {
    std::vector<double> abs;
    for (double x : e) abs.push_back(std::fabs(x));
    std::printf("%-28s %5zu %7.1f%% %7.1f%% %+8.1f%% %8d\n", group.c_str(), e.size(),
                100 * Quantile(abs, 0.5), 100 * Quantile(abs, 0.9), 100 * Quantile(e, 0.5),
                refused[group]);
  }
  for (const auto& [group, n] : refused) {
    if (!errors.count(group)) std::printf("%-28s %5d refused\n", group.c_str(), n);
  }
  int refused_total = 0;
  for (const auto& [group, n] : refused) refused_total += n;
  std::printf("all: %zu of %d rows priced, median |error| %.1f%%, p90 %.1f%%; %d refused\n",
              all.size(), total, 100 * Quantile(all, 0.5), 100 * Quantile(all, 0.9),
              refused_total);
  // A run published as several figures (MosaicML's MFU, TFLOP/s and tokens/s of one measurement)
  // counts once here: its step time, else tokens/s, TFLOP/s or MFU.
  std::vector<double> runs;
  for (const auto& [run, e] : run_error) runs.push_back(e.second);
  std::printf("runs: %zu (one figure each), median |error| %.1f%%, p90 %.1f%%\n", runs.size(),
              100 * Quantile(runs, 0.5), 100 * Quantile(runs, 0.9));
  // Each published layout ran, so it fitted: the memory estimate (kUsableMemoryFraction of the
  // GPU) is checked against that (issue 50's `--plan` on published layouts).
  std::printf("memory: %zu of %zu runs' layouts as published estimated not to fit%s%s\n",
              unfit.size(), runs.size(), unfit.empty() ? "" : ": ",
              absl::StrJoin(unfit, ", ").c_str());
  for (const auto& [why, n] : reasons) std::printf("  refused %d: %s\n", n, why.c_str());
  const std::vector<double>& gated = by_run ? runs : all;
  const double median = Quantile(gated, 0.5), p90 = Quantile(gated, 0.9);
  if ((max_median > 0 && median > max_median) || (max_p90 > 0 && p90 > max_p90) ||
      ((max_median > 0 || max_p90 > 0) && (refused_total > 0 || gated.empty()))) {
    std::printf("FAIL: median %.4f (at most %.4f), p90 %.4f (at most %.4f), %d refused\n", median,
                max_median, p90, max_p90, refused_total);
    return 1;
  }
  return 0;
}
