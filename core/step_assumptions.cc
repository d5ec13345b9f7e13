#include "core/step_assumptions.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/attention_cost.h"
#include "core/elementwise_cost.h"
#include "core/expert_parallel.h"
#include "core/gemm.h"
#include "core/network.h"
#include "core/parallelism.h"
#include "core/units.h"

namespace wavecrest {
namespace {

constexpr char kNicsPerNode[] =
    "a collective's ranks in one node cross the network through as many NICs at once (NCCL's "
    "ring per NIC; NVLink's bandwidth at most), point-to-point sends and all-to-alls through "
    "their own NIC; a ring's latency is NCCL's tuning model (a base, a step per rank, the node "
    "crossings at the network's latency; the faster of its Simple and LL128 protocols)";

// The links collectives run over, and the network's source.
std::string NetworkAssumption(const GpuSpec& gpu, const RunConfig& run) {
  using Network = absl::StatusOr<const NetworkProfile*>;
  const Network network = run.network.empty() ? Network(nullptr) : FindNetwork(run.network);
  if (network.ok() && *network != nullptr) {
    return absl::StrFormat(
        "collectives by the ring model at %.0f%% of NVLink bandwidth inside a node (%s) and of "
        "the network %s across nodes: %s%s; %s",
        100 * kCollectiveEfficiency, gpu.link.source, (*network)->name, (*network)->source,
        (*network)->in_network_reduction
            ? "; all-reduces across nodes reduced in the network (each GPU sends once)"
            : "",
        kNicsPerNode);
  }
  return absl::StrFormat("collectives by the ring model at %.0f%% of %s bandwidth (%s)%s",
                         100 * kCollectiveEfficiency,
                         gpu.link.network_bytes_per_s > 0 ? "NVLink/network" : "link",
                         gpu.link.source,
                         gpu.link.network_bytes_per_s > 0 ? absl::StrCat("; ", kNicsPerNode) : "");
}

// ... and NVLink SHARP's all-reduces inside a node where the switch has it.
std::string LinkAssumption(const GpuSpec& gpu, const RunConfig& run) {
  return absl::StrCat(
      NetworkAssumption(gpu, run),
      gpu.link.nvls_allreduce_bytes_per_s > 0
          ? absl::StrFormat("; all-reduces inside a node by NVLink SHARP where faster (%.0f GB/s, "
                            "NCCL's NVLS on this NVSwitch)",
                            gpu.link.nvls_allreduce_bytes_per_s / 1e9)
          : "");
}

// What runs under compute: tensor-parallel collectives, pipeline sends; and the optimizer.
std::string OverlapAssumption(const ModelSpec& s, const RunConfig& run) {
  return absl::StrCat(
      s.tensor_parallel <= 1 ? "" :
      run.tp_overlap > 0
          ? absl::StrFormat("%.0f%% of the tensor-parallel collectives hidden under their GEMMs "
                            "(--tp-overlap %.2f%s); ",
                            100 * run.tp_overlap, run.tp_overlap,
                            run.tp_overlap == kAsyncTpHiddenShare
                                ? ": the share TorchTitan's async TP hid in its published runs "
                                  "with and without it; Megatron-Core's --tp-comm-overlap is "
                                  "priced as 1"
                                : ", Megatron-Core's --tp-comm-overlap as 1")
          : "tensor-parallel collectives not overlapped with compute (Megatron-LM's default: "
            "--tp-comm-overlap off; --tp-overlap says how much it hides); ",
      s.pipeline_parallel <= 1 ? ""
      : PipelineSendsOverlapped(run)
          ? "pipeline sends overlapped with the next chunk's compute, the warm-up's and the "
            "flush's 2(p-1) exposed (Megatron-LM's overlap_p2p_comm, its default for interleaved "
            "schedules); "
          : run.interleave > 1
              ? "pipeline sends not overlapped (overlap_p2p_comm off); "
              : "pipeline sends not overlapped (1F1B without interleaving cannot); ",
      run.overlap_grad_reduce && run.zero_stage < 3
          ? "the gradient reduction and the weights' all-gather overlapped with the last "
            "micro-batch's backward and the first's forward, up to one micro-batch's compute of "
            "the stage hidden (Megatron-Core's overlap_grad_reduce / overlap_param_gather); "
          : "",
      "the optimizer step is memory-bound (Adam, FP32 master weights and moments)");
}

// A named fused attention kernel: where its rate comes from on this GPU.
std::string AttentionKernelAssumption(const GpuSpec& gpu, const ModelSpec& s) {
  const DType dtype = ComputeDType(s.dtype, kAttnFused);
  const FusedKernelRate fwd = FusedKernelRateOf(gpu, dtype, s.attention, Pass::kForward);
  const FusedKernelRate bwd = FusedKernelRateOf(gpu, dtype, s.attention, Pass::kBackward);
  const char* basis =
      gpu.compute_capability < 90
          ? "FlashAttention-2 up to 73% of peak forward and 63% backward on an A100"
          : gpu.compute_capability < 100
                ? "FlashAttention-2 up to 335 TFLOP/s forward and backward on an H100 without "
                  "Hopper's new instructions (cuDNN 8.9's fused attention runs in this class "
                  "there: cuDNN 9.0 made it up to 50% faster)"
                : "FlashAttention-2 as on Hopper (no published figure for this architecture)";
  return absl::StrFormat(
      "attention %s, priced from the FlashAttention-2 paper (arXiv:2307.08691): %s%s; %.0f%% "
      "of the calibrated fused kernel's forward rate and %.0f%% of its backward",
      AttentionName(s.attention), basis,
      s.attention == Attention::kFlash2
          ? ""
          : s.attention == Attention::kFlash1
                ? ", FlashAttention 1 half of that (A100)"
                : ", flash-attn 1.0's Triton kernel 1/1.4 of it forward and 1/2 backward (A100)",
      100 * fwd.rate, 100 * bwd.rate);
}

// How MFU and TFLOP/s count attention.
std::string FlopCountAssumption(FlopCount count) {
  return count == FlopCount::kCausal
             ? "MFU and TFLOP/s count the model's FLOPs with attention's s × s products halved "
               "for the causal mask (--flop-count causal: Megatron-Core's count; NeMo's since "
               "2025-08); times are the same either way"
             : "MFU and TFLOP/s count the model's FLOPs with attention's whole s × s product "
               "(--flop-count full, the default: PaLM's 6N + 12·L·a·d·s, NeMo's before 2025-08, "
               "MosaicML's; Megatron-Core halves it for a causal mask: --flop-count causal); "
               "times are the same either way";
}

// The pipeline's schedule and which stage is the slowest.
std::string PipelineAssumption(const ModelSpec& s, const RunConfig& run) {
  const double p = static_cast<double>(s.pipeline_parallel);
  const double v = static_cast<double>(run.interleave);
  const PipelineSplit split = SplitLayers(s.num_layers, s.pipeline_parallel);
  return absl::StrFormat(
      "1F1B pipeline%s: bubble (p-1)/v = %g of a stage's micro-batch time; the last stage (its "
      "layers, the logits and the loss) is the slowest%s",
      v > 1 ? " (interleaved)" : "", (p - 1) / v,
      split.even ? ""
                 : absl::StrFormat(" or a middle one; layers per stage %d first, %d middle, %d "
                                   "last (Megatron's uneven split)",
                                   split.first, split.middle, split.last));
}

// FP8 training as Transformer Engine's recipe runs it (or torchao's rowwise one), and the
// precision of the weights' and the tensor-parallel all-gathers.
std::string Fp8Assumption(const ModelSpec& s, const RunConfig& run) {
  const bool rowwise = run.fp8_recipe == Fp8Recipe::kRowwise;
  std::string tp;
  if (s.tensor_parallel > 1 && run.sequence_parallel) {
    tp = Fp8TpGathers(s, run)
             ? "; the tensor-parallel all-gathers move the FP8 copies, 1 byte an element (TE's "
               "and torchao's float8 tensor parallelism), the reduce-scatters BF16"
             : "; the tensor-parallel collectives in BF16 (torchtitan's tensor parallelism under "
               "the rowwise recipe)";
  }
  const std::string recipe =
      rowwise
          ? absl::StrFormat(
                "with rowwise scales (--fp8-recipe rowwise, torchao's recipe): its casts priced "
                "as tensorwise's plus %.0f KB per token and layer its backward moves beyond them "
                "(each linear's input cast again with column scales, each output gradient cast "
                "twice, each input gradient rescaled after cuBLAS), in the step's compute, not "
                "in the per-GEMM table or the rank-kernels line; the row-scaled GEMM kernel at "
                "tensorwise's rate (PyTorch issue 147971 measures most shapes at 90-100%% of it, "
                "a tail to 50%%)",
                Fp8RowwiseExtraBytesPerToken(s) / 1e3)
          : "with one scale per tensor (--fp8-recipe tensorwise, the default: Transformer "
            "Engine's recipes, torchao's tensorwise): its casts priced as memory traffic (the "
            "projection's input cast alone, every input transposed for wgrad, every output "
            "gradient cast and transposed; norms and activations write FP8 themselves, amax "
            "inside the casts), the weights' casts (once per step) not";
  const char* weights =
      run.fp8_param_gather
          ? "; the weights kept and all-gathered in FP8, 1 byte each (--fp8-param-gather, "
            "Megatron-Core's)"
      : rowwise ? "; the weights kept and all-gathered in BF16"
                : "; the weights kept and all-gathered in BF16 (--fp8-param-gather gathers "
                  "them in FP8)";
  return absl::StrCat(
      "FP8: the linear layers in FP8 (E4M3), attention's core and the output layer in BF16, ",
      recipe, weights, tp);
}

// ZeRO-3 (FSDP): what of its gathers and reduce-scatters is exposed, and when weights are freed.
void AddZero3Assumptions(const RunConfig& run, std::vector<std::string>& out) {
  if (run.fsdp_shard > 0) {
    out.push_back(absl::StrFormat(
        "hybrid sharding (fsdp_shard %d): ZeRO-3 within groups of %d data-parallel ranks, its "
        "gathers and reduce-scatters over the group; each micro-batch's gradient shards "
        "all-reduced over the replica groups (FSDP2's HSDP reduces every backward)",
        run.fsdp_shard, run.fsdp_shard));
  }
  out.push_back(
      run.zero3_prefetch
          ? "ZeRO-3 (FSDP) with ideal prefetch (zero3_prefetch): each layer's weights "
            "gathered under the previous layer's compute, its gradients reduce-scattered under "
            "the next layer's backward; exposed are the first gather, the last reduce-scatter "
            "and what exceeds a layer's compute; FSDP2's copies on the compute stream counted "
            "with them in the step's FSDP row (each gather's output split into the parameters, "
            "each reduce-scatter's input packed from the gradients in the reduce dtype)"
          : "ZeRO-3 (FSDP): every layer's gathers (forward and backward) and reduce-scatter "
            "exposed, per micro-batch, as MosaicML's and DeepSpeed's published FSDP runs measure "
            "with prefetch on (their collectives share the SMs and memory with the compute); "
            "zero3_prefetch prices them hidden and FSDP2's copies, as TorchTitan's and NeMo "
            "AutoModel's FSDP2 runs are priced");
  out.push_back(run.reshard_after_forward
                    ? "each layer's weights freed after its forward and gathered again for its "
                      "backward (FSDP2's reshard_after_forward, its default)"
                    : "each layer's weights kept gathered from its forward to its backward: one "
                      "gather per layer and micro-batch, the stage's weights held (FSDP2's "
                      "reshard_after_forward=False, TorchTitan's default with pipeline "
                      "parallelism); with pipeline stages the stage's gradients also held "
                      "unsharded in the reduce dtype until the step's last micro-batch "
                      "(PyTorch's pipelining defers FSDP2's reduce-scatter to it)");
}

// What RunConfig::moe_unfused_ops priced for these experts, in words.
std::string MoeUnfusedOpsAssumption(const ModelSpec& s) {
  std::vector<std::string> parts;
  if (s.bias == Bias::kAll) parts.push_back("the output bias added expert by expert in FP32");
  if (s.glu_clamp > 0 && s.mlp != Mlp::kGelu) {
    parts.push_back("the GLU's clamp outside the fused activation");
  }
  if (parts.empty()) {
    return "the experts' ops as Megatron-Core's TEGroupedMLP runs them (moe_unfused_ops): nothing "
           "more for these experts (no biases, no clamped GLU)";
  }
  return absl::StrFormat(
      "the experts' ops as Megatron-Core's TEGroupedMLP runs them without fused MoE kernels "
      "(moe_unfused_ops): %.0f KB more memory traffic per token and MoE layer, forward and "
      "backward (%s), at the elementwise bandwidth; its host synchronisations are not priced",
      MoeUnfusedOpsBytesPerToken(s).total / 1e3, absl::StrJoin(parts, "; "));
}

// What RunConfig::mtp_layers priced, in words.
std::string MtpAssumption(int64_t mtp_layers) {
  return absl::StrFormat(
      "multi-token prediction (mtp_layers %d) on the last pipeline stage: per module one more "
      "layer (the model's mean layer), its 2h x h projection and one more pass through the output "
      "layer and the loss; its memory counted on that stage (its weights, gradients, optimizer "
      "state, activations and logits), and MFU counts the model's FLOPs without it",
      mtp_layers);
}

// What the step's recomputation does beyond the plain words of its layout: selective with fused
// attention, Megatron-Core's recompute_modules, TorchTitan's op-level policy.
void AddRecomputeAssumptions(const ModelSpec& s, const RunConfig& run,
                             std::vector<std::string>& out) {
  if (run.recompute == Recompute::kSelective && s.attention != Attention::kUnfused) {
    out.push_back(
        "selective recomputation adds nothing with fused attention: its backward already "
        "recomputes the attention scores");
  }
  if (RecomputesMoeAlone(run)) {
    out.push_back(
        "recompute_moe: each MoE layer's forward (router, experts, shared expert and its "
        "all-to-alls) runs again in backward, its MLP activations not kept (the memory estimate "
        "keeps the layer's input)");
  }
  if (RecomputesMlaUpAlone(run)) {
    out.push_back(
        "recompute_mla_up_proj: multi-latent attention's query and key-value up-projections run "
        "again in backward, their full-head Q, K and V not kept (the memory estimate keeps the "
        "latents)");
  }
  if (run.recompute == Recompute::kOp) {
    out.push_back(
        "op-level selective checkpointing (TorchTitan's 'op' policy): every second matmul of a "
        "layer, its norms, activations and all-to-alls run again in backward; attention's "
        "output and the other matmuls' are kept");
  }
}

// How long the step's GEMMs run under sustained load (RunConfig::sustained_gemm_stretch, else
// GpuSpec::sustained_gemm_stretch).
std::string SustainedAssumption(const GpuSpec& gpu, const RunConfig& run) {
  // What the stretch does to the answer, said once in each case: the step's compute is more than
  // the micro-batches times the "rank kernels" line, which is at the cost model's rates.
  constexpr char kWhat[] =
      "sustained load: the step's GEMMs other than attention's fused kernel take %.2fx their "
      "predicted times (the per-GEMM table and the rank-kernels line are at the cost model's "
      "short-sweep rates; the step's compute includes the stretch)";
  if (run.sustained_gemm_stretch) {
    return absl::StrFormat(kWhat, *run.sustained_gemm_stretch) +
           absl::StrFormat(": as given (--sustained-stretch; the %s's own is %.2fx)", gpu.name,
                           gpu.sustained_gemm_stretch);
  }
  if (gpu.sustained_gemm_stretch == 1.0) {
    return absl::StrCat(
        "sustained load: none charged; the step's GEMMs at the cost model's short-sweep rates, "
        "as no sustained-load rate is measured or fitted for the ", gpu.name,
        " (likely optimistic: an H100's step is charged a fitted stretch; --sustained-stretch "
        "sets one)");
  }
  return absl::StrFormat(kWhat, gpu.sustained_gemm_stretch) + ": " + gpu.sustained_source +
         " (--sustained-stretch 1 for GPUs that hold their clocks)";
}

// Eager PyTorch's unfused elementwise kernels, or of them the rotary embedding's alone.
std::string UnfusedKernelsAssumption(const ModelSpec& s, const RunConfig& run) {
  if (run.eager) {
    return absl::StrFormat(
        "eager PyTorch (eager): each elementwise op of a layer its own kernel, %.0f KB more "
        "memory traffic per token and layer forward (RMSNorm in FP32 steps, the rotary "
        "embedding in complex FP32, SwiGLU in two kernels; TorchTitan's Llama block) and twice "
        "that backward, at the elementwise bandwidth",
        EagerExtraBytesPerToken(s) / 1e3);
  }
  return absl::StrFormat(
      "the rotary embedding as its own kernels beside compiled ones (rope_unfused: TorchTitan's "
      "complex-number RoPE, for which TorchInductor generates no code, pytorch/torchtitan#15): "
      "%.0f KB more memory traffic per token and layer forward and twice that backward, in the "
      "step's compute (not in the rank-kernels line)",
      RopeUnfusedBytesPerToken(s) / 1e3);
}

// Context parallelism's ring (CpRing), or that the ring's knob changes nothing; "" when neither.
std::string ContextParallelAssumption(const ModelSpec& s, const RunConfig& run,
                                      const StepBreakdown& r) {
  if (s.context_parallel <= 1) {
    return run.cp_ring == CpRing::kTe
               ? ""
               : "cp_ring torch prices context parallelism's ring, and this layout has none "
                 "(context_parallel 1); under --plan the layouts searched with context "
                 "parallelism were priced with PyTorch's ring and ranked with its error band";
  }
  return absl::StrFormat(
      "context parallelism over %d ranks: load-balanced ring attention (2 chunks per rank), %s; "
      "gradients reduce over data × context ranks (%d)",
      s.context_parallel,
      run.cp_ring == CpRing::kTorch
          ? "PyTorch's ring (cp_ring torch: TorchTitan's context_parallel, rotate method "
            "allgather): K and V of the query heads all-gathered once a layer under the first "
            "step's attention, forward and backward, their FP32 gradients sent on under the next "
            "step's, the last exposed; its FP32 merges of each step's output and its copies on "
            "the compute stream (counted from its ops) in CP communication; TorchTitan's 6 "
            "published CP runs measured 7-54% slower than so priced, the more ranks the slower "
            "(the error band); in memory a layer's gathered K and V and FP32 gradients, c + 6 "
            "chunks, or the loss's logits if larger"
          : absl::StrCat("Transformer Engine's ring (cp_ring te, Megatron-Core's p2p): the KV "
                         "heads' K/V sends overlapped with the attention kernels; ",
                         run.zero3_prefetch
                             ? "PyTorch's FSDP2 stacks (TorchTitan, NeMo AutoModel over SDPA) "
                               "run PyTorch's ring: --cp-ring torch"
                             : "--cp-ring torch prices PyTorch's"),
      r.data_parallel * s.context_parallel);
}

// How the loss over the logits was priced (LossKernel).
std::string LossAssumption(const RunConfig& run) {
  return run.loss == LossKernel::kEager
             ? "the loss as PyTorch's eager cross_entropy over an FP32 copy of the logits (loss "
               "eager): 12 bytes a logit held at backward's start, 26 bytes a logit more memory "
               "traffic than a fused loss, in the step's compute (not in the rank-kernels line)"
             : "the loss fused (Megatron-Core's vocab-parallel cross entropy, or a compiled "
               "loss): the FP32 softmax kept in place, 4 bytes a logit; --loss eager prices "
               "PyTorch's uncompiled cross_entropy over an FP32 copy (12)";
}

}  // namespace

// What the figures take for granted, in words.
std::vector<std::string> Assumptions(const Analysis& a, const RunConfig& run,
                                     const StepBreakdown& r) {
  const ModelSpec& s = a.spec;
  const GpuSpec& gpu = *a.gpu;
  std::vector<std::string> out;
  if (s.pipeline_parallel > 1) out.push_back(PipelineAssumption(s, run));
  out.push_back(LinkAssumption(gpu, run));
  out.push_back(OverlapAssumption(s, run));
  out.push_back(SustainedAssumption(gpu, run));
  if (s.dtype == DType::kFp8E4M3) out.push_back(Fp8Assumption(s, run));
  if (run.zero_stage >= 3) AddZero3Assumptions(run, out);
  if (s.num_experts > 0) out.push_back(ExpertRoutingAssumption(s));
  if (s.expert_parallel > 1) out.push_back(ExpertParallelAssumption(s, run, r));
  if (s.expert_parallel <= 1 && (run.ep_overlap || run.ep_dispatcher != EpDispatcher::kAllToAll)) {
    out.push_back(
        "ep_overlap and ep_dispatcher change nothing here: they price expert parallelism's "
        "all-to-alls, and this run has none (expert_parallel 1)");
  }
  if (s.dtype != DType::kFp8E4M3 && run.fp8_recipe != Fp8Recipe::kTensorwise) {
    out.push_back(absl::StrCat("fp8_recipe ", Fp8RecipeName(run.fp8_recipe),
                               " changes nothing here: the step runs ", DTypeName(s.dtype),
                               ", not FP8"));
  }
  out.push_back(LossAssumption(run));
  if (const std::string cp = ContextParallelAssumption(s, run, r); !cp.empty()) {
    out.push_back(cp);
  }
  if (run.offload_activations) {
    out.push_back(absl::StrFormat(
        "activation offload: %.2f GiB per layer and micro-batch to the host and back over PCIe "
        "(%.0f GB/s at %.0f%%), overlapped with the layer's forward and backward; %.1f GiB of "
        "host memory per GPU%s",
        r.memory.stored_bytes_per_layer / kGiB, gpu.link.host_bytes_per_s / 1e9,
        100 * kHostCopyEfficiency, r.memory.offloaded_bytes / kGiB,
        OffloadRunsWith(s.pipeline_parallel, run.recompute,
                        run.recompute_mla_up_proj || run.recompute_moe)
            ? ""
            : "; Megatron-Core's layer-level cpu_offloading refuses this run (pipeline stages "
              "or recomputation beside it): priced as if a stack offloaded each layer so"));
  }
  out.push_back(FlopCountAssumption(run.flop_count));
  if (IsNamedFusedKernel(s.attention)) out.push_back(AttentionKernelAssumption(gpu, s));
  AddRecomputeAssumptions(s, run, out);
  if (run.eager || run.rope_unfused) out.push_back(UnfusedKernelsAssumption(s, run));
  if (run.moe_unfused_ops && s.num_experts > 0) out.push_back(MoeUnfusedOpsAssumption(s));
  if (run.mtp_layers > 0) {
    out.push_back(MtpAssumption(run.mtp_layers));
  } else if (s.mtp_modules > 0) {
    out.push_back(absl::StrFormat(
        "the model carries %d multi-token prediction module(s) (mtp_modules; a config's "
        "num_nextn_predict_layers), not trained in this step: --mtp-layers %d prices them, as "
        "DeepSeek-V3's pre-training and NVIDIA's DeepSeek-V3 recipes train them",
        s.mtp_modules, s.mtp_modules));
  }
  if (IsHybrid(s)) out.push_back(HybridAssumption(s));
  return out;
}

std::string HybridAssumption(const ModelSpec& s) {
  const DerivedShape d = Derive(s);
  return absl::StrFormat(
      "a hybrid model (hybrid_pattern): %d Mamba-2, %d attention, %d MoE and %d MLP layers, "
      "each one block; the Mamba-2 mixers' chunked scan priced as the batched products of its "
      "chunks at the GEMM model's rates (their Triton kernels not measured), its conv1d, "
      "discretisation and gated norm as elementwise traffic; the pipeline splits the layers "
      "as counted, each stage's priced at the model's mean layer",
      d.mamba_layers, d.attention_layers, d.moe_layers, d.dense_layers);
}

}  // namespace wavecrest
