// The CLI's rendering of a training run: the step's breakdown, component by component, and a
// layout search's answer and ranked layouts (analyze --gpus ... [--plan]).
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/format.h"
#include "client/format_internal.h"
#include "client/table.h"
#include "core/memory.h"
#include "core/units.h"

namespace wavecrest {

// "memory per GPU 47.6 GiB of 80 (estimate): weights 4.2, gradients 8.5, optimizer 12.7,
// activations 22.2", with the gathered ZeRO-3 unit, the host's share and the KV cache when there.
bool PastMarginWithinGpu(const v1::MemoryEstimate& m) {
  return !m.fits() && m.total_bytes() <= m.capacity_bytes();
}

std::string FitWords(const v1::MemoryEstimate& m) {
  if (m.fits()) return "fits";
  if (!PastMarginWithinGpu(m)) return "does NOT fit";
  return absl::StrFormat(
      "does NOT fit the %.0f%% of the GPU the plan leaves to the model, within the GPU itself: "
      "it may not start (published layouts that ran reach this far)",
      100 * kUsableMemoryFraction);
}

std::string MemoryParts(const v1::MemoryEstimate& m) {
  // A pipeline's fullest GPU is named when it is not the first stage's.
  const std::string stage =
      m.stage() > 0 ? absl::StrFormat(", pipeline stage %d from 0, the fullest", m.stage()) : "";
  std::string out = absl::StrFormat(
      "memory per GPU %.1f GiB of %.0f (estimate%s): weights %.1f, gradients %.1f, optimizer "
      "%.1f, ",
      m.total_bytes() / kGiB, m.capacity_bytes() / kGiB, stage, m.weights_bytes() / kGiB,
      m.gradients_bytes() / kGiB, m.optimizer_bytes() / kGiB);
  if (m.gathered_bytes() > 0) {
    absl::StrAppendFormat(&out, "gathered %.1f, ", m.gathered_bytes() / kGiB);
  }
  absl::StrAppendFormat(&out, "activations %.1f", m.activations_bytes() / kGiB);
  if (m.offloaded_bytes() > 0) {
    absl::StrAppendFormat(&out, " (%.1f on the host", m.offloaded_bytes() / kGiB);
    if (m.host_capacity_bytes() > 0) {
      absl::StrAppendFormat(&out, " of %.0f per GPU", m.host_capacity_bytes() / kGiB);
    }
    out += ")";
  }
  if (m.kv_cache_bytes() > 0) {
    absl::StrAppendFormat(&out, ", KV cache %.1f", m.kv_cache_bytes() / kGiB);
  }
  return out;
}

namespace {

// "training step on 64 GPUs (8 nodes): t=8 p=4 d=2, global batch 1024 = 512 micro-batches per
// data-parallel rank; PREDICTED".
std::string StepHeadline(const v1::StepBreakdown& b) {
  return absl::StrFormat(
      "training step on %d GPUs (%d node%s): t=%d p=%d%s d=%d%s, global batch %d = %d "
      "micro-batch%s per data-parallel rank; PREDICTED\n",
      b.gpus(), b.nodes(), b.nodes() == 1 ? "" : "s", b.tensor_parallel(), b.pipeline_parallel(),
      b.context_parallel() > 1 ? absl::StrCat(" c=", b.context_parallel()) : "", b.data_parallel(),
      b.expert_parallel() > 1 ? absl::StrCat(" (e=", b.expert_parallel(), " of them)") : "",
      b.global_batch(), b.microbatches(), b.microbatches() == 1 ? "" : "es");
}

// The step's components with their time and share of the step, the step last.
std::string StepComponents(const v1::StepBreakdown& b) {
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
      // With context parallelism the gradients reduce over the data- and context-parallel ranks;
      // ZeRO-3 gathers the weights too (and FSDP2 copies them on the compute stream).
      {b.zero_stage() >= 3 ? (cp ? "FSDP over DP+CP ranks" : "FSDP gathers and reduces")
       : cp                ? "DP+CP gradient sync"
                           : "DP communication",
       b.dp_comm_s(), true},
      {"optimizer", b.optimizer_s(), true}};
  Table t({"component", "time", "share"});
  for (const auto& [name, s, shown] : parts) {
    if (!shown) continue;
    t.Add({name, HumanSeconds(s),
           absl::StrFormat("%.1f%%", b.step_time_s() > 0 ? 100 * s / b.step_time_s() : 0)});
  }
  t.Add({"step", HumanSeconds(b.step_time_s()), "100%"});
  return t.Render();
}

// MFU and throughput, the time to train when asked, and the planner's error band when known.
std::string StepFigures(const v1::StepBreakdown& b) {
  std::string out = absl::StrFormat("MFU %.1f%%, %.0f TFLOP/s per GPU, %s tokens/s per GPU\n",
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
                          "error band: a measured step %+.0f%% .. %+.0f%% off this prediction "
                          "(p10..p90 of %d published %s runs the planner was checked against)\n",
                          100 * b.error_band_p10(), 100 * b.error_band_p90(), b.error_band_runs(),
                          b.error_band_kind());
    if (!b.error_band_gpu_checked() && b.error_band_gpus_size() > 0) {
      absl::StrAppendFormat(&out,
                            "            those runs were on %s, none on this GPU: the band is a "
                            "prediction beyond them, the miss here likely wider (and the step "
                            "longer, where the sustained-load line charges none)\n",
                            absl::StrJoin(b.error_band_gpus(), ", "));
    }
  }
  return out;
}

