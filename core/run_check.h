// The checks of a training run (RunConfig, core/parallelism.h) against the model it runs
// (core/run_check.cc), and the ranks it implies: PlanStep's first step.
#ifndef WAVECREST_CORE_RUN_CHECK_H_
#define WAVECREST_CORE_RUN_CHECK_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/model_spec.h"
#include "core/parallelism.h"

namespace wavecrest {

// Checks `run` for the normalized spec `s` with `tp` = t·p·c GPUs per model replica, and sets the
// data-parallel degree `*d` (num_gpus / tp; without num_gpus the spec's data_parallel, or under
// expert parallelism the fewest ranks that hold its group) and the micro-batches per step `*m`
// (global_batch / (b·d); without global_batch, p). INVALID_ARGUMENT naming the field
// ("run.num_gpus: ...", "model.expert_parallel: ...") when the run cannot be laid out or a setting
// is out of range.
absl::Status CheckRun(const ModelSpec& s, const RunConfig& run, int64_t tp, int64_t* d,
                      int64_t* m);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_RUN_CHECK_H_
