// Published model-state memory per GPU under ZeRO, and the models they are for:
//
// - Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
//   Models" (arXiv 1910.02054), Figure 1: a 7.5B-parameter model on 64 data-parallel GPUs with
//   mixed-precision Adam (16-bit weights and gradients, K = 12 bytes of optimizer state):
//   120 GB without ZeRO, 31.4 GB with the optimizer state partitioned (P_os), 16.6 GB with the
//   gradients too (P_os+g), 1.9 GB with the weights too (P_os+g+p). GB = 10^9 bytes.
// - DeepSpeed's memory estimator documentation (github.com/deepspeedai/DeepSpeed,
//   docs/code-docs/source/memory.rst, Apache-2.0): t5-3b (2851M parameters, 32M in its largest
//   layer) on one node of 8 GPUs without offload: 6.10 GB per GPU under ZeRO-3 and 15.93 GB under
//   ZeRO-2 (the estimator prints GiB as "GB"). Its ZeRO-3 figure is 18 bytes per parameter over
//   the GPUs plus 4 bytes per parameter of the largest layer gathered; its ZeRO-2 figure keeps the
//   16-bit gradients whole (4 + 16/N bytes per parameter), which wavecrest does not: it shards the
//   gradients as backward produces them (2 + 16/N), so that row differs by design.
//
// wavecrest's stand-ins: a GPT of h = 4096, L = 36 (tied embeddings, learned positions: 7.46B,
// 0.5% under 7.5B) for the paper's model, and a decoder of T5-3B's width (h = 1024, 32 heads of
// 128, a 16384-wide GELU MLP, a 32128-token vocabulary) with 56 layers (2852M parameters) for
// t5-3b, whose 24 encoder and 24 decoder layers (with cross-attention) hold the same parameters.
// Used by bench/megatron_validation.cc and tests/core/memory_test.cc.
#ifndef WAVECREST_BENCH_ZERO_FIGURES_H_
#define WAVECREST_BENCH_ZERO_FIGURES_H_

#include <cstdint>

#include "core/memory.h"
#include "core/model_spec.h"
#include "core/units.h"

namespace wavecrest {

struct ZeroFigure {
  const char* source;
  bool zero_paper;  // the 7.5B model (else the t5-3b stand-in)
  int zero_stage;
  int64_t gpus;
  int gradient_bytes;     // the publication's accounting
  double published_bytes;  // per GPU
  bool by_design_different;  // a convention wavecrest does not follow (see above)
};

inline constexpr double kGB = 1e9;

inline constexpr ZeroFigure kZeroFigures[] = {
    {"ZeRO paper Fig. 1, baseline", true, 0, 64, 2, 120 * kGB, false},
    {"ZeRO paper Fig. 1, P_os", true, 1, 64, 2, 31.4 * kGB, false},
    {"ZeRO paper Fig. 1, P_os+g", true, 2, 64, 2, 16.6 * kGB, false},
    {"ZeRO paper Fig. 1, P_os+g+p", true, 3, 64, 2, 1.9 * kGB, false},
    {"DeepSpeed estimator, t5-3b ZeRO-3", false, 3, 8, 4, 6.10 * kGiB, false},
    {"DeepSpeed estimator, t5-3b ZeRO-2", false, 2, 8, 4, 15.93 * kGiB, true},
};

inline ModelSpec ZeroFigureSpec(const ZeroFigure& f) {
  ModelSpec s;
  if (f.zero_paper) {
    s.name = "zero-paper-7.5b";
    s.hidden_size = 4096;
    s.num_attention_heads = 32;
    s.num_layers = 36;
    s.vocab_size = 50257;
    s.learned_position_embeddings = 2048;
    s.bias = Bias::kAll;
  } else {
    s.name = "t5-3b-width";
    s.hidden_size = 1024;
    s.num_attention_heads = 32;
    s.head_dim = 128;
    s.num_layers = 56;
    s.ffn_hidden_size = 16384;
    s.vocab_size = 32128;
    s.norm = Norm::kRmsNorm;
  }
  s.tied_embeddings = true;
  s.dtype = DType::kFp16;
  return *NormalizeSpec(s);
}

inline MemoryLayout ZeroFigureLayout(const ZeroFigure& f) {
  MemoryLayout l;
  l.data_parallel = f.gpus;
  l.zero_stage = f.zero_stage;
  l.gradient_bytes = f.gradient_bytes;
  return l;
}

// What the publications count: weights, gradients, optimizer state, and (ZeRO-3, DeepSpeed) the
// gathered layer; not activations.
inline double ModelStateBytes(const MemoryEstimate& m, const ZeroFigure& f) {
  return m.weights_bytes + m.gradients_bytes + m.optimizer_bytes +
         (f.zero_paper ? 0 : m.gathered_bytes);
}

}  // namespace wavecrest

#endif  // WAVECREST_BENCH_ZERO_FIGURES_H_
