// wavecrest: the command-line client.
//
//   wavecrest analyze --model FILE --gpu NAME [--seq N] [--micro-batch N] [--tp N] [--dtype D]
//                     [--attention A] [--workload W] [--format table|json] [--server ADDR]
//
// Flags may be written with '-' or '_' (--micro-batch or --micro_batch). The command line is
// parsed by client/args.cc (per-command flags and help, usage errors exit 2); the flags are
// defined here.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "client/args.h"
#include "client/cli.h"
#include "client/format.h"
#include "service/text.h"

ABSL_FLAG(std::string, model, "",
          "Model spec file: wavecrest JSON (examples/models/*.json) or a Hugging Face config.json");
ABSL_FLAG(std::string, gpu, "h100-sxm",
          "Target GPU: a catalog name (v100-sxm2, a100-sxm-40gb, a100-sxm-80gb, a100-pcie-40gb, "
          "a100-pcie-80gb, a10, l4, l40s, h100-sxm, h100-pcie, h100-sxm-96gb, h200, b200), the "
          "name nvidia-smi prints (\"NVIDIA A100-SXM4-80GB\"), or an unambiguous alias (h200-sxm, "
          "v100); an ambiguous one (a100, h100) is refused with the candidates");
ABSL_FLAG(int64_t, seq, 0, "Override seq_length (tokens per sequence); 0 = keep (default 2048)");
ABSL_FLAG(int64_t, micro_batch, 0, "Override micro_batch_size; 0 = keep (default 1)");
ABSL_FLAG(int64_t, tp, 0, "Override tensor_parallel degree; 0 = keep (default 1)");
ABSL_FLAG(int64_t, dp, 0,
          "Data-parallel replicas the optimizer state is sharded over, for the memory estimate; "
          "0 = keep (default 1, not sharded)");
ABSL_FLAG(int64_t, cp, 0,
          "Override context_parallel: ranks each sequence is split over (ring attention; 2 × cp "
          "must divide seq); 0 = keep (default 1)");
ABSL_FLAG(int64_t, ep, 0,
          "Override expert_parallel: ranks of the data/context-parallel ones each MoE layer's "
          "experts are split over (all-to-all dispatch and combine; must divide the experts); "
          "0 = keep (default 1)");
ABSL_FLAG(int64_t, etp, 0,
          "Override expert_tensor_parallel: 1 = whole experts, the tensor-parallel ranks joining "
          "the expert-parallel group (as NVIDIA's MoE recipes run them); 0 = keep (default tp)");
ABSL_FLAG(double, capacity_factor, 0,
          "Override moe_capacity_factor: every expert runs this many times its balanced share of "
          "the routed tokens, padded to it (GShard/Switch; Megatron-Core's "
          "--moe-expert-capacity-factor with padding); 0 = keep (default dropless)");
ABSL_FLAG(double, routing_skew, 0,
          "Override moe_routing_skew: dropless routing's imbalance, the busiest expert-parallel "
          "rank's routed tokens over the mean (its expert GEMMs and all-to-all set the pace); "
          "0 = keep (default 1, balanced)");
ABSL_FLAG(int64_t, pp, 0,
          "Override pipeline_parallel stages (when they do not divide the layers, the first and "
          "last take fewer, as Megatron-Core splits them); 0 = keep (default 1)");
ABSL_FLAG(int64_t, gpus, 0,
          "analyze: GPUs of the training run (a multiple of tp × pp × cp; the rest is data "
          "parallelism); with it (or any run flag) the answer breaks the step down into compute, "
          "recomputation, TP and CP communication, offload, pipeline bubble, DP communication "
          "and optimizer");
ABSL_FLAG(int64_t, global_batch, 0,
          "analyze: sequences per optimizer step; 0 = micro_batch × data-parallel ranks × pp");
ABSL_FLAG(int64_t, interleave, 0, "analyze: virtual pipeline stages per rank; 0 = 1");
ABSL_FLAG(bool, sequence_parallel, false, "analyze: Megatron sequence parallelism");
ABSL_FLAG(std::string, recompute, "", "analyze: activation recomputation: none, selective (Megatron's), full, op (TorchTitan's "
          "op-level policy)");
