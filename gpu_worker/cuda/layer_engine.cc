// The layer engine: how wavecrest measures a layer whole (method cuda-layer-timing-v1).
//
// What runs is decided without a GPU by core/layer_program.h (the buffers and the kernels in
// order; its GEMMs are the layer's GEMM list, tested on any machine); this file carries it out:
//  1. Plan: the program, refused before any allocation when it does not fit in free memory (with
//     the framework's workspace and a margin), or when the catalog predicts one run past the
//     watchdog.
//  2. Buffers: one allocation each; weights random in ±1/sqrt(fan-in) and activations in ±1 (values
//     a trained layer sees, so nothing overflows in FP16); the checked outputs poisoned with NaN.
//  3. GEMMs: one cuBLASLt descriptor set per GEMM, the heuristic's first algorithm with the
//     framework's workspace (what PyTorch gets), as core/gemm_plan.h maps row-major to cuBLAS.
//  4. Check: one run of the program, timed; the layer's outputs (y, and dx when training) must be
//     written and finite, else the layer is refused.
//  5. Timing: the program captured launches_per_sample times in one CUDA graph; warm-up, then
//     samples in windows (blocking kernel, replays back to back between events, clock probe)
//     under the GEMM engine's stopping rule and minimum sampled time. The L2 state is the one
//     achieved: a layer whose buffers span at least twice L2 is timed cold, a smaller one warm,
//     and the method says which.
//  6. The SM clock: NVML's during the samples, else the probes'.
// Grouped GEMMs (a mixture of experts' experts, each with its own rows) run as one cuBLASLt matmul
// per expert with rows, back to back on the stream inside the graph (the heuristic's algorithm for
// each distinct shape, descriptors shared between experts of equal rows), as Transformer Engine's
// grouped linear layer runs them on one stream. The MoE routing kernels, MLA's assembly and the
// norms of strided rows are gpu_worker/cuda/moe_kernels.h's and layer_kernels.h's (layer_ops.h).
// These paths are compiled and their plans host-tested; they have not yet run on a GPU.
// Fused attention runs through cuDNN's scaled-dot-product attention when this build and device
// have it (gpu_worker/cuda/cudnn_sdpa.h: core/sdpa_graph.h's graphs, executed inside the layer's
// CUDA graph); otherwise the layer is refused with FAILED_PRECONDITION and the server predicts
// it, saying why.
#include <memory>
#include <string>
#include <vector>

#include "core/layer_program.h"
#include "core/status_macros.h"
#include "gpu_worker/cuda/cublaslt_engine.h"
#include "gpu_worker/cuda/cudnn_sdpa.h"
#include "gpu_worker/cuda/layer_kernels.h"
#include "gpu_worker/cuda/layer_ops.h"
#include "gpu_worker/cuda/moe_kernels.h"

