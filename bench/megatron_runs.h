// Megatron's published Selene runs: Korthikanti et al. 2022, "Reducing Activation Recomputation
// in Large Transformer Models" (arXiv 2205.05198), Table 5 — GPT models of 22B to 1T parameters
// on A100 80GB (DGX A100), FP16, tensor parallelism 8, each with full activation recomputation
// and with sequence parallelism plus selective recomputation, and the step times the paper
// reports. The shapes and run layouts are as Calculon (Apache-2.0,
// github.com/calculon-ai/calculon: models/*.json, validation/seqsel/tab5/*.json) reproduces them.
// Megatron of 2022 ran attention unfused (fused softmax, no FlashAttention), GPT-style: LayerNorm,
// GELU MLP of 4h, biases, learned positions, tied embeddings, a vocabulary of 51,200.
// Used by bench/megatron_validation.cc and tests/core/parallelism_test.cc.
#ifndef WAVECREST_BENCH_MEGATRON_RUNS_H_
#define WAVECREST_BENCH_MEGATRON_RUNS_H_

#include <cstdint>

#include "core/analysis.h"
#include "core/parallelism.h"

namespace wavecrest {

struct MegatronRun {
  const char* model;
  int64_t hidden, heads, layers;
  int64_t gpus, pipeline, global_batch, micro_batch, interleave;
  double full_s, seqsel_s;  // published step times (Table 5), seconds
  // Published activation memory per GPU of the first stage (Figure 1), GiB: with tensor
  // parallelism alone and no recomputation, and with sequence parallelism and selective
  // recomputation (as Calculon's validation transcribes the figure).
  double act_none_gib, act_seqsel_gib;
};

inline constexpr MegatronRun kMegatronRuns[] = {
    {"megatron-22B", 6144, 64, 48, 8, 1, 4, 4, 1, 1.42, 1.10, 59.25, 9.5625},
    {"gpt3-175B", 12288, 96, 96, 64, 8, 64, 1, 3, 18.13, 13.75, 66.84375, 12.3515625},
    {"turing-530B", 20480, 128, 105, 280, 35, 280, 1, 3, 49.05, 37.83, 114.0234375, 23.076171875},
    {"megatron-1T", 25600, 160, 128, 512, 64, 512, 1, 1, 94.42, 71.49, 131.25, 26.5625},
};

inline ModelSpec MegatronRunSpec(const MegatronRun& run) {
  ModelSpec s;
  s.name = run.model;
  s.hidden_size = run.hidden;
  s.num_attention_heads = run.heads;
  s.num_layers = run.layers;
  s.ffn_hidden_size = 4 * run.hidden;
  s.vocab_size = 51200;
  s.seq_length = 2048;
  s.micro_batch_size = run.micro_batch;
  s.tensor_parallel = 8;
  s.pipeline_parallel = run.pipeline;
  s.dtype = DType::kFp16;
  s.attention = Attention::kUnfused;
  s.bias = Bias::kAll;
  s.tied_embeddings = true;
  s.learned_position_embeddings = 2048;
  return s;
}

// `seqsel`: sequence parallelism and selective recomputation; otherwise full recomputation (or,
// with `none`, no recomputation: Figure 1's baseline).
inline RunConfig MegatronRunConfig(const MegatronRun& run, bool seqsel, bool none = false) {
  RunConfig rc;
  rc.num_gpus = run.gpus;
  rc.global_batch = run.global_batch;
  rc.interleave = run.interleave;
  rc.sequence_parallel = seqsel;
  rc.recompute = seqsel ? Recompute::kSelective : none ? Recompute::kNone : Recompute::kFull;
  // The 2022 runs predate Megatron-LM's pipeline-send overlap (added 2023-05-31, f9283c5a8a).
  rc.pp_overlap = false;
  return rc;
}

}  // namespace wavecrest

#endif  // WAVECREST_BENCH_MEGATRON_RUNS_H_
