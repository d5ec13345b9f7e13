#include "client/format.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "client/table.h"
#include "core/units.h"
#include "service/errors.h"

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

std::string LayoutShort(v1::Layout l) {
  switch (l) {
    case v1::LAYOUT_TN:
      return "TN";
    case v1::LAYOUT_NN:
      return "NN";
    case v1::LAYOUT_NT:
      return "NT";
    default:
      return "?";
  }
}

std::string DtypeShort(v1::Dtype d) {
  switch (d) {
    case v1::DTYPE_BF16:
      return "bf16";
    case v1::DTYPE_FP16:
      return "fp16";
    case v1::DTYPE_FP32:
      return "fp32";
    case v1::DTYPE_TF32:
      return "tf32";
    case v1::DTYPE_FP8_E4M3:
      return "fp8";
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

std::string Shape(const v1::GemmShape& s) {
  return absl::StrCat(s.m(), "x", s.n(), "x", s.k(),
                      s.batch() > 1 ? absl::StrCat(" b", s.batch()) : "");
}

}  // namespace

std::string SourceName(v1::Source s) {
  switch (s) {
    case v1::SOURCE_MEASURED:
      return "MEASURED";
    case v1::SOURCE_CACHED:
      return "CACHED";
    case v1::SOURCE_PREDICTED:
      return "PREDICTED";
    default:
      return "?";
  }
}

std::string FormatJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

std::string HumanSeconds(double s) {
  if (s >= 1) return absl::StrFormat("%.3f s", s);
  if (s >= 1e-3) return absl::StrFormat("%.3f ms", s * 1e3);
  return absl::StrFormat("%.1f us", s * 1e6);
}

std::string HumanCount(double n) {
  if (n >= 1e12) return absl::StrFormat("%.2fT", n / 1e12);
  if (n >= 1e9) return absl::StrFormat("%.2fB", n / 1e9);
  if (n >= 1e6) return absl::StrFormat("%.1fM", n / 1e6);
  if (n >= 1e3) return absl::StrFormat("%.1fK", n / 1e3);
  return absl::StrFormat("%.0f", n);
}

// "memory per GPU 47.6 GiB of 80 (estimate): weights 4.2, gradients 8.5, optimizer 12.7,
// activations 22.2", with the gathered ZeRO-3 unit, the host's share and the KV cache when there.
std::string MemoryParts(const v1::MemoryEstimate& m) {
  std::string out = absl::StrFormat(
      "memory per GPU %.1f GiB of %.0f (estimate): weights %.1f, gradients %.1f, optimizer %.1f, ",
      m.total_bytes() / kGiB, m.capacity_bytes() / kGiB, m.weights_bytes() / kGiB,
      m.gradients_bytes() / kGiB, m.optimizer_bytes() / kGiB);
  if (m.gathered_bytes() > 0) {
    absl::StrAppendFormat(&out, "gathered %.1f, ", m.gathered_bytes() / kGiB);
  }
  absl::StrAppendFormat(&out, "activations %.1f", m.activations_bytes() / kGiB);
  if (m.offloaded_bytes() > 0) {
    absl::StrAppendFormat(&out, " (%.1f on the host)", m.offloaded_bytes() / kGiB);
  }
  if (m.kv_cache_bytes() > 0) {
    absl::StrAppendFormat(&out, ", KV cache %.1f", m.kv_cache_bytes() / kGiB);
  }
  return out;
}

// "flash2" for ATTENTION_FLASH2; unset is flash (the API's default).
std::string AttentionShort(v1::Attention a) {
  if (a == v1::ATTENTION_UNSPECIFIED) return "flash";
  return absl::AsciiStrToLower(absl::StripPrefix(v1::Attention_Name(a), "ATTENTION_"));
}

std::string FormatStepBreakdown(const v1::StepBreakdown& b) {
  std::string out = absl::StrFormat(
      "training step on %d GPUs (%d nodes): t=%d p=%d%s d=%d%s, global batch %d = %d "
      "micro-batch%s per data-parallel rank; PREDICTED\n",
      b.gpus(), b.nodes(), b.tensor_parallel(), b.pipeline_parallel(),
      b.context_parallel() > 1 ? absl::StrCat(" c=", b.context_parallel()) : "", b.data_parallel(),
      b.expert_parallel() > 1 ? absl::StrCat(" (e=", b.expert_parallel(), " of them)") : "",
      b.global_batch(), b.microbatches(), b.microbatches() == 1 ? "" : "es");
  // Components a run does not have (no context or expert parallelism, no offload) are left out.
  const bool cp = b.context_parallel() > 1, ep = b.expert_parallel() > 1,
             offload = b.offload_activations();
  const std::tuple<const char*, double, bool> parts[] = {
      {"compute", b.compute_s(), true},
      {"recomputation", b.recompute_s(), true},
      {"TP communication", b.tp_comm_s(), true},
      {"EP all-to-all", b.ep_comm_s(), ep},
      {"MoE host waits", b.moe_host_s(), b.moe_host_s() > 0},
      {"CP communication", b.cp_comm_s(), cp},
      {"activation offload", b.offload_s(), offload},
      {"pipeline bubble", b.pp_bubble_s(), true},
      {"pipeline sends", b.pp_comm_s(), true},
      {"DP communication", b.dp_comm_s(), true},
      {"optimizer", b.optimizer_s(), true}};
  Table t({"component", "time", "share"});
  for (const auto& [name, s, shown] : parts) {
    if (!shown) continue;
    t.Add({name, HumanSeconds(s),
           absl::StrFormat("%.1f%%", b.step_time_s() > 0 ? 100 * s / b.step_time_s() : 0)});
  }
  t.Add({"step", HumanSeconds(b.step_time_s()), "100%"});
  absl::StrAppend(&out, t.Render());
  absl::StrAppendFormat(&out, "MFU %.1f%%, %.0f TFLOP/s per GPU, %s tokens/s per GPU\n",
                        100 * b.mfu(), b.tflops_per_gpu(),
                        HumanCount(b.tokens_per_second_per_gpu()));
  if (b.time_to_train_s() > 0) {
    absl::StrAppendFormat(&out,
                          "time to train  %s tokens: %.1f days (%.0f hours), %s GPU-hours, "
                          "PREDICTED as the step (its error band below)\n",
                          HumanCount(b.train_tokens()), b.time_to_train_s() / 86400,
                          b.time_to_train_s() / 3600, HumanCount(b.gpu_hours()));
  }
  if (b.error_band_runs() > 0) {
    absl::StrAppendFormat(&out,
                          "error band: a measured step %+.0f%% .. %+.0f%% off this prediction (p10..p90 of %d "
                          "published %s runs the planner was checked against)\n",
                          100 * b.error_band_p10(), 100 * b.error_band_p90(), b.error_band_runs(),
                          b.error_band_kind());
  }
  absl::StrAppendFormat(&out,
                        "layout: %s, %s recomputation, ZeRO stage %d%s%s, micro-batch %d; %s; "
                        "%s\n",
                        b.sequence_parallel() ? "sequence parallel" : "no sequence parallelism",
                        b.recompute() == v1::RECOMPUTE_FULL        ? "full"
                        : b.recompute() == v1::RECOMPUTE_SELECTIVE ? "selective"
                                                                   : "no",
                        b.zero_stage(), b.offload_activations() ? ", activations offloaded" : "",
                        b.interleave() > 1
                            ? absl::StrFormat(", %d interleaved stages per rank", b.interleave())
                            : "",
                        std::max<int64_t>(b.micro_batch_size(), 1), MemoryParts(b.memory()),
                        b.memory().fits() ? "fits" : "does NOT fit");
  for (const std::string& a : b.assumptions()) absl::StrAppend(&out, "  assumes: ", a, "\n");
  return out;
}

namespace {

std::string LayoutLine(const v1::StepBreakdown& b) {
  std::string out = absl::StrCat("TP ", b.tensor_parallel(), " × PP ", b.pipeline_parallel());
  if (b.context_parallel() > 1) absl::StrAppend(&out, " × CP ", b.context_parallel());
  absl::StrAppend(&out, " × DP ", b.data_parallel());
  if (b.expert_parallel() > 1) absl::StrAppend(&out, ", EP ", b.expert_parallel());
  return out;
}

// A layout search's ranked layouts (AnalyzeResponse.layouts), one row each.
std::string LayoutsTable(const v1::AnalyzeResponse& r) {
  Table t({"rank", "layout", "b", "v", "SP", "recompute", "ZeRO", "offload", "memory", "step",
           "MFU", "why not #1"});
  for (const v1::LayoutOption& o : r.layouts()) {
    const v1::StepBreakdown& b = o.step();
    t.Add({absl::StrCat(o.rank()), LayoutLine(b), absl::StrCat(b.micro_batch_size()),
           absl::StrCat(std::max<int64_t>(b.interleave(), 1)), b.sequence_parallel() ? "on" : "off",
           b.recompute() == v1::RECOMPUTE_FULL        ? "full"
           : b.recompute() == v1::RECOMPUTE_SELECTIVE ? "selective"
                                                      : "none",
           absl::StrCat(b.zero_stage()), b.offload_activations() ? "on" : "off",
           absl::StrFormat("%.1f GiB%s", b.memory().total_bytes() / (1024.0 * 1024 * 1024),
                           b.memory().fits() ? "" : " (no fit)"),
           HumanSeconds(b.step_time_s()), absl::StrFormat("%.1f%%", 100 * b.mfu()),
           o.why().empty() ? "the answer" : o.why()});
  }
  return absl::StrFormat("layouts searched: %d degree combinations, %d fit in memory; the best:\n",
                         r.layouts_examined(), r.layouts_fit()) +
         t.Render();
}

// The run's answer line: the step when it fits; a run as given that does not fit is not an
// answer, and the plan that fits (layouts[0]) is said instead; a layout search's table after.
std::string RunAnswer(const v1::AnalyzeResponse& r) {
  std::string out;
  const v1::StepBreakdown* answer = &r.step();
  const bool given_fits = r.step().memory().fits();
  const bool searched_plan = !r.layouts().empty() && r.layouts(0).step().memory().fits();
  if (!given_fits && searched_plan) {
    absl::StrAppendFormat(&out,
                          "as given        %s per step, but it does NOT fit in memory: not an "
                          "answer; the plan that fits on these GPUs:\n",
                          HumanSeconds(r.step_time_s()));
    answer = &r.layouts(0).step();
  } else if (!given_fits) {
    absl::StrAppendFormat(&out,
                          "no answer       %s per step, but it does NOT fit in memory and no "
                          "layout of these GPUs does: more GPUs are needed\n",
                          HumanSeconds(r.step_time_s()));
    answer = nullptr;
  }
  if (answer != nullptr) {
    absl::StrAppendFormat(&out,
                          "the answer      %s per step, MFU %.1f%%, %.0f TFLOP/s per GPU (%s "
                          "attention FLOPs), %s tokens/s per GPU (the run: %s)\n",
                          HumanSeconds(answer->step_time_s()), 100 * answer->mfu(),
                          answer->tflops_per_gpu(),
                          r.flop_count().empty() ? "full" : r.flop_count(),
                          HumanCount(answer->tokens_per_second_per_gpu()), LayoutLine(*answer));
  }
  if (!r.layouts().empty()) absl::StrAppend(&out, LayoutsTable(r));
  return out;
}

}  // namespace

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

namespace {

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
           absl::StrFormat("%.1f", gr.flops() / 1e9),
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
                  "tensor-core alignment rule. tile/k: split-K. All times PREDICTED by ",
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
        mem.fits()                 ? "fits"
        : mem.kv_cache_bytes() > 0 ? "does NOT fit (a smaller batch or KV cache, or more --tp/--pp)"
        : mem.fits_with_recompute()
            ? absl::StrFormat("does NOT fit; with full activation recomputation %.1f GiB fits",
                              mem.total_full_recompute_bytes() / kGiB)
            : "does NOT fit, even with full recomputation (more --tp/--pp, or --dp to shard the "
              "optimizer)");
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

// The step: FLOPs, predicted (or one rank's kernel) time and MFU, decode's MBU, measured layers,
// and with a run the run's breakdown and answer.
std::string StepLines(const v1::AnalyzeResponse& r) {
  std::string out;
  absl::StrAppendFormat(&out,
                        "step            %s FLOP per GPU (%s for the model, attention counted %s), "
                        "%d tokens\n",
                        HumanCount(r.step_flops()), HumanCount(r.model_flops()),
                        r.flop_count().empty() ? "full" : r.flop_count(), r.tokens_per_step());
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
      t > 1 ? absl::StrCat(" (one rank's kernels: without the TP communication of t=", t, ")")
            : "");
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

std::string FormatDevices(const v1::ListDevicesResponse& r) {
  std::string out;
  if (r.workers().empty()) {
    absl::StrAppend(&out, "workers: none (measurements unavailable; predictions only)\n\n");
  } else {
    Table w({"worker", "kind", "device", "backend", "cc", "SMs", "up", "pid", "restarts",
             "last reason"});
    for (const auto& d : r.workers()) {
      w.Add({d.id(), d.device().catalog_name(), d.device().name(), d.device().backend(),
             absl::StrCat(d.device().compute_capability()), absl::StrCat(d.device().sm_count()),
             d.up() ? "yes" : "no", d.pid() > 0 ? absl::StrCat(d.pid()) : "-",
             absl::StrCat(d.restarts()),
             d.last_restart_reason().empty() ? "-" : d.last_restart_reason()});
    }
    absl::StrAppend(&out, w.Render(), "\n");
  }
  Table c({"gpu", "name", "arch", "SMs", "bf16 TFLOP/s", "fp8 TFLOP/s", "HBM GB/s", "L2 MiB",
           "align B"});
  for (const auto& g : r.catalog()) {
    c.Add({g.name(), g.display_name(), g.architecture(), absl::StrCat(g.sm_count()),
           g.peak_bf16_tflops() > 0 ? absl::StrFormat("%.0f", g.peak_bf16_tflops()) : "-",
           g.peak_fp8_tflops() > 0 ? absl::StrFormat("%.0f", g.peak_fp8_tflops()) : "-",
           absl::StrFormat("%.0f", g.memory_bandwidth_gbps()), absl::StrCat(g.l2_bytes() >> 20),
           absl::StrCat(g.alignment_bytes())});
  }
  absl::StrAppend(&out, c.Render());
  return out;
}

absl::string_view StorageNote(v1::StorageFate f) {
  switch (f) {
    case v1::STORAGE_FATE_SPOOLED:
      return " (spooled)";
    case v1::STORAGE_FATE_NOT_STORED:
      return " (not stored)";
    default:
      return "";
  }
}

std::string FormatTimingHeader() {
  return absl::StrFormat("%-5s %-28s %-6s %-5s %12s %9s %7s %7s %6s %7s  %s\n", "#", "shape",
                         "layout", "dtype", "time", "TFLOP/s", "samples", "spread", "algo",
                         "SM MHz", "source");
}

std::string FormatTiming(const v1::GemmTiming& t) {
  const v1::TimingStats& s = t.stats();
  std::string line = absl::StrFormat(
      "%-5d %-28s %-6s %-5s %12s %9.1f %7s %7s %6s %7s  %s", t.index(), Shape(t.shape()),
      LayoutShort(t.layout()), DtypeShort(t.dtype()), HumanSeconds(t.time_s()), t.tflops(),
      s.samples() > 0 ? absl::StrCat(s.samples()) : "-",
      s.samples() > 0 ? absl::StrFormat("%.2f%%", 100 * s.relative_spread()) : "-",
      s.samples() > 0 ? absl::StrCat(s.algorithm_id()) : "-",
      s.sm_clock_mhz() > 0 ? absl::StrCat(s.sm_clock_mhz()) : "-",
      absl::StrCat(SourceName(t.provenance().source()),
                   t.provenance().from_cache() && t.provenance().source() != v1::SOURCE_CACHED
                       ? " (cache)"
                       : "",
                   StorageNote(t.provenance().storage())));
  if (!t.used_by().empty()) absl::StrAppend(&line, "  ", absl::StrJoin(t.used_by(), ", "));
  return line + "\n";
}

std::string FormatSweep(const v1::SweepResponse& r, absl::string_view dimension) {
  int64_t valid = 0;
  for (const v1::SweepPoint& p : r.points()) valid += p.valid();
  std::string out = absl::StrFormat("sweep of %s on %s: %d points (%d legal)\n", dimension,
                                    r.gpu(), r.points_size(), valid);
  if (r.has_assumed()) {
    absl::StrAppend(&out, "assumes: ", r.assumed().summary(), " (", dimension, " as each row says)\n");
  }
  absl::StrAppend(&out, "\n");
  const bool model = r.vary() != v1::SWEEP_DIMENSION_GEMM_M &&
                     r.vary() != v1::SWEEP_DIMENSION_GEMM_N &&
                     r.vary() != v1::SWEEP_DIMENSION_GEMM_K;
  std::vector<std::string> header = {dimension.empty() ? "value" : std::string(dimension), "time",
                                     "TFLOP/s", "MFU"};
  if (model) header.insert(header.end(), {"tok/s/GPU", "params"});
  header.insert(header.end(), {"band", "source", "rules broken"});
  Table t(header);
  for (const v1::SweepPoint& p : r.points()) {
    if (!p.valid()) {
      std::vector<std::string> row = {absl::StrCat(p.value()), "-", "-", "-"};
      if (model) row.insert(row.end(), {"-", "-"});
      row.insert(row.end(), {"-", "not legal", p.invalid_reason()});
      t.Add(std::move(row));
      continue;
    }
    std::vector<std::string> row = {absl::StrCat(p.value()), HumanSeconds(p.time_s()),
                                    absl::StrFormat("%.1f", p.tflops()),
                                    absl::StrFormat("%.1f%%", 100 * p.mfu())};
    if (model) {
      row.insert(row.end(), {HumanCount(p.tokens_per_second_per_gpu()),
                             HumanCount(static_cast<double>(p.total_params()))});
    }
    row.insert(
        row.end(),
        {p.source() == v1::SOURCE_PREDICTED
             ? absl::StrFormat("%+.0f/%+.0f%%", 100 * p.error_band_p10(), 100 * p.error_band_p90())
             : "",
         SourceName(p.source()),
         p.rules_broken().empty() ? "none" : absl::StrJoin(p.rules_broken(), ",")});
    t.Add(std::move(row));
  }
  absl::StrAppend(&out, t.Render());
  for (const auto& n : r.notes()) absl::StrAppend(&out, "note: ", n, "\n");
  return out;
}

std::string FormatError(const absl::Status& status) {
  std::string out = absl::StrCat(absl::StatusCodeToString(status.code()), ": ");
  std::vector<FieldViolation> v = ViolationsOf(status);
  if (v.empty()) {
    absl::StrAppend(&out, status.message());
  } else {
    absl::StrAppend(&out, absl::StrJoin(v, "; ", [](std::string* o, const FieldViolation& f) {
      absl::StrAppend(o, f.field, ": ", f.description);
    }));
  }
  const absl::Duration retry = RetryDelayOf(status);
  if (retry > absl::ZeroDuration()) {
    absl::StrAppend(&out, " (retry after ", absl::FormatDuration(retry), ")");
  }
  return out;
}

}  // namespace wavecrest