namespace wavecrest::engine {
namespace {

// A buffer's initial values: weights at the scale of their fan-in, the rest in ±1.
float InitScale(const LayerProgram& program, int buffer) {
  for (const LayerOp& op : program.ops) {
    const bool grouped = op.kind == LayerOpKind::kGroupedGemm;
    if ((op.kind == LayerOpKind::kGemm || grouped) && op.b == buffer &&
        op.name.ends_with(" forward") && op.gemm.layout == Layout::kTN &&
        (grouped || op.gemm.shape.batch == 1)) {
      return 1.0f / std::sqrt(static_cast<float>(op.gemm.shape.k));
    }
  }
  return 1.0f;
}

std::string OpName(const LayerOp& op) {
  return absl::StrCat(op.name, " (", LayerOpKindName(op.kind), ")");
}

}  // namespace

// One GEMM of the program, ready to launch: its descriptors and the heuristic's algorithm.
struct LayerGemm {
  GemmKey key;
  GemmPlan plan;
  MatmulDescriptors desc;
  cublasLtMatmulAlgo_t algo{};
};

struct CublasLtBackend::LayerRun {
  LayerKey key;
  std::string name;
  LayerProgram program;
  TypeInfo ty{};
  std::unique_ptr<SdpaRunner> sdpa;
  std::vector<DeviceBuffer> buffers;
  std::vector<std::unique_ptr<LayerGemm>> gemms;
  std::vector<int> gemm_of;  // per op: its index in `gemms`, or -1
  // Per op: a grouped GEMM's group indices in `gemms` (-1 for an expert without rows).
  std::vector<std::vector<int>> groups_of;
  std::vector<void*> pointers;  // the buffers' device pointers, by index
  void* ptr(int i) const { return i >= 0 ? buffers[i].get() : nullptr; }
};

struct CublasLtBackend::PreparedLayer {
  LayerRun run;
  Algo timed;
};

absl::StatusOr<v1::LayerTiming> CublasLtBackend::TimeLayer(const LayerKey& key,
                                                           const TimingParams& params) {
  return TimeLayersTogether({key}, params, [](size_t) { return true; })[0];  // a batch of one
}

std::vector<absl::StatusOr<v1::LayerTiming>> CublasLtBackend::TimeLayersTogether(
    const std::vector<LayerKey>& keys, const TimingParams& params, const OnItem& on_item,
    const OnDone<v1::LayerTiming>& on_done) {
  return TimeInGroups<v1::LayerTiming, PreparedLayer>(
      keys.size(), params, on_item, on_done,
      [&](size_t i) { return PrepareLayer(keys[i], params); },
      [&](const PreparedLayer& p) { return AnswerPreparedLayer(p, params); });
}

absl::StatusOr<std::unique_ptr<CublasLtBackend::PreparedLayer>> CublasLtBackend::PrepareLayer(
    const LayerKey& key, const TimingParams& params) {
  const EngineOptions options = EngineOptionsOf(params);
  auto p = std::make_unique<PreparedLayer>();
  p->timed.broken = &broken_;
  LayerRun& run = p->run;
  RETURN_IF_ERROR(PlanLayer(key, options, params, run));             // 1
  RETURN_IF_ERROR(AllocateBuffers(run));                             // 2
  RETURN_IF_ERROR(MakeLayerGemms(options, run));                     // 3
  ASSIGN_OR_RETURN(const double launch_s, CheckLayer(run, params));  // 4
  const GemmKey as_key{{1, 1, 1, 1}, Layout::kTN, key.layer.dtype};  // for the watchdog message
  if (absl::Status st = CheckWatchdog(launch_s, options, as_key); !st.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(run.name, ": ", st.message()));
  }
  // 5. Capture and warm up; the samples are taken beside the batch's other layers.
  Algo& timed = p->timed;
  timed.schedule =
      ScheduleSamples(launch_s, 1, run.program.bytes, l2_bytes_, options, GpuHot(options));
  RETURN_IF_ERROR(CaptureGraph(timed, [&](int) { return EnqueueProgram(run); }));
  RETURN_IF_ERROR(WarmUp(timed, launch_s, params));
  return p;
}

absl::StatusOr<v1::LayerTiming> CublasLtBackend::AnswerPreparedLayer(const PreparedLayer& p,
                                                                    const TimingParams& params) {
  // 6. The clock, and the answer.
  ASSIGN_OR_RETURN(const SmClock clock, ReadClock(p.timed));
  return AnswerLayer(p.run, p.timed, clock, params);
}

absl::Status CublasLtBackend::PlanLayer(const LayerKey& key, const EngineOptions& options,
                                        const TimingParams& params, LayerRun& run) {
  run.key = key;
  run.name = LayerKeyString(key);
  ASSIGN_OR_RETURN(run.program, PlanLayerProgram(key));
  for (const LayerOp& op : run.program.ops) {
    if (op.kind == LayerOpKind::kRouterTopK && op.top_k > cuda::kMaxTopK) {
      return absl::FailedPreconditionError(absl::StrCat(
          run.name, ": the router's top-k kernel selects at most ", cuda::kMaxTopK, " experts"));
    }
  }
  run.ty = Types(key.layer.dtype);
  for (const LayerOp& op : run.program.ops) {
    if (op.kind != LayerOpKind::kFusedAttention || run.sdpa) continue;
    // cuDNN may compile its attention kernels at run time (seconds): tell the server first.
    Beat(params, "cudnn attention plan");
    ASSIGN_OR_RETURN(run.sdpa, MakeCudnnSdpa(op, key.layer.dtype, run.program.training, stream_));
  }
  size_t free = 0, total = 0;
  RETURN_IF_ERROR(Cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo"));
  const int64_t sdpa_bytes = run.sdpa ? run.sdpa->workspace_bytes() : 0;
  if (run.program.bytes + sdpa_bytes + kMemoryMargin > static_cast<int64_t>(free)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        run.name, " needs ", (run.program.bytes + sdpa_bytes) >> 20, " MiB of device memory; ",
        static_cast<int64_t>(free) >> 20, " MiB are free on ", fp_.name()));
  }
  if (gpu_ != nullptr) {
    const double predicted = PredictLayer(*gpu_, key).time_s;
    if (options.watchdog_s > 0 && predicted > options.watchdog_s / 2) {
      return absl::FailedPreconditionError(
          absl::StrCat(run.name, ": one run is predicted at ", predicted,
                       " s, past half the server's watchdog (", options.watchdog_s,
                       " s); shorten seq_length or micro_batch_size"));
    }
  }
  return absl::OkStatus();
}