ABSL_FLAG(double, dp_overlap, 0,
          "analyze: fraction of the data-parallel gradient reduction hidden under backward");
ABSL_FLAG(bool, overlap_grad_reduce, false,
          "analyze: the gradient reduction beside the last micro-batch's backward and the weights' "
          "all-gather beside the first's forward (Megatron-Core's --overlap-grad-reduce and "
          "--overlap-param-gather, on in NVIDIA's NeMo recipes); off by default");
ABSL_FLAG(bool, ep_overlap, false,
          "analyze: one micro-batch's expert-parallel all-to-alls under another's MoE layers "
          "(Megatron-Core's --overlap-moe-expert-parallel-comm); off by default, as there");
ABSL_FLAG(std::string, ep_dispatcher, "",
          "analyze: how expert-parallel tokens travel (Megatron-Core's moe_token_dispatcher_type): "
          "alltoall (the default: one copy per routed expert) or flex (DeepEP, HybridEP: each "
          "token once to every node and rank holding one of its experts; deepep and hybridep "
          "name the same)");
ABSL_FLAG(std::string, fp8_recipe, "",
          "analyze: how an FP8 step scales its linears' operands: tensorwise (the default: one "
          "scale per tensor, as Transformer Engine and torchao's tensorwise; the tensor-parallel "
          "all-gathers move FP8) or rowwise (torchao's rowwise: tensor parallelism in 16 bits, as "
          "torchtitan runs it, and the backward's extra casts and rescaled outputs)");
ABSL_FLAG(std::string, loss, "",
          "analyze: how the loss over the logits runs: fused (the default: the FP32 softmax kept "
          "in place, 4 bytes a logit, as Megatron-Core's vocab-parallel cross entropy and a "
          "compiled loss) or eager (PyTorch's cross_entropy over an FP32 copy of the logits, "
          "uncompiled, as TorchTitan until 2025-04 and Hugging Face trainers: 12 bytes a logit "
          "held, and more memory traffic)");
ABSL_FLAG(std::string, cp_ring, "",
          "analyze: how context parallelism's ring runs: te (the default: Transformer Engine's "
          "ring, Megatron-Core's --cp-comm-type p2p, the KV heads' K and V sent beside each "
          "step) or torch (PyTorch's context_parallel as TorchTitan runs it, rotate method "
          "allgather: K and V of the query heads all-gathered under the first step, their FP32 "
          "gradients sent on each step, its FP32 merges and copies on the compute stream; "
          "TorchTitan's 6 published CP runs measured 7-54% slower than so priced, its own error "
          "band); with --cp, or with --plan for the layouts it searches with context "
          "parallelism");
ABSL_FLAG(double, moe_host_ms, -1,
          "analyze: milliseconds charged to the host per MoE layer and micro-batch (forward "
          "and backward together; a fitted constant, not a measured wait): the dropless "
          "dispatchers read each layer's token counts back to the CPU before the experts' kernels "
          "launch; -1 = the default (3 for dropless experts, fitted to NVIDIA's Megatron-Bridge "
          "MoE runs, the same for every model and GPU; 0 with a capacity factor); 0 = none (CUDA "
          "graphs over a static-shaped MoE block); --plan says when its choice rests on it");
ABSL_FLAG(double, sustained_stretch, 0,
          "analyze: how much longer the step's GEMMs (not attention's fused kernel) take under "
          "sustained load than the cost model's short-sweep rates, in [1, 2]; 0 = the GPU's (1.10 "
          "on h100-sxm and h100-sxm-96gb, fitted to NVIDIA's DGX Cloud runs; 1.04 on h200, "
          "measured; 1 on the others, not measured); 1 for GPUs that hold their clocks. To measure "
          "yours: a layer's GEMMs back to back for 30 s, the last 10 s's time per call over the "
          "first 0.3 s's (bench/gpu/torch_sustained.py)");
