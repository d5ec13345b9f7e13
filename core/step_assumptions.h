// What a planned step takes for granted, in words (StepBreakdown::assumptions): the pipeline
// schedule, the links and their sources, what overlaps with compute, the FLOP count, FP8,
// ZeRO-3, expert and context parallelism, offload, the attention kernel.
#ifndef WAVECREST_CORE_STEP_ASSUMPTIONS_H_
#define WAVECREST_CORE_STEP_ASSUMPTIONS_H_

#include <string>
#include <vector>

#include "core/analysis.h"
#include "core/parallelism.h"

namespace wavecrest {

// Whether the pipeline sends run under compute: Megatron-LM overlaps them in the interleaved
// schedule unless told not to, and cannot in plain 1F1B.
inline bool PipelineSendsOverlapped(const RunConfig& run) {
  return run.pp_overlap && run.interleave > 1;
}

// How a hybrid model's layers are priced, in words (its layer counts; the Mamba-2 scan).
std::string HybridAssumption(const ModelSpec& s);

std::vector<std::string> Assumptions(const Analysis& a, const RunConfig& run,
                                     const StepBreakdown& r);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_STEP_ASSUMPTIONS_H_
