// The planner's error band by kind of run (dense, FSDP, expert-parallel MoE, context parallel):
// measured step / predicted - 1 at p10 and p90 over the published runs it was checked against,
// and the GPUs those runs ran on. Every step carries its kind's (core/parallelism.h StepBreakdown).
#ifndef WAVECREST_CORE_PLANNER_BANDS_H_
#define WAVECREST_CORE_PLANNER_BANDS_H_

#include <string>
#include <vector>

#include "core/model_spec.h"

namespace wavecrest {

struct RunConfig;

// The kinds of run the planner's error band is kept for.
inline constexpr char kBandDense[] = "dense";
inline constexpr char kBandExpertParallel[] = "expert-parallel MoE";
inline constexpr char kBandContextParallel[] = "context parallel";
// Context parallelism with PyTorch's ring (CpRing::kTorch, TorchTitan's): its runs miss by far more
// than Transformer Engine's, and by more the more ranks the ring has.
inline constexpr char kBandContextParallelTorch[] = "PyTorch-ring context parallel";
inline constexpr char kBandFsdp[] = "FSDP (ZeRO-3)";
// ZeRO-3 priced with its collectives hidden layer by layer (RunConfig::zero3_prefetch): the runs
// priced so (TorchTitan's, NeMo AutoModel's FSDP2) miss by more than those priced exposed.
inline constexpr char kBandFsdpPrefetch[] = "prefetched FSDP (ZeRO-3)";
struct PlannerBand {
  const char* kind;
  double p10;  // measured step / predicted - 1
  double p90;
  int runs;
};
// The bands of every kind, from bench/results/planner_bands.txt (`bench/published_runs --bands`
// over the A100, MosaicML H100 and NVIDIA DGX-H100 runs; CTest planner_bands_current keeps them
// equal).
const std::vector<PlannerBand>& PlannerBands();
const PlannerBand& PlannerBandOf(const std::string& kind);  // dense when unknown
// The catalogue GPUs the bands' published runs ran on (`bench/published_runs --bands` lists them;
// CTest planner_bands_current keeps them equal), sorted.
const std::vector<std::string>& PlannerBandGpus();
// A run's kind: context parallelism with PyTorch's ring (the widest band), else expert
// parallelism, else context parallelism, else FSDP (ZeRO stage 3; with zero3_prefetch a kind of
// its own), else dense.
const char* PlannerBandKind(const ModelSpec& s, const RunConfig& run);
const PlannerBand& PlannerBandFor(const ModelSpec& s, const RunConfig& run);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_PLANNER_BANDS_H_