// A layout's recomputation in words; `none` for none.
absl::string_view RecomputeLabel(v1::Recompute r, absl::string_view none) {
  switch (r) {
    case v1::RECOMPUTE_FULL:
      return "full";
    case v1::RECOMPUTE_SELECTIVE:
      return "selective";
    case v1::RECOMPUTE_OP:
      return "op-level selective";
    default:
      return none;
  }
}

// "layout: sequence parallel, selective recomputation, ZeRO stage 1, micro-batch 1; memory per
// GPU ...; fits".
std::string StepLayout(const v1::StepBreakdown& b) {
  return absl::StrFormat(
      "layout: %s, %s recomputation%s, ZeRO stage %d%s%s, micro-batch %d; %s; %s\n",
      b.sequence_parallel() ? "sequence parallel" : "no sequence parallelism",
      RecomputeLabel(b.recompute(), "no"),
      b.recompute_mla_up_proj() ? ", MLA up-projections recomputed" : "", b.zero_stage(),
      b.offload_activations() ? ", activations offloaded" : "",
      b.interleave() > 1 ? absl::StrFormat(", %d interleaved stages per rank", b.interleave())
                         : "",
      std::max<int64_t>(b.micro_batch_size(), 1), MemoryParts(b.memory()),
      FitWords(b.memory()));
}

}  // namespace

std::string FormatStepBreakdown(const v1::StepBreakdown& b) {
  std::string out =
      absl::StrCat(StepHeadline(b), StepComponents(b), StepFigures(b), StepLayout(b));
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
           absl::StrCat(RecomputeLabel(b.recompute(), "none"),
                        b.recompute_mla_up_proj() ? "+mla" : ""),
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

// Where the other count of attention's FLOPs moves MFU by 5% or more (long sequences), what it
// reads under that count, so that a team compares it with its framework's.
std::string OtherCountNote(const v1::StepBreakdown& b, const std::string& flop_count) {
  if (b.mfu() <= 0 || std::abs(b.mfu_other_count() / b.mfu() - 1) < 0.05) return "";
  const bool causal = flop_count == "causal";
  return absl::StrFormat("; MFU %.1f%% counting its %s: --flop-count %s",
                         100 * b.mfu_other_count(), causal ? "whole s × s product" : "causal half",
                         causal ? "full" : "causal");
}

}  // namespace

// The run's answer line: the step when it fits; a run as given that does not fit is not an
// answer, and the plan that fits (layouts[0]) is said instead; a layout search's table after.
std::string RunAnswer(const v1::AnalyzeResponse& r) {
  std::string out;
  const v1::StepBreakdown* answer = &r.step();
  const bool given_fits = r.step().memory().fits();
  const bool searched_plan = !r.layouts().empty() && r.layouts(0).step().memory().fits();
  if (!given_fits && searched_plan) {
    absl::StrAppendFormat(&out,
                          "as given        %s per step, but %s; the plan that fits on these "
                          "GPUs:\n",
                          HumanSeconds(r.step_time_s()),
                          PastMarginWithinGpu(r.step().memory())
                              ? "its memory is past the share the plan leaves to the model "
                                "(it may not start)"
                              : "it does NOT fit in memory: not an answer");
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
                          "the answer      %s per step, MFU %.1f%%%s, %.0f TFLOP/s per GPU (%s "
                          "attention FLOPs%s), %s tokens/s per GPU (the run: %s)\n",
                          HumanSeconds(answer->step_time_s()), 100 * answer->mfu(),
                          r.model().dtype() == v1::DTYPE_FP8_E4M3 ? " of the FP8 peak" : "",
                          answer->tflops_per_gpu(),
                          r.flop_count().empty() ? "full" : r.flop_count(),
                          OtherCountNote(*answer, r.flop_count()),
                          HumanCount(answer->tokens_per_second_per_gpu()), LayoutLine(*answer));
  }
  if (!r.layouts().empty()) absl::StrAppend(&out, LayoutsTable(r));
  return out;
}

}  // namespace wavecrest
