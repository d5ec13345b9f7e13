// One micro-batch of a training step on one tensor-parallel rank, split the way the planner's
// pipeline and recomputation need it (core/parallelism.cc's PlanStep): the layers, the last
// stage's head, the forward parts recomputation repeats. PREDICTIONS, as the planner's figures.
#ifndef WAVECREST_CORE_MICRO_BATCH_H_
#define WAVECREST_CORE_MICRO_BATCH_H_

#include "core/analysis.h"
#include "core/parallelism.h"

namespace wavecrest {

// One micro-batch on one tensor-parallel rank, split the way the pipeline and recomputation need.
struct MicroBatch {
  double layers_s = 0;             // every transformer layer, forward and backward
  double head_s = 0;               // the logits GEMMs and the loss (the last stage's extra)
  double layers_forward_s = 0;     // the layers' forward (full recomputation repeats it)
  double attention_forward_s = 0;  // attention's core forward (selective recomputation)
  double attention_s = 0;          // attention's core, forward and backward (hides CP's sends)
  double op_recompute_s = 0;       // what the op-level policy runs again (core/op_recompute.h)
  double moe_forward_s = 0;        // the MoE layers' GEMMs forward (RunConfig::recompute_moe)
  double mla_up_forward_s = 0;     // MLA's up-projections forward (recompute_mla_up_proj)
};

// The micro-batch's parts from the analysis's GEMMs and elementwise work, with what the run adds:
// eager kernels (RunConfig::eager, rope_unfused), rowwise FP8's casts, Megatron-Core's unfused
// expert ops (moe_unfused_ops), an eager loss (loss) and multi-token prediction on the last stage
// (mtp_layers).
MicroBatch SplitMicroBatch(const Analysis& a, const RunConfig& run);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_MICRO_BATCH_H_