ABSL_FLAG(std::string, flop_count, "",
          "analyze: how MFU and TFLOP/s count attention's s x s products: full (the default: the "
          "whole product; PaLM's 6N + 12·L·a·d·s, NeMo's before 2025-08, MosaicML's) or causal "
          "(half of it, as Megatron-Core counts a causal mask); times do not change");
ABSL_FLAG(bool, fp8_param_gather, false,
          "analyze: FP8 training with the weights kept and all-gathered in FP8, 1 byte each "
          "(Megatron-Core's --fp8-param-gather, on in Megatron-Bridge's FP8 recipes); needs "
          "--dtype fp8_e4m3 and --zero-stage >= 1");
ABSL_FLAG(bool, no_reshard_after_forward, false,
          "analyze: ZeRO-3 (FSDP2) keeps each layer's gathered weights from forward to backward "
          "(reshard_after_forward=False, TorchTitan's default with pipeline parallelism): one "
          "gather per layer and micro-batch, the stage's weights held");
ABSL_FLAG(bool, zero3_prefetch, false,
          "analyze: price ZeRO-3 (FSDP) with each layer's gathers and reduce-scatter hidden under "
          "its neighbours' compute (FSDP's prefetch, ideal); off by default: all exposed, as "
          "MosaicML's and DeepSpeed's published FSDP runs measure; TorchTitan's and NeMo "
          "AutoModel's FSDP2 runs are priced with it, with FSDP2's copies of the gathered "
          "weights and of the gradients on the compute stream (their own error band says how "
          "they miss)");
ABSL_FLAG(int64_t, fsdp_shard, 0,
          "analyze: hybrid sharding (HSDP): ZeRO-3 within groups of this many data-parallel "
          "ranks (a node's 8, say), the groups all-reducing gradients as replicas; 0 = all");
ABSL_FLAG(bool, eager, false,
          "analyze: eager PyTorch: each elementwise op of a layer its own kernel (no "
          "torch.compile, no fused norm or activation), priced on top of fused kernels");
ABSL_FLAG(bool, rope_unfused, false,
          "analyze: the rotary embedding as its own kernels beside compiled ones (TorchTitan's "
          "complex-number RoPE, for which TorchInductor generates no code), priced as eager's; "
          "implied by --eager");
ABSL_FLAG(bool, moe_unfused_ops, false,
          "analyze: a MoE layer's expert ops as Megatron-Core's TEGroupedMLP runs them without "
          "fused MoE kernels (Megatron-LM through mid-2026): biased experts' output bias added "
          "expert by expert in FP32, a clamped GLU's clamp outside the fused activation "
          "(GPT-OSS); priced on top of fused kernels, nothing for experts with neither");
ABSL_FLAG(bool, recompute_moe, false,
          "analyze: Megatron-Core's recompute_modules \"moe\": each MoE layer's forward "
          "(router, all-to-alls, experts) run again in backward instead of keeping its "
          "activations, on top of --recompute");
ABSL_FLAG(bool, recompute_mla_up_proj, false,
          "analyze: Megatron-Core's recompute_modules \"mla_up_proj\" (NVIDIA's DeepSeek-V3 "
          "recipes): multi-latent attention's up-projections run again in backward, their "
          "full-head Q, K and V not kept beside the latents, on top of --recompute; needs an MLA "
          "model (kv_lora_rank > 0)");
ABSL_FLAG(int64_t, mtp_layers, 0,
          "analyze: multi-token prediction modules trained beside the model (DeepSeek-V3's 1; "
          "Megatron-Core's --mtp-num-layers), on the last pipeline stage: each one more layer, "
          "its 2h x h projection and one more pass through the output layer and loss; 0 = none");
ABSL_FLAG(double, tp_overlap, 0,
          "analyze: fraction of the tensor-parallel collectives hidden under their GEMMs "
          "(Megatron-Core's --tp-comm-overlap, priced as 1 in NVIDIA's recipes; TorchTitan's "
          "async TP hid 0.43 of them in its published pairs; 0, the default, when not given)");