absl::Status CublasLtBackend::AllocateBuffers(LayerRun& run) {
  run.buffers = std::vector<DeviceBuffer>(run.program.buffers.size());
  run.pointers.assign(run.program.buffers.size(), nullptr);
  const uint64_t seed = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  for (size_t i = 0; i < run.program.buffers.size(); ++i) {
    const LayerBuffer& b = run.program.buffers[i];
    RETURN_IF_ERROR(Cuda(run.buffers[i].Allocate(static_cast<size_t>(b.elements) * b.element_bytes),
                         absl::StrCat("cudaMalloc ", b.name)));
    run.pointers[i] = run.buffers[i].get();
    const Elem elem = b.element_bytes == 4 ? Elem::kFp32 : run.ty.ab_elem;
    RETURN_IF_ERROR(Cuda(cuda::FillRandom(run.buffers[i].get(), b.elements, elem, seed + i, stream_,
                                          InitScale(run.program, static_cast<int>(i))),
                         absl::StrCat("fill ", b.name)));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> CublasLtBackend::MakeLayerGemm(const GemmKey& key, const std::string& name,
                                                   const EngineOptions& options, LayerRun& run) {
  for (size_t i = 0; i < run.gemms.size(); ++i) {  // experts of equal rows share descriptors
    if (run.gemms[i]->key == key) return static_cast<int>(i);
  }
  DeviceLimits limits;
  limits.compute_capability = cc_;
  limits.l2_bytes = l2_bytes_;
  limits.free_bytes = std::numeric_limits<int64_t>::max() / 4;  // checked for the program
  limits.margin_bytes = 0;
  EngineOptions one_set = options;
  one_set.warm_l2 = true;  // no input sets: the layer's own buffers are its working set
  auto g = std::make_unique<LayerGemm>();
  g->key = key;
  ASSIGN_OR_RETURN(g->plan, PlanGemm(key, limits, one_set));
  RETURN_IF_ERROR(MakeDescriptors(g->plan, run.ty, run.ty.ab, &g->desc));
  // The heuristic's first algorithm with the framework's workspace: what PyTorch gets.
  ASSIGN_OR_RETURN(const std::vector<cublasLtMatmulHeuristicResult_t> heur,
                   Heuristics(g->desc, workspace_bytes_, 1,
                              absl::StrCat(GemmKeyString(key), " (", name, ")")));
  if (heur[0].state != CUBLAS_STATUS_SUCCESS) {
    return absl::FailedPreconditionError(absl::StrCat("cuBLASLt's heuristic has no algorithm for ",
                                                      GemmKeyString(key), " (", name, ") on ",
                                                      fp_.name()));
  }
  g->algo = heur[0].algo;
  run.gemms.push_back(std::move(g));
  return static_cast<int>(run.gemms.size()) - 1;
}

absl::Status CublasLtBackend::MakeLayerGemms(const EngineOptions& options, LayerRun& run) {
  run.gemm_of.assign(run.program.ops.size(), -1);
  run.groups_of.assign(run.program.ops.size(), {});
  for (size_t i = 0; i < run.program.ops.size(); ++i) {
    const LayerOp& op = run.program.ops[i];
    if (op.kind == LayerOpKind::kGemm) {
      ASSIGN_OR_RETURN(run.gemm_of[i], MakeLayerGemm(op.gemm, op.name, options, run));
    }
    if (op.kind != LayerOpKind::kGroupedGemm) continue;
    for (size_t j = 0; j < op.groups.size(); ++j) {
      int index = -1;
      if (op.groups[j] > 0) {
        ASSIGN_OR_RETURN(index, MakeLayerGemm(GroupGemm(op, j), op.name, options, run));
      }
      run.groups_of[i].push_back(index);
    }
  }
  return absl::OkStatus();
}

absl::Status CublasLtBackend::EnqueueGemm(const LayerRun& run, const LayerGemm& g, const void* a,
                                          const void* b, void* c, const std::string& what) {
  const float alpha = 1.0f, beta = 0.0f;
  // cuBLAS's A is the row-major right operand, its B the left one (core/gemm.h).
  return Blas(cublasLtMatmul(handle_, g.desc.op, &alpha, b, g.desc.la, a, g.desc.lb, &beta, c,
                             g.desc.ld, c, g.desc.ld, &g.algo, workspace_,
                             static_cast<size_t>(workspace_bytes_), stream_),
              what);
}

// One matmul per expert with rows, each at its group's offsets (core/layer_program.h).
absl::Status CublasLtBackend::EnqueueGroupedGemm(const LayerRun& run, size_t i) {
  const LayerOp& op = run.program.ops[i];
  const int64_t bytes = DTypeBytes(op.gemm.dtype);
  auto at = [&](int buffer, int64_t elements) {
    return static_cast<char*>(run.ptr(buffer)) + elements * bytes;
  };
  for (size_t j = 0; j < op.groups.size(); ++j) {
    const int g = run.groups_of[i][j];
    if (g < 0) continue;
    const GroupOffsets o = GroupGemmOffsets(op, j);
    RETURN_IF_ERROR(EnqueueGemm(run, *run.gemms[g], at(op.a, o.a), at(op.b, o.b), at(op.c, o.c),
                                absl::StrCat(OpName(op), " expert ", j)));
  }
  return absl::OkStatus();
}

absl::Status CublasLtBackend::EnqueueProgram(const LayerRun& run) {
  for (size_t i = 0; i < run.program.ops.size(); ++i) {
    const LayerOp& op = run.program.ops[i];
    switch (op.kind) {
      case LayerOpKind::kGemm:
        RETURN_IF_ERROR(EnqueueGemm(run, *run.gemms[run.gemm_of[i]], run.ptr(op.a), run.ptr(op.b),
                                    run.ptr(op.c), OpName(op)));
        break;
      case LayerOpKind::kGroupedGemm:
        RETURN_IF_ERROR(EnqueueGroupedGemm(run, i));
        break;
      case LayerOpKind::kFusedAttention:
        RETURN_IF_ERROR(run.sdpa->Forward(run.ptr(op.a), run.ptr(op.c), run.ptr(op.d)));
        break;
      case LayerOpKind::kFusedAttentionBackward:
        RETURN_IF_ERROR(run.sdpa->Backward(run.ptr(op.a), run.ptr(op.b), run.ptr(op.c),
                                           run.ptr(op.d), run.ptr(op.e)));
        break;
      default:
        RETURN_IF_ERROR(
            Cuda(EnqueueLayerKernel(op, run.pointers, run.ty.ab_elem, stream_), OpName(op)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<double> CublasLtBackend::CheckLayer(const LayerRun& run,
                                                   const TimingParams& params) {
  Beat(params, "check");
  for (int out : run.program.outputs) {
    if (out < 0) continue;
    RETURN_IF_ERROR(Cuda(
        cuda::FillNaN(run.ptr(out), run.program.buffers[out].elements, run.ty.ab_elem, stream_),
        "poison outputs"));
  }
  ASSIGN_OR_RETURN(const double launch_s, TimeOnce([&] { return EnqueueProgram(run); }));
  for (int out : run.program.outputs) {
    if (out < 0) continue;
    ASSIGN_OR_RETURN(
        const uint64_t nonfinite,
        CountNonFinite(run.ptr(out), run.program.buffers[out].elements, run.ty.ab_elem));
    if (nonfinite > 0) {
      return absl::InternalError(absl::StrCat(
          "correctness check: ", nonfinite, " elements of ", run.program.buffers[out].name,
          " are NaN or infinite after one run of ", run.name, ": refusing to time it"));
    }
  }
  return launch_s;
}

v1::LayerTiming CublasLtBackend::AnswerLayer(const LayerRun& run, const Algo& timed,
                                             const SmClock& clock, const TimingParams& params) {
  const LayerKey& key = run.key;
  v1::LayerTiming t;
  if (gpu_ != nullptr) {
    t = LayerTimingOf(*gpu_, key);
  } else {
    *t.mutable_shape() = ToProto(key);
    t.set_key(run.name);
    t.set_flops(LayerFlops(key));
  }
  const std::string method = LayerTimingMethod("cublaslt", !timed.schedule.cold_l2);
  v1::TimingStats* s = t.mutable_stats();
  const SampleStats stats =
      Assemble(timed, clock, params, run.name, method, s, t.mutable_provenance());
  t.set_time_s(stats.median);
  t.set_tflops(t.flops() / stats.median / 1e12);
  s->set_engine(absl::StrCat(method, " graph of ", run.program.ops.size(), " kernels (",
                             run.gemms.size(), " cuBLASLt GEMMs, heuristic, ws",
                             workspace_bytes_ >> 20, "MiB)",
                             run.sdpa ? absl::StrCat(" ", run.sdpa->Describe()) : "", " buffers ",
                             run.program.bytes >> 20, "MiB"));
  return t;
}

}  // namespace wavecrest::engine
