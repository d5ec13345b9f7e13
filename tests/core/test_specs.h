// Model specs and GPUs shared by the core tests.
#ifndef WAVECREST_TESTS_CORE_TEST_SPECS_H_
#define WAVECREST_TESTS_CORE_TEST_SPECS_H_

#include "core/gemm_plan.h"
#include "core/gpu_catalog.h"
#include "core/model_spec.h"

namespace wavecrest::testing {

// A small GPT-style model (GELU, LayerNorm, h/a = 128), not normalized: callers set the rest.
inline ModelSpec SmallGpt(int64_t hidden, int64_t layers, int64_t seq) {
  ModelSpec s;
  s.hidden_size = hidden;
  s.num_attention_heads = hidden / 128;
  s.num_layers = layers;
  s.vocab_size = 1024;
  s.seq_length = seq;
  return s;
}

// Pythia-2.8B (h = 2560, a = 32, h/a = 80, L = 32, v = 50304, GELU, biases), normalized: the
// paper's running example.
inline ModelSpec Pythia28(Attention attention) {
  ModelSpec s;
  s.name = "pythia-2.8b";
  s.hidden_size = 2560;
  s.num_attention_heads = 32;
  s.num_layers = 32;
  s.vocab_size = 50304;
  s.bias = Bias::kAll;
  s.attention = attention;
  return *NormalizeSpec(s);
}

// A Llama-style model (SwiGLU, RMSNorm, grouped-query attention, untied embeddings), not
// normalized: callers set what else they need.
inline ModelSpec LlamaLike(int64_t hidden, int64_t heads, int64_t kv_heads, int64_t layers,
                           int64_t ffn, int64_t vocab) {
  ModelSpec s;
  s.hidden_size = hidden;
  s.num_attention_heads = heads;
  s.num_kv_heads = kv_heads;
  s.num_layers = layers;
  s.ffn_hidden_size = ffn;
  s.mlp = Mlp::kSwiglu;
  s.norm = Norm::kRmsNorm;
  s.vocab_size = vocab;
  return s;
}

// `s` with DeepSeek-V3's multi-latent attention (deepseek-ai/DeepSeek-V3 config.json): every
// head a KV head, query and key heads of 192 (128 + 64 rotary), latents of 1536 and 512; not
// normalized.
inline ModelSpec WithMla(ModelSpec s) {
  s.num_kv_heads = s.num_attention_heads;
  s.head_dim = 192;
  s.qk_rope_head_dim = 64;
  s.kv_lora_rank = 512;
  s.q_lora_rank = 1536;
  return s;
}

// GPT-OSS-120B's shape (openai/gpt-oss-120b config.json): hidden 2880, 64 heads of 64 over 8 KV
// heads, 36 layers, 128 experts of 2880 with biases and a clamped GLU, top 4; 4K tokens on
// whole experts over ep ranks, not normalized.
inline ModelSpec GptOss120B(int64_t expert_parallel) {
  ModelSpec s = LlamaLike(2880, 64, 8, 36, 2880, 201088);
  s.head_dim = 64;
  s.num_experts = 128;
  s.experts_per_token = 4;
  s.expert_parallel = expert_parallel;
  s.expert_tensor_parallel = 1;
  s.seq_length = 4096;
  s.bias = Bias::kAll;
  s.glu_clamp = 7;
  return s;
}

// Llama 3 70B at 8K tokens on t × p ranks, not normalized.
inline ModelSpec Llama70B(int64_t tensor_parallel, int64_t pipeline_parallel) {
  ModelSpec s = LlamaLike(8192, 64, 8, 80, 28672, 128256);
  s.name = "llama-3-70b";
  s.seq_length = 8192;
  s.tensor_parallel = tensor_parallel;
  s.pipeline_parallel = pipeline_parallel;
  return s;
}

// The catalog's H100 SXM.
inline const GpuSpec& H100() { return **FindGpu("h100-sxm"); }

// What a worker reports of an H100: compute capability 9.0, 50 MiB of L2, 79 GiB free.
inline DeviceLimits H100Limits() {
  DeviceLimits d;
  d.compute_capability = 90;
  d.l2_bytes = 50 << 20;
  d.free_bytes = int64_t{79} << 30;
  return d;
}

}  // namespace wavecrest::testing

#endif  // WAVECREST_TESTS_CORE_TEST_SPECS_H_