ABSL_FLAG(bool, no_pp_overlap, false,
          "analyze: expose every pipeline send (Megatron-LM's --no-overlap-p2p-communication); by "
          "default the interleaved schedule's steady-state sends run under compute");
ABSL_FLAG(std::string, network, "",
          "analyze: the network across nodes: hdr-ib, ndr-ib, ndr-ib-sharp, xdr-ib, roce-100g, "
          "roce-200g, roce-400g, roce-800g (one NIC per GPU at that rate); empty: the GPU's "
          "reference system's");
ABSL_FLAG(bool, plan, false,
          "analyze: choose sequence parallelism, recomputation, the ZeRO stage, activation "
          "offload and, with pipeline stages and no --interleave, the interleave: the fastest "
          "layout whose memory fits; where the model leaves micro_batch_size unset (a Hugging "
          "Face config.json) and --global-batch is given, the micro-batch too (1, 2, 4, 8 or 16, "
          "those dividing the sequences per data-parallel rank); with --gpus and --global-batch, "
          "the tensor-, pipeline-, context- and expert-parallel degrees too (those the model "
          "leaves at 1; data parallelism takes the rest), the best few shown with why each loses");
ABSL_FLAG(bool, keep_degrees, false,
          "analyze --plan: hold the model's tensor-, pipeline-, context- and expert-parallel "
          "degrees as given instead of searching them");
ABSL_FLAG(double, tokens, 0,
          "analyze (a run): tokens to train on (1e12, 15T is 1.5e13): the step then says how long "
          "training on them takes and the GPU-hours");
ABSL_FLAG(bool, offload_activations, false,
          "analyze: copy each layer's stored activations to host memory and back (overlapped "
          "with compute; what is not hidden is the step's offload time)");
ABSL_FLAG(int32_t, gradient_bytes, 0,
          "analyze: bytes per gradient: 4 (0) FP32 main gradients as Megatron keeps them, 2 "
          "16-bit (the ZeRO paper's accounting, FSDP with a 16-bit reduce)");
ABSL_FLAG(int32_t, zero_stage, 0,
          "analyze: ZeRO over the data-parallel ranks: 0 none, 1 optimizer state (Megatron's "
          "distributed optimizer), 2 and gradients, 3 (FSDP) and weights");
ABSL_FLAG(std::string, tp_options, "",
          "recommend: tensor-parallel degrees every candidate must be legal for (heads, hidden and "
          "MLP width divisible by each; KV heads too, or replicated), comma-separated; the "
          "baseline is checked too; empty = the degrees a run of the model on the GPU would use: "
          "of 1,2,4,8 the baseline is legal for, the smallest whose memory fits on one node and "
          "its neighbours (all of them when none fits)");
ABSL_FLAG(std::string, dtype, "", "Override dtype: bf16, fp16, fp32, tf32, fp8_e4m3");
ABSL_FLAG(std::string, attention, "",
          "Override attention: unfused, flash (the fused kernel the worker times, cuDNN), or a "
          "named fused kernel priced from the FlashAttention-2 paper: flash2 (also cuDNN 8.9's class "
          "on Hopper), flash1, flash1_triton (predicted only)");
ABSL_FLAG(std::string, workload, "", "Override workload: training, prefill or decode");
ABSL_FLAG(int64_t, kv_cache, 0, "Override kv_cache_length (decode); 0 = keep");
ABSL_FLAG(std::string, format, "table", "Output: table (for people) or json (protobuf JSON)");
ABSL_FLAG(std::string, server, "",
          "Advisor address (host:port). Empty: analyze and recommend --mode predicted run "
          "in-process; the other commands need a server");
ABSL_FLAG(double, deadline, 0,
          "Deadline of each RPC, seconds; 0 = 60, and for a recommend or sweep that may measure "
          "(mode auto or measured) --max-gpu-seconds (default 60) + 30");
ABSL_FLAG(std::string, tls_ca, "",
          "TLS to --server: the CA (PEM) that signed the server's certificate; empty = plaintext");
