// Context parallelism's ring as the planner prices it (core/parallelism.h): what one
// micro-batch's ring through a stage's layers costs beyond the attention kernels it runs beside,
// for Transformer Engine's ring and PyTorch's (CpRing). PREDICTIONS, as everything of the planner.
#ifndef WAVECREST_CORE_CONTEXT_PARALLEL_H_
#define WAVECREST_CORE_CONTEXT_PARALLEL_H_

namespace wavecrest {

struct Analysis;
struct ModelSpec;
struct RunConfig;

// PyTorch's ring's chunk: a rank's K and V of its query heads for one micro-batch, 16-bit bytes
// (b·s/c tokens × heads × (query head dim + value head dim) × 2).
double TorchRingChunkBytes(const ModelSpec& spec);

// The ring of one micro-batch through one stage's `layers`, what attention's kernels do not hide:
// `attention_layer_s` is a layer's attention core forward and backward, of it
// `attention_forward_layer_s` forward. 0 without context parallelism.
double ContextParallelS(const Analysis& a, const RunConfig& run, double layers,
                        double attention_layer_s, double attention_forward_layer_s);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_CONTEXT_PARALLEL_H_
