// Predicted step times of Megatron's published Selene runs (bench/megatron_runs.h: Korthikanti
// et al. 2022, Table 5) against the published ones, their activation memory against Figure 1,
// and model-state memory under ZeRO against the ZeRO paper and DeepSpeed's estimator
// (bench/zero_figures.h). Nothing of the parallelism or memory model was fitted to these. Prints
// one row per case and the mean and largest |error|. A benchmark, not a
// test: the figures are committed under bench/results/ by scripts/bench.sh.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/megatron_runs.h"
#include "bench/zero_figures.h"
#include "core/model_stats.h"

int main() {
  using namespace wavecrest;
  const GpuSpec& gpu = **FindGpu("a100-sxm-80gb");
  std::printf(
      "Megatron on Selene (A100 80GB, FP16, t=8): predicted step time vs Korthikanti et al. "
      "2022, Table 5\n");
  std::printf("%-13s %-7s %5s %4s %4s %4s %9s %9s %7s | %7s %7s %7s %7s %7s %6s\n", "model", "mode",
              "gpus", "p", "m", "v", "published", "predicted", "error", "compute", "recomp",
              "tp_comm", "bubble", "pp+opt", "MFU");
  double sum = 0, worst = 0;
  int n = 0;
  for (const MegatronRun& run : kMegatronRuns) {
    for (bool seqsel : {false, true}) {
      const ModelSpec s = MegatronRunSpec(run);
      absl::StatusOr<Analysis> a = Analyze(s, gpu);
      if (!a.ok()) {
        std::fprintf(stderr, "%s: %s\n", run.model, std::string(a.status().message()).c_str());
        return 1;
      }
      const RunConfig rc = MegatronRunConfig(run, seqsel);
      absl::StatusOr<StepBreakdown> b = PlanStep(*a, rc);
      if (!b.ok()) {
        std::fprintf(stderr, "%s: %s\n", run.model, std::string(b.status().message()).c_str());
        return 1;
      }
      const double published = seqsel ? run.seqsel_s : run.full_s;
      const double error = b->step_s / published - 1;
      sum += std::fabs(error);
      worst = std::max(worst, std::fabs(error));
      ++n;
      std::printf(
          "%-13s %-7s %5lld %4lld %4lld %4lld %9.2f %9.2f %+6.1f%% | %7.2f %7.2f %7.2f %7.2f "
          "%7.2f %5.1f%%\n",
          run.model, seqsel ? "seqsel" : "full", static_cast<long long>(b->gpus),
          static_cast<long long>(run.pipeline), static_cast<long long>(b->microbatches),
          static_cast<long long>(run.interleave), published, b->step_s, 100 * error, b->compute_s,
          b->recompute_s, b->tp_comm_s, b->pp_bubble_s, b->pp_comm_s + b->optimizer_s,
          100 * b->mfu);
    }
  }
  std::printf(
      "mean |error| %.1f%%, largest %.1f%% over %d runs (PREDICTED: the A100 cost model's "
      "calibration band applies to the compute part)\n",
      100 * sum / n, 100 * worst, n);
  // Figure 1: activation memory per GPU of the first stage.
  std::printf(
      "\nactivation memory per GPU, first stage: predicted vs Korthikanti et al. 2022, "
      "Figure 1 (GiB)\n");
  std::printf("%-13s %-7s %9s %9s %7s\n", "model", "mode", "published", "predicted", "error");
  sum = worst = 0;
  n = 0;
  for (const MegatronRun& run : kMegatronRuns) {
    for (bool seqsel : {false, true}) {
      absl::StatusOr<Analysis> a = Analyze(MegatronRunSpec(run), gpu);
      absl::StatusOr<StepBreakdown> b =
          a.ok() ? PlanStep(*a, MegatronRunConfig(run, seqsel, /*none=*/!seqsel))
                 : absl::StatusOr<StepBreakdown>(a.status());
      if (!b.ok()) {
        std::fprintf(stderr, "%s: %s\n", run.model, std::string(b.status().message()).c_str());
        return 1;
      }
      const double published = seqsel ? run.act_seqsel_gib : run.act_none_gib;
      const double predicted = b->memory.activations_bytes / (1024.0 * 1024 * 1024);
      const double error = predicted / published - 1;
      sum += std::fabs(error);
      worst = std::max(worst, std::fabs(error));
      ++n;
      std::printf("%-13s %-7s %9.2f %9.2f %+6.1f%%\n", run.model, seqsel ? "seqsel" : "none",
                  published, predicted, 100 * error);
    }
  }
  std::printf(
      "mean |error| %.1f%%, largest %.1f%% over %d runs (ESTIMATE; the logits' FP32 copy "
      "on a single stage included)\n",
      100 * sum / n, 100 * worst, n);
  // ZeRO: model states per GPU (weights, gradients, optimizer; DeepSpeed's ZeRO-3 also the
  // gathered layer) under each publication's gradient accounting.
  std::printf("\nmodel-state memory per GPU under ZeRO: predicted vs published (GB = 1e9 bytes)\n");
  std::printf("%-36s %6s %5s %4s %9s %9s %7s\n", "source", "params", "stage", "gpus", "published",
              "predicted", "error");
  sum = worst = 0;
  n = 0;
  for (const ZeroFigure& f : kZeroFigures) {
    const ModelSpec s = ZeroFigureSpec(f);
    const double predicted = ModelStateBytes(EstimateMemory(s, gpu, ZeroFigureLayout(f)), f);
    const double error = predicted / f.published_bytes - 1;
    if (!f.by_design_different) {
      sum += std::fabs(error);
      worst = std::max(worst, std::fabs(error));
      ++n;
    }
    std::printf("%-36s %5.2fB %5d %4lld %9.2f %9.2f %+6.1f%%%s\n", f.source,
                static_cast<double>(CountParams(s).total_params) / 1e9, f.zero_stage,
                static_cast<long long>(f.gpus), f.published_bytes / 1e9, predicted / 1e9,
                100 * error,
                f.by_design_different
                    ? "  (by design: DeepSpeed's ZeRO-2 keeps the 16-bit gradients whole)"
                    : "");
  }
  std::printf("mean |error| %.1f%%, largest %.1f%% over %d figures (ESTIMATE)\n", 100 * sum / n,
              100 * worst, n);
  return 0;
}