ABSL_FLAG(std::string, tls_cert, "", "Mutual TLS: this client's certificate (PEM)");
ABSL_FLAG(std::string, tls_key, "", "Mutual TLS: this client's private key (PEM)");
ABSL_FLAG(std::string, token, "",
          "Bearer token for a server with --auth_tokens_file; empty = $WAVECREST_TOKEN");
ABSL_FLAG(std::string, gemm, "",
          "time: GEMM shapes MxNxK or MxNxKxBATCH, comma-separated (e.g. 8192x12288x4096)");
ABSL_FLAG(std::string, layout, "", "time: cuBLAS layout of --gemm: TN (default), NN or NT");
ABSL_FLAG(std::string, mode, "",
          "time, recommend: where numbers come from: auto (default), measured or predicted");
ABSL_FLAG(double, param_tolerance, 0,
          "recommend: largest relative parameter change of a candidate, in [0, 0.5]; 0 = 0.02");
ABSL_FLAG(std::string, vary, "",
          "recommend: knobs that may move, comma-separated: heads, kv_heads, hidden, ffn, vocab, "
          "layers, experts; none = heads,hidden,ffn,vocab (+ layers unless --keep-layers; a "
          "mixture of experts keeps its experts and top-k unless experts is named); and what a "
          "candidate otherwise holds, released by naming it: kv_group (query heads per KV head), "
          "kv_cache (KV-cache bytes per token within 3%), head_dim (at least 64), total_params "
          "(an MoE's total within 3%). sweep: the one dimension to vary: hidden, heads, kv_heads, "
          "ffn, vocab, seq, micro_batch, tp, m, n, k");
ABSL_FLAG(std::string, allowed_head_dims, "",
          "recommend: allowed head dims (h/a), comma-separated; empty = the multiples of "
          "--head-dim-multiple in [32, 128] (and the baseline's); below 64 only with --vary "
          "head_dim");
ABSL_FLAG(int64_t, min_heads, 0, "recommend: fewest heads a candidate may have; 0 = 1");
ABSL_FLAG(int64_t, max_heads, 0, "recommend: most heads a candidate may have; 0 = no limit");
ABSL_FLAG(bool, keep_layers, false, "recommend: never change num_layers");
ABSL_FLAG(bool, kv_divisible, false,
          "recommend: require KV heads to divide by every TP degree; by default a candidate may "
          "have fewer KV heads than a degree they divide (replicated on each rank, as Megatron "
          "does, and priced so)");
ABSL_FLAG(int64_t, head_dim_multiple, 0,
          "recommend: the default head-dim range [32, 128] keeps only multiples of this; 0 = 16, "
          "1 = any (--allowed-head-dims overrides the range)");
ABSL_FLAG(int64_t, max_candidates, 0, "recommend: candidates to generate at most; 0 = 5000");
ABSL_FLAG(int, top, 0, "recommend: rows to show (the baseline is always shown); 0 = 10");
ABSL_FLAG(std::string, export, "",
          "recommend: print only one candidate's model, as --export_format says: N is the row "
          "ranked N in the table (the baseline has its own rank; 0 = the baseline too), best the "
          "first that beats the baseline, e.g. `wavecrest recommend ... --export best > "
          "config.json`; a Hugging Face --model is edited in place of its changed fields only");
ABSL_FLAG(std::string, export_format, "hf",
          "recommend --export: hf (a Hugging Face config.json) or wavecrest (a wavecrest spec)");
ABSL_FLAG(int, measure_top_k, 0,
          "recommend: candidates (besides the baseline) to measure on a worker; 0 = 8");
ABSL_FLAG(double, max_gpu_seconds, 0, "recommend: GPU time the measuring stage may use; 0 = 60");
ABSL_FLAG(int64_t, from, 0, "sweep: first value of the --vary dimension");
ABSL_FLAG(int64_t, to, 0, "sweep: last value of the --vary dimension");
ABSL_FLAG(int64_t, step, 0, "sweep: step between values; 0 = 1");
ABSL_FLAG(std::string, svg, "", "sweep: also write the plot to this SVG file");
ABSL_FLAG(bool, autotune, false, "time: also try the heuristic's top algorithms, report the best");
ABSL_FLAG(bool, warm_l2, false, "time: time with inputs resident in L2 (default: cold L2)");
ABSL_FLAG(bool, layers, false,
          "time: time --model's layers whole (its attention and the whole layer, each kind: local "
          "and global, MoE and dense) beside the sum of their parts, instead of its GEMMs");
