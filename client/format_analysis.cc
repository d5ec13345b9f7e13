// The CLI's rendering of an Analyze answer: the header line, the GEMMs' table, parameters and
// memory, the step's lines (with a run, its breakdown: format_step.cc), the slow GEMMs and rules.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "client/format.h"
#include "client/format_internal.h"
#include "client/table.h"
#include "core/units.h"

namespace wavecrest {
namespace {

std::string PassShort(v1::Pass p) {
  switch (p) {
    case v1::PASS_FORWARD:
      return "fwd";
    case v1::PASS_DGRAD:
      return "dgrad";
    case v1::PASS_WGRAD:
      return "wgrad";
    case v1::PASS_BACKWARD:
      return "bwd";
    default:
      return "?";
  }
}
std::string BoundShort(v1::Bound b) {
  switch (b) {
    case v1::BOUND_COMPUTE:
      return "compute";
    case v1::BOUND_MEMORY:
      return "memory";
    case v1::BOUND_LATENCY:
      return "latency";
    default:
      return "?";
  }
}
// "64" when the dimension meets the alignment rule, "16!" when it does not.
std::string Align(const v1::DimAlignment& a) {
  const int64_t p = a.largest_pow2();
  std::string s = p >= 1024 ? absl::StrCat(p / 1024, "K") : absl::StrCat(p);
  return a.meets_rule() ? s : s + "!";
}

// "flash2" for ATTENTION_FLASH2; unset is flash (the API's default).
std::string AttentionShort(v1::Attention a) {
  if (a == v1::ATTENTION_UNSPECIFIED) return "flash";
  return absl::AsciiStrToLower(absl::StripPrefix(v1::Attention_Name(a), "ATTENTION_"));
}

// The architecture a one-line header leaves out: latent attention, local windows, the experts
// and the dense layers beside them ("; MLA: kv latent 512, q latent 1536, rotary 64, d_v 128").
std::string ArchitectureNotes(const v1::ModelSpec& m) {
  std::string out;
  if (m.kv_lora_rank() > 0) {
    absl::StrAppendFormat(&out, "; MLA: kv latent %d, q latent %s, rotary %d, d_v %d",
                          m.kv_lora_rank(),
                          m.q_lora_rank() > 0 ? absl::StrCat(m.q_lora_rank()) : "none",
                          m.qk_rope_head_dim(), m.v_head_dim() > 0 ? m.v_head_dim() : m.head_dim());
  }
  if (m.sliding_window() > 0) {
    absl::StrAppendFormat(
        &out, "; local attention over %d tokens on %d of %d layers", m.sliding_window(),
        m.sliding_window_layers() > 0 ? m.sliding_window_layers() : m.num_layers(), m.num_layers());
  }
  if (m.num_experts() > 0) {
    absl::StrAppendFormat(&out, "; MoE: %d experts of f, top %d", m.num_experts(),
                          m.experts_per_token());
    if (m.expert_groups() > 1 && m.expert_groups_per_token() > 0 &&
        m.expert_groups_per_token() < m.expert_groups()) {
      absl::StrAppendFormat(&out, " within %d of %d groups", m.expert_groups_per_token(),
                            m.expert_groups());
    }
    if (m.shared_expert_ffn_hidden_size() > 0) {
      absl::StrAppendFormat(&out, ", shared %d", m.shared_expert_ffn_hidden_size());
    }
    if (m.moe_capacity_factor() > 0) {
      absl::StrAppendFormat(&out, ", capacity factor %g (padded)", m.moe_capacity_factor());
    }
    if (m.first_dense_layers() > 0 || m.moe_layer_interval() > 1) {
      const int64_t interval = std::max<int64_t>(1, m.moe_layer_interval());
      const int64_t moe = (m.num_layers() - m.first_dense_layers()) / interval;
      absl::StrAppendFormat(
          &out, "; %d MoE layers, %d dense with an MLP of %d", moe, m.num_layers() - moe,
          m.dense_ffn_hidden_size() > 0 ? m.dense_ffn_hidden_size() : m.ffn_hidden_size());
    }
  }
  return out;
}

// "assumes: training: micro-batch 1 of 2048-token sequences; TP 1, bf16, flash attention\n", or
// nothing for an answer without it (an older server).
std::string AssumedLine(const v1::Assumed& a) {
  return a.summary().empty() ? "" : absl::StrCat("assumes: ", a.summary(), "\n");
}

// The model, the GPU and the workload in one line.
std::string AnalysisHeader(const v1::AnalyzeResponse& r) {
  const v1::ModelSpec& m = r.model();
  return absl::StrFormat(
      "%s on %s: h=%d a=%d a_kv=%d d=%d L=%d f=%d (%s) v=%d s=%d b=%d t=%d%s %s, %s attention, "
      "%s%s\n%s\n",
      m.name().empty() ? "model" : m.name(), r.gpu(), m.hidden_size(), m.num_attention_heads(),
      m.num_kv_heads(), m.head_dim(), m.num_layers(), m.ffn_hidden_size(),
      m.mlp() == v1::MLP_SWIGLU ? "swiglu" : "gelu", m.vocab_size(), m.seq_length(),
      m.micro_batch_size(), m.tensor_parallel(),
      absl::StrCat(m.context_parallel() > 1 ? absl::StrCat(" c=", m.context_parallel()) : "",
                   m.expert_parallel() > 1 ? absl::StrCat(" e=", m.expert_parallel()) : ""),
      DtypeShort(m.dtype()), AttentionShort(m.attention()),
      m.workload() == v1::WORKLOAD_TRAINING  ? "training step"
      : m.workload() == v1::WORKLOAD_PREFILL ? "prefill step"
                                             : "decode step",
      ArchitectureNotes(m), AssumedLine(r.assumed()));
}

// One row per GEMM (and fused attention) of the step, with the provenance line under it.
std::string GemmTable(const v1::AnalyzeResponse& r) {
  std::string out;
  Table t({"gemm",   "pass",     "count", "batch",    "M",      "N",       "K",
           "layout", "dtype",    "GFLOP", "share",    "alignM", "alignN",  "alignK",
           "tile",   "tile_eff", "waves", "wave_eff", "time",   "TFLOP/s", "bound"});
  for (const v1::GemmAnalysis& g : r.gemms()) {
    const v1::GemmReport& gr = g.gemm();
    const v1::TileChoice& tc = g.tile();
    const bool fused = gr.fused_attention();
    t.Add({gr.name(),
           PassShort(gr.pass()),
           absl::StrCat(gr.count()),
           absl::StrCat(gr.shape().batch()),
           absl::StrCat(gr.shape().m()),
           absl::StrCat(gr.shape().n()),
           absl::StrCat(gr.shape().k()),
           fused ? "fused" : LayoutShort(gr.layout()),
           DtypeShort(gr.dtype()),
           // A fused attention's work is the blocks its mask leaves (its TFLOP/s are of them).
           absl::StrFormat("%.1f", (fused ? g.tflops() * 1e12 * g.time_s() : gr.flops()) / 1e9),
           absl::StrFormat("%.1f%%", 100 * g.step_flop_share()),
           Align(g.m_alignment()),
           Align(g.n_alignment()),
           Align(g.k_alignment()),
           fused ? absl::StrCat("q", tc.tile_m())
                 : absl::StrCat(tc.tile_m(), "x", tc.tile_n(),
                                tc.split_k() > 1 ? absl::StrCat("/k", tc.split_k()) : ""),
           absl::StrFormat("%.3f", tc.tile_efficiency()),
           absl::StrCat(tc.waves()),
           absl::StrFormat("%.3f", tc.wave_efficiency()),
           HumanSeconds(g.time_s()),
           absl::StrFormat("%.1f", g.tflops()),
           BoundShort(g.bound())});
  }
  absl::StrAppend(&out, t.Render());
  absl::StrAppend(&out,
                  "align: largest power of two dividing the dimension; '!' = misses the GPU's "
                  "tensor-core alignment rule. tile/k: split-K. fused: GFLOP, share and "
                  "TFLOP/s count the blocks the kernel computes (a causal mask skips about half "
                  "of the s × s product; MFU counts as --flop-count says). All times PREDICTED by ",
                  r.provenance().method(), ".\n\n");
  return out;
}

// Parameters and memory per GPU.
std::string ParamsAndMemory(const v1::AnalyzeResponse& r) {
  std::string out;
  const v1::ParameterCounts& p = r.params();
  absl::StrAppendFormat(&out, "parameters      %s total (%d), %s per layer, %s embeddings",
                        HumanCount(p.total_params()), p.total_params(),
                        HumanCount(p.per_layer_params()), HumanCount(p.embedding_params()));
  if (p.active_params() > 0 && p.active_params() < p.total_params()) {
    absl::StrAppendFormat(&out, "; %s active per token (mixture of experts: %d experts, top %d)",
                          HumanCount(p.active_params()), r.model().num_experts(),
                          r.model().experts_per_token());
  }
  out += "\n";
  if (r.has_memory()) {
    const v1::MemoryEstimate& mem = r.memory();
    absl::StrAppendFormat(
        &out, "memory per GPU  %s; %s\n", absl::StripPrefix(MemoryParts(mem), "memory per GPU "),
        mem.fits() || PastMarginWithinGpu(mem) ? FitWords(mem)
        : mem.kv_cache_bytes() > 0 ? "does NOT fit (a smaller batch or KV cache, or more --tp/--pp)"
        : mem.fits_with_recompute()
            ? absl::StrFormat("does NOT fit; with full activation recomputation %.1f GiB fits",
                              mem.total_full_recompute_bytes() / kGiB)
            : "does NOT fit, even with full recomputation (more --tp/--pp, or data-parallel "
              "ranks with --zero-stage 1 or more to shard the optimizer)");
  }
  return out;
}

// Without a run at TP t > 1: the run's MFU beside the kernels' (the same model on t GPUs, with
// its tensor-parallel communication), or nothing.
std::string TensorParallelRunLine(const v1::AnalyzeResponse& r) {
  if (!r.has_tensor_parallel_run()) return "";
  const v1::StepBreakdown& b = r.tensor_parallel_run();
  const double step = b.step_time_s() > 0 ? b.step_time_s() : 1;
  return absl::StrFormat(
      "run MFU         %.1f%%, %s tokens/s per GPU (the same model as a run on %d GPUs at TP "
      "%d, global batch %d: %s a step, %.0f%% of it TP communication, %.0f%% the optimizer; "
      "--gpus %d shows the run)\n",
      100 * b.mfu(), HumanCount(b.tokens_per_second_per_gpu()), b.gpus(), b.tensor_parallel(),
      b.global_batch(), HumanSeconds(b.step_time_s()), 100 * b.tp_comm_s() / step,
      100 * b.optimizer_s() / step, b.gpus());
}

// The step's FLOPs: one rank of the tensor- (and context-) parallel group that splits each layer,
// every layer (a pipeline's stages split them further, which the run's breakdown prices), beside
// the whole model's, in the convention asked for.
std::string FlopLine(const v1::AnalyzeResponse& r) {
  const int64_t t = std::max<int64_t>(1, r.model().tensor_parallel());
  const int64_t c = std::max<int64_t>(1, r.model().context_parallel());
  const int64_t stages = std::max<int64_t>(1, r.model().pipeline_parallel());
  const std::string split =
      c > 1 ? absl::StrCat("per rank of the ", t * c, " splitting each layer (",
                           t > 1 ? absl::StrCat("TP ", t, " × ") : "", "CP ", c,
                           ": each rank 1/", c, " of the sequence)")
      : t > 1 ? absl::StrCat("per rank of the ", t, " splitting each layer")
              : "per GPU";
  // tokens_per_step is a rank's; the whole model's FLOPs are those of the c ranks' tokens.
  const std::string tokens =
      c > 1 ? absl::StrCat(r.tokens_per_step() * c, " tokens (", r.tokens_per_step(), " a rank)")
            : absl::StrCat(r.tokens_per_step(), " tokens");
  // With a run the analysis is one micro-batch of the run's step.
  return absl::StrFormat(
      "FLOPs           %s executed %s%s per %s (the kernels as they run%s); %s model FLOPs for "
      "the whole model (attention counted %s; MFU divides these), %s\n",
      HumanCount(r.step_flops()), split,
      stages > 1 ? absl::StrCat(", all layers (each of the ", stages,
                                " pipeline stages runs its share)")
                 : "",
      r.has_step() ? "micro-batch" : "step",
      r.model().attention() == v1::ATTENTION_UNFUSED
          ? ""
          : ": the fused attention's backward recomputation among them, the blocks a causal "
            "mask skips left out",
      HumanCount(r.model_flops()),
      r.flop_count().empty() ? "full" : r.flop_count(), tokens);
}

// The step: FLOPs, predicted (or one rank's kernel) time and MFU, decode's MBU, measured layers,
// and with a run the run's breakdown and answer.
std::string StepLines(const v1::AnalyzeResponse& r) {
  std::string out;
  absl::StrAppend(&out, FlopLine(r));
  const int64_t stages = std::max<int64_t>(1, r.model().pipeline_parallel());
  // With a run the step is the run's (below); these lines are one rank's kernels.
  const bool run = r.has_step();
  const v1::KernelStep& k = r.kernels();
  absl::StrAppendFormat(&out,
                        "%s %s per %s = %s GEMMs + %s elementwise (estimated); "
                        "error band of the GEMMs %+.0f%% .. %+.0f%%\n",
                        run ? "rank kernels   " : "predicted time ",
                        HumanSeconds(run ? k.step_time_s() : r.step_time_s()),
                        run ? "micro-batch" : "step", HumanSeconds(r.gemm_time_s()),
                        HumanSeconds(r.elementwise_time_s()), 100 * r.provenance().error_band_p10(),
                        100 * r.provenance().error_band_p90());
  // One rank's kernels, named so: at TP t > 1 they leave out the collectives that split them.
  const int64_t t = std::max<int64_t>(1, r.model().tensor_parallel());
  absl::StrAppendFormat(
      &out, "kernel MFU      %.1f%%, %s tokens/s per GPU%s\n", 100 * (run ? k.mfu() : r.mfu()),
      HumanCount(run ? k.tokens_per_second_per_gpu() : r.tokens_per_second_per_gpu()),
      absl::StrCat(
          t > 1 ? absl::StrCat(" (one rank's kernels: without the TP communication of t=", t, ")")
                : "",
          stages > 1 ? " (every layer's kernels, as if on one pipeline stage)" : ""));
  absl::StrAppend(&out, TensorParallelRunLine(r));
  if (r.memory_bandwidth_utilization() > 0) {
    absl::StrAppendFormat(&out,
                          "decode          %s per output token at batch %d with %d tokens of KV "
                          "cache, memory-bandwidth utilisation (MBU) %.1f%%: decode is bound by "
                          "reading the weights and the KV cache\n",
                          HumanSeconds(r.step_time_s()), r.model().micro_batch_size(),
                          r.model().kv_cache_length() > 0 ? r.model().kv_cache_length()
                                                          : r.model().seq_length(),
                          100 * r.memory_bandwidth_utilization());
  }
  // With a run its breakdown lists these among its own assumptions.
  if (!run) {
    for (const std::string& a : r.assumptions()) absl::StrAppend(&out, "  assumes: ", a, "\n");
  }
  if (r.has_measured_step()) {
    const v1::MeasuredStep& ms = r.measured_step();
    const v1::LayerTiming& l = ms.layer();
    absl::StrAppendFormat(
        &out,
        "measured layers %s per step (%.0f%% measured: %d × %s per layer, %s, on %s; sum of its "
        "parts %s); MFU %.1f%%, %s tokens/s per GPU\n",
        HumanSeconds(ms.step_time_s()), 100 * ms.measured_share(), r.model().num_layers(),
        HumanSeconds(l.time_s()), SourceName(l.provenance().source()),
        l.provenance().device().name(), HumanSeconds(l.predicted_sum_s()), 100 * ms.mfu(),
        HumanCount(ms.tokens_per_second_per_gpu()));
  }
  if (run) absl::StrAppend(&out, FormatStepBreakdown(r.step()), RunAnswer(r));
  return out;
}

// The GEMMs that lose the most time to their penalties, and the paper's rules broken.
std::string SlowGemmsAndRules(const v1::AnalyzeResponse& r) {
  std::string out;
  std::vector<const v1::GemmAnalysis*> slow;
  for (const v1::GemmAnalysis& g : r.gemms()) {
    if (g.penalties_size() > 0) slow.push_back(&g);
  }
  std::sort(slow.begin(), slow.end(), [](const v1::GemmAnalysis* a, const v1::GemmAnalysis* b) {
    return a->time_s() * static_cast<double>(a->gemm().count()) >
           b->time_s() * static_cast<double>(b->gemm().count());
  });
  if (!slow.empty())
    absl::StrAppend(&out, "why GEMMs are slow (largest share of the step first):\n");
  for (size_t i = 0; i < slow.size() && i < 5; ++i) {
    const v1::GemmAnalysis& g = *slow[i];
    absl::StrAppend(&out, "  ", g.gemm().name(), " ", PassShort(g.gemm().pass()), ": ",
                    absl::StrJoin(g.penalties(), "; "), "\n");
  }
  if (r.rules().empty()) {
    absl::StrAppend(&out, "rules           none broken\n");
  } else {
    absl::StrAppend(&out, "rules broken:\n");
    for (const v1::RuleViolation& v : r.rules()) {
      absl::StrAppend(&out, "  [rule ", v.paper_rule(), v.priced() ? "" : ", not priced", "] ",
                      v.message(), "\n");
    }
  }
  return out;
}

}  // namespace

std::string FormatAnalysis(const v1::AnalyzeResponse& r) {
  return absl::StrCat(AnalysisHeader(r), GemmTable(r), ParamsAndMemory(r), StepLines(r),
                      SlowGemmsAndRules(r));
}

}  // namespace wavecrest
