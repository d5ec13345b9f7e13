// Op-level selective activation checkpointing, as PyTorch-native stacks run it: TorchTitan's
// "selective" mode with its default `selective_ac_option = 'op'` (train_configs/llama3_*.toml at
// 9dec370). Its policy (torchtitan/parallelisms/parallelize_llama.py at 9dec370, `_save_list`
// and `_custom_policy`) keeps for backward the outputs of the matrix multiplications
// (aten.mm), of the attention kernel (SDPA) and of the collectives' reduce-scatter, except every
// second mm of a transformer block in the order the block runs them (the counter starts again
// at each block); everything else the block computes (norms, rotary embedding, activations,
// residual adds, the skipped mms, and grouped expert GEMMs, which are not aten.mm) is run again
// during backward. In a Llama block the mms run wq, wk, wv, wo, w1, w3, w2: wk, wo and w3 are
// recomputed, a third of the block's forward matmul work for Llama 3.1 8B.
//
// Recompute::kOp selects it (`--recompute op`); Megatron's "selective" (Recompute::kSelective)
// is a different policy (attention's core only).
#ifndef WAVECREST_CORE_OP_RECOMPUTE_H_
#define WAVECREST_CORE_OP_RECOMPUTE_H_

#include "core/analysis.h"
#include "core/derived_shape.h"
#include "core/model_spec.h"

namespace wavecrest {

// The forward work the op policy runs again in one step's backward, seconds on one rank for one
// micro-batch through every layer: the recomputed mms' predicted forward times and the layers'
// forward elementwise work (a third of their forward + backward, as full recomputation counts
// it), without attention's core (SDPA's output is kept). `gemm_stretch` scales the mms' times
// (GpuSpec::sustained_gemm_stretch in a planned step).
double OpRecomputeForwardS(const Analysis& a, double gemm_stretch = 1.0);

// Bytes per token one layer keeps for backward under the op policy on one tensor-parallel rank,
// 16-bit: the layer's input (the checkpoint's), the kept mms' outputs and the attention kernel's
// output. `sequence_parallel`: the layer input splits over t.
double OpRecomputeStoredBytesPerToken(const ModelSpec& spec, const DerivedShape& d,
                                      bool sequence_parallel);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_OP_RECOMPUTE_H_