ABSL_FLAG(std::string, layer_kinds, "",
          "time --layers: which layers, comma-separated: fused_attention, unfused_attention, "
          "transformer_layer (empty = the model's attention and the whole layer)");
ABSL_FLAG(std::string, routing, "",
          "time --layers: a MoE layer's routing, the per-expert rows of its grouped expert GEMMs: "
          "balanced (default), zipf:S (expert i by load gets 1/(i+1)^S), counts:N,N,... (one per "
          "expert)");
// The calibration data files: their defaults are CliOptions's (client/cli.h), written once.
ABSL_FLAG(std::string, fit, wavecrest::CliOptions().fit,
          "calibrate: measurement CSVs to fit the cost model to, comma-separated");
ABSL_FLAG(std::string, anchor, wavecrest::CliOptions().anchor,
          "calibrate: one published figure per GPU that sets an unfitted GPU's peak fraction");
ABSL_FLAG(std::string, check, wavecrest::CliOptions().check,
          "calibrate: measurement CSVs never fitted, reported as held-out checks");
ABSL_FLAG(std::string, ratios, wavecrest::CliOptions().ratios,
          "calibrate: published time ratios (time / time of a reference shape), reported as "
          "held-out checks");
ABSL_FLAG(std::string, attention_data, wavecrest::CliOptions().attention_data,
          "calibrate: published fused-attention times the attention model is fitted to and "
          "cross-validated on, reported after the GEMM fit (with --fit= empty: the attention "
          "report alone); empty = none");
ABSL_FLAG(std::string, attention_check, wavecrest::CliOptions().attention_check,
          "calibrate: published fused-attention times never fitted, reported as held-out checks "
          "of the attention model; empty = none");
ABSL_FLAG(std::string, out, "", "calibrate: write the calibration file here (JSON)");
ABSL_FLAG(std::string, report, "", "calibrate: also write the report here");
ABSL_FLAG(std::string, evaluate, "",
          "calibrate: only score the current calibration on these measurement CSVs (ours or "
          "XLA's table format), comma-separated");
ABSL_FLAG(int, folds, 5, "calibrate: folds of the cross-validation");
ABSL_FLAG(bool, internal, false,
          "devices: also the workers' socket paths, addresses and PIDs (an admin's call)");
ABSL_FLAG(std::string, service, "",
          "health: check only this gRPC health service (e.g. '' overall of a wavecrest-worker, "
          "'wavecrest.v1.Advisor/measure'); exit 0 only when it is SERVING");
ABSL_FLAG(int64_t, min_rows, 0,
          "recalibrate: measurements a device kind and dtype needs to be refitted; 0 = the "
          "server's --self_calibrate_min_rows");
ABSL_FLAG(std::string, calibration, "",
          "A calibration file (from `wavecrest calibrate --out`) to use instead of the built-in "
          "one, for offline commands");

// The model, its run and the workload (analyze, recommend, sweep, time).
void ModelFlags(wavecrest::CliOptions& o) {
  o.model = absl::GetFlag(FLAGS_model);
  o.gpu = absl::GetFlag(FLAGS_gpu);
  o.seq = absl::GetFlag(FLAGS_seq);
  o.micro_batch = absl::GetFlag(FLAGS_micro_batch);
  o.tp = absl::GetFlag(FLAGS_tp);
  o.pp = absl::GetFlag(FLAGS_pp);
  o.cp = absl::GetFlag(FLAGS_cp);
  o.ep = absl::GetFlag(FLAGS_ep);
  o.etp = absl::GetFlag(FLAGS_etp);
  o.capacity_factor = absl::GetFlag(FLAGS_capacity_factor);
  o.routing_skew = absl::GetFlag(FLAGS_routing_skew);
  o.dp = absl::GetFlag(FLAGS_dp);
  o.tp_options = absl::GetFlag(FLAGS_tp_options);
  o.gpus = absl::GetFlag(FLAGS_gpus);
  o.global_batch = absl::GetFlag(FLAGS_global_batch);
  o.interleave = absl::GetFlag(FLAGS_interleave);
  o.sequence_parallel = absl::GetFlag(FLAGS_sequence_parallel);
  o.recompute = absl::GetFlag(FLAGS_recompute);
  o.dp_overlap = absl::GetFlag(FLAGS_dp_overlap);
  o.tp_overlap = absl::GetFlag(FLAGS_tp_overlap);
  o.no_pp_overlap = absl::GetFlag(FLAGS_no_pp_overlap);
  o.overlap_grad_reduce = absl::GetFlag(FLAGS_overlap_grad_reduce);
  o.zero3_prefetch = absl::GetFlag(FLAGS_zero3_prefetch);
  o.eager = absl::GetFlag(FLAGS_eager);
  o.rope_unfused = absl::GetFlag(FLAGS_rope_unfused);
  o.moe_unfused_ops = absl::GetFlag(FLAGS_moe_unfused_ops);
  o.recompute_moe = absl::GetFlag(FLAGS_recompute_moe);
  o.recompute_mla_up_proj = absl::GetFlag(FLAGS_recompute_mla_up_proj);
  o.mtp_layers = absl::GetFlag(FLAGS_mtp_layers);
  o.fsdp_shard = absl::GetFlag(FLAGS_fsdp_shard);
  o.no_reshard_after_forward = absl::GetFlag(FLAGS_no_reshard_after_forward);
  o.ep_overlap = absl::GetFlag(FLAGS_ep_overlap);
  o.network = absl::GetFlag(FLAGS_network);
  o.ep_dispatcher = absl::GetFlag(FLAGS_ep_dispatcher);
  o.fp8_param_gather = absl::GetFlag(FLAGS_fp8_param_gather);
  o.fp8_recipe = absl::GetFlag(FLAGS_fp8_recipe);
  o.loss = absl::GetFlag(FLAGS_loss);
  o.cp_ring = absl::GetFlag(FLAGS_cp_ring);
  o.flop_count = absl::GetFlag(FLAGS_flop_count);
  o.moe_host_ms = absl::GetFlag(FLAGS_moe_host_ms);
  o.sustained_stretch = absl::GetFlag(FLAGS_sustained_stretch);
  o.zero_stage = absl::GetFlag(FLAGS_zero_stage);
  o.plan = absl::GetFlag(FLAGS_plan);
  o.keep_degrees = absl::GetFlag(FLAGS_keep_degrees);
  o.tokens = absl::GetFlag(FLAGS_tokens);
  o.offload_activations = absl::GetFlag(FLAGS_offload_activations);
  o.gradient_bytes = absl::GetFlag(FLAGS_gradient_bytes);
  o.dtype = absl::GetFlag(FLAGS_dtype);
  o.attention = absl::GetFlag(FLAGS_attention);
  o.workload = absl::GetFlag(FLAGS_workload);
  o.kv_cache = absl::GetFlag(FLAGS_kv_cache);
}

// Output and the connection to a server.
void ConnectionFlags(wavecrest::CliOptions& o) {
  o.format = absl::GetFlag(FLAGS_format);
  o.server = absl::GetFlag(FLAGS_server);
  o.tls_ca = absl::GetFlag(FLAGS_tls_ca);
  o.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  o.tls_key = absl::GetFlag(FLAGS_tls_key);
  o.token = absl::GetFlag(FLAGS_token);
  if (o.token.empty()) {
    if (const char* env = std::getenv("WAVECREST_TOKEN")) o.token = env;
  }
  o.deadline_s = absl::GetFlag(FLAGS_deadline);
}

// Timing, recommend and sweep.
void SearchFlags(wavecrest::CliOptions& o) {
  o.gemm = absl::GetFlag(FLAGS_gemm);
  o.layout = absl::GetFlag(FLAGS_layout);
  o.mode = absl::GetFlag(FLAGS_mode);
  o.autotune = absl::GetFlag(FLAGS_autotune);
  o.warm_l2 = absl::GetFlag(FLAGS_warm_l2);
  o.layers = absl::GetFlag(FLAGS_layers);
  o.layer_kinds = absl::GetFlag(FLAGS_layer_kinds);
  o.routing = absl::GetFlag(FLAGS_routing);
  o.param_tolerance = absl::GetFlag(FLAGS_param_tolerance);
  o.vary = absl::GetFlag(FLAGS_vary);
  o.from = absl::GetFlag(FLAGS_from);
  o.to = absl::GetFlag(FLAGS_to);
  o.step = absl::GetFlag(FLAGS_step);
  o.svg = absl::GetFlag(FLAGS_svg);
  o.allowed_head_dims = absl::GetFlag(FLAGS_allowed_head_dims);
  o.min_heads = absl::GetFlag(FLAGS_min_heads);
  o.max_heads = absl::GetFlag(FLAGS_max_heads);
  o.keep_layers = absl::GetFlag(FLAGS_keep_layers);
  o.kv_divisible = absl::GetFlag(FLAGS_kv_divisible);
  o.head_dim_multiple = absl::GetFlag(FLAGS_head_dim_multiple);
  o.max_candidates = absl::GetFlag(FLAGS_max_candidates);
  o.top = absl::GetFlag(FLAGS_top);
  o.measure_top_k = absl::GetFlag(FLAGS_measure_top_k);
  o.export_pick = absl::GetFlag(FLAGS_export);
  o.export_format = absl::GetFlag(FLAGS_export_format);
  o.max_gpu_seconds = absl::GetFlag(FLAGS_max_gpu_seconds);
}

// Calibration, health and the admin commands; `given` says which flags were written.
void AdminFlags(const std::set<std::string>& given, wavecrest::CliOptions& o) {
  o.fit = absl::GetFlag(FLAGS_fit);
  o.anchor = absl::GetFlag(FLAGS_anchor);
  o.check = absl::GetFlag(FLAGS_check);
  o.ratios = absl::GetFlag(FLAGS_ratios);
  o.attention_data = absl::GetFlag(FLAGS_attention_data);
  o.attention_check = absl::GetFlag(FLAGS_attention_check);
  o.out = absl::GetFlag(FLAGS_out);
  o.report = absl::GetFlag(FLAGS_report);
  o.evaluate = absl::GetFlag(FLAGS_evaluate);
  o.folds = absl::GetFlag(FLAGS_folds);
  o.calibration = absl::GetFlag(FLAGS_calibration);
  o.min_rows = absl::GetFlag(FLAGS_min_rows);
  o.health_service = absl::GetFlag(FLAGS_service);
  o.health_service_given = given.count("service") > 0;
  o.internal = absl::GetFlag(FLAGS_internal);
  o.gpu_given = given.count("gpu") > 0;
}

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  absl::StatusOr<wavecrest::ParsedArgs> parsed = wavecrest::ParseArgs(args);
  if (!parsed.ok()) {
    std::cerr << "wavecrest: " << wavecrest::ForTerminal(wavecrest::FormatError(parsed.status()))
              << "\n";
    return 2;
  }
  if (parsed->version) {
    std::cout << wavecrest::VersionLine() << "\n";
    return 0;
  }
  if (parsed->help) {
    const wavecrest::CommandInfo* c = wavecrest::FindCommand(parsed->command);
    std::cout << (c ? wavecrest::CommandHelp(*c) : wavecrest::GlobalHelp());
    return 0;
  }
  if (parsed->command.empty()) {
    std::cerr << wavecrest::GlobalHelp() << "\nwavecrest: missing COMMAND\n";
    return 2;
  }
  wavecrest::CliOptions o;
  o.command = parsed->command;
  o.args = parsed->positional;
  ModelFlags(o);
  ConnectionFlags(o);
  SearchFlags(o);
  AdminFlags(parsed->given, o);
  return wavecrest::RunCli(o, std::cout, std::cerr);
}
