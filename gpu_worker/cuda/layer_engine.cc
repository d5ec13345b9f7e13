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
//     samples (blocking kernel, start event, one replay, stop event, clock probe) under the GEMM
//     engine's stopping rule and minimum sampled time. The L2 state is the one achieved: a layer
//     whose buffers span at least twice L2 is timed cold, a smaller one warm, and the method says
//     which.
//  6. The SM clock: NVML's during the samples, else the probes'.
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

namespace wavecrest::engine {
namespace {

// A buffer's initial values: weights at the scale of their fan-in, the rest in ±1.
float InitScale(const LayerProgram& program, int buffer) {
  for (const LayerOp& op : program.ops) {
    if (op.kind == LayerOpKind::kGemm && op.b == buffer && op.name.ends_with(" forward") &&
        op.gemm.layout == Layout::kTN && op.gemm.shape.batch == 1) {
      return 1.0f / std::sqrt(static_cast<float>(op.gemm.shape.k));
    }
  }
  return 1.0f;
}

// One GEMM of the program, ready to launch: its descriptors and the heuristic's algorithm.
struct LayerGemm {
  GemmPlan plan;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~LayerGemm() {
    if (ld) cublasLtMatrixLayoutDestroy(ld);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

std::string OpName(const LayerOp& op) {
  return absl::StrCat(op.name, " (", LayerOpKindName(op.kind), ")");
}

}  // namespace

absl::StatusOr<v1::LayerTiming> CublasLtBackend::TimeLayer(const LayerKey& key,
                                                           const TimingParams& params) {
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_) return absl::InternalError("the CUDA context is unusable after a sticky error");
  if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) return Cuda(e, "cudaSetDevice");
  return TimeLayerLocked(key, params);
}

absl::StatusOr<v1::LayerTiming> CublasLtBackend::TimeLayerLocked(const LayerKey& key,
                                                                 const TimingParams& params) {
  const EngineOptions options = EngineOptionsOf(params);
  const std::string name = LayerKeyString(key);
  // 1. Plan.
  absl::StatusOr<LayerProgram> planned = PlanLayerProgram(key);
  if (!planned.ok()) return planned.status();
  const LayerProgram& program = *planned;
  std::unique_ptr<SdpaRunner> sdpa;
  for (const LayerOp& op : program.ops) {
    if (op.kind != LayerOpKind::kFusedAttention || sdpa) continue;
    // cuDNN may compile its attention kernels at run time (seconds): tell the server first.
    Beat(params, "cudnn attention plan");
    absl::StatusOr<std::unique_ptr<SdpaRunner>> runner =
        MakeCudnnSdpa(op, key.layer.dtype, program.training, stream_);
    if (!runner.ok()) return runner.status();
    sdpa = *std::move(runner);
  }
  size_t free = 0, total = 0;
  if (auto st = Cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo"); !st.ok()) return st;
  const int64_t sdpa_bytes = sdpa ? sdpa->workspace_bytes() : 0;
  if (program.bytes + sdpa_bytes + kMemoryMargin > static_cast<int64_t>(free)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(name, " needs ", (program.bytes + sdpa_bytes) >> 20, " MiB of device memory; ",
                     static_cast<int64_t>(free) >> 20, " MiB are free on ", fp_.name()));
  }
  if (gpu_ != nullptr) {
    const double predicted = PredictLayer(*gpu_, key).time_s;
    if (options.watchdog_s > 0 && predicted > options.watchdog_s / 2) {
      return absl::FailedPreconditionError(absl::StrCat(
          name, ": one run is predicted at ", predicted, " s, past half the server's watchdog (",
          options.watchdog_s, " s); shorten seq_length or micro_batch_size"));
    }
  }
  const TypeInfo ty = Types(key.layer.dtype);

  // 2. Buffers.
  std::vector<DeviceBuffer> buffers(program.buffers.size());
  const uint64_t seed = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    const LayerBuffer& b = program.buffers[i];
    if (auto st = Cuda(buffers[i].Allocate(static_cast<size_t>(b.elements) * b.element_bytes),
                       absl::StrCat("cudaMalloc ", b.name));
        !st.ok()) {
      return st;
    }
    const Elem elem = b.element_bytes == 4 ? Elem::kFp32 : ty.ab_elem;
    if (auto st = Cuda(cuda::FillRandom(buffers[i].get(), b.elements, elem, seed + i, stream_,
                                        InitScale(program, static_cast<int>(i))),
                       absl::StrCat("fill ", b.name));
        !st.ok()) {
      return st;
    }
  }
  auto ptr = [&](int i) -> void* { return i >= 0 ? buffers[i].get() : nullptr; };

  // 3. GEMM descriptors.
  DeviceLimits limits;
  limits.compute_capability = cc_;
  limits.l2_bytes = l2_bytes_;
  limits.free_bytes = std::numeric_limits<int64_t>::max() / 4;  // checked above, for the program
  limits.margin_bytes = 0;
  EngineOptions one_set = options;
  one_set.warm_l2 = true;  // no input sets: the layer's own buffers are its working set
  std::vector<std::unique_ptr<LayerGemm>> gemms;
  std::vector<int> gemm_of(program.ops.size(), -1);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const LayerOp& op = program.ops[i];
    if (op.kind != LayerOpKind::kGemm) continue;
    auto g = std::make_unique<LayerGemm>();
    absl::StatusOr<GemmPlan> plan = PlanGemm(op.gemm, limits, one_set);
    if (!plan.ok()) return plan.status();
    g->plan = *plan;
    const GemmPlan& p = g->plan;
    if (auto st = Blas(cublasLtMatmulDescCreate(&g->op, ty.compute, CUDA_R_32F), "matmul desc");
        !st.ok()) {
      return st;
    }
    const cublasOperation_t op_a = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (auto st = SetDesc(g->op, CUBLASLT_MATMUL_DESC_TRANSA, op_a, "TRANSA"); !st.ok()) return st;
    if (auto st = SetDesc(g->op, CUBLASLT_MATMUL_DESC_TRANSB, op_b, "TRANSB"); !st.ok()) return st;
    auto layout = [&](cublasLtMatrixLayout_t* l, int64_t rows, int64_t cols, int64_t ld,
                      int64_t stride) -> absl::Status {
      RETURN_IF_ERROR(Blas(cublasLtMatrixLayoutCreate(l, ty.ab, static_cast<uint64_t>(rows),
                                                      static_cast<uint64_t>(cols), ld),
                           "matrix layout"));
      if (p.batch > 1) {
        const int32_t count = static_cast<int32_t>(p.batch);
        RETURN_IF_ERROR(Blas(cublasLtMatrixLayoutSetAttribute(
                                 *l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
                             "BATCH_COUNT"));
        RETURN_IF_ERROR(
            Blas(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                  &stride, sizeof(stride)),
                 "STRIDED_BATCH_OFFSET"));
      }
      return absl::OkStatus();
    };
    const int64_t a_rows = p.trans_a ? p.k : p.m, a_cols = p.trans_a ? p.m : p.k;
    const int64_t b_rows = p.trans_b ? p.n : p.k, b_cols = p.trans_b ? p.k : p.n;
    RETURN_IF_ERROR(layout(&g->la, a_rows, a_cols, p.lda, p.a_elems));
    RETURN_IF_ERROR(layout(&g->lb, b_rows, b_cols, p.ldb, p.b_elems));
    RETURN_IF_ERROR(layout(&g->ld, p.m, p.n, p.ldd, p.d_elems));
    cublasLtMatmulPreference_t pref = nullptr;
    RETURN_IF_ERROR(Blas(cublasLtMatmulPreferenceCreate(&pref), "preference"));
    absl::Cleanup release_pref = [&] { cublasLtMatmulPreferenceDestroy(pref); };
    const uint64_t ws = static_cast<uint64_t>(workspace_bytes_);
    RETURN_IF_ERROR(Blas(cublasLtMatmulPreferenceSetAttribute(
                             pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
                         "MAX_WORKSPACE_BYTES"));
    cublasLtMatmulHeuristicResult_t heur{};
    int returned = 0;
    RETURN_IF_ERROR(Blas(cublasLtMatmulAlgoGetHeuristic(handle_, g->op, g->la, g->lb, g->ld, g->ld,
                                                        pref, 1, &heur, &returned),
                         "cublasLtMatmulAlgoGetHeuristic"));
    if (returned == 0 || heur.state != CUBLAS_STATUS_SUCCESS) {
      return absl::FailedPreconditionError(
          absl::StrCat("cuBLASLt's heuristic has no algorithm for ", GemmKeyString(op.gemm), " (",
                       op.name, ") on ", fp_.name()));
    }
    g->algo = heur.algo;
    gemm_of[i] = static_cast<int>(gemms.size());
    gemms.push_back(std::move(g));
  }

  // The program, enqueued once on the stream (also while capturing).
  const float alpha = 1.0f, beta = 0.0f;
  auto run = [&]() -> absl::Status {
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const LayerOp& op = program.ops[i];
      const Elem e = ty.ab_elem;
      cudaError_t err = cudaSuccess;
      switch (op.kind) {
        case LayerOpKind::kGemm: {
          const LayerGemm& g = *gemms[gemm_of[i]];
          // cuBLAS's A is the row-major right operand, its B the left one (core/gemm.h).
          RETURN_IF_ERROR(
              Blas(cublasLtMatmul(handle_, g.op, &alpha, ptr(op.b), g.la, ptr(op.a), g.lb, &beta,
                                  ptr(op.c), g.ld, ptr(op.c), g.ld, &g.algo, workspace_,
                                  static_cast<size_t>(workspace_bytes_), stream_),
                   OpName(op)));
          continue;
        }
        case LayerOpKind::kNorm:
          err = cuda::Norm(ptr(op.a), ptr(op.b), ptr(op.c), op.rows, op.cols, op.rms, e, stream_);
          break;
        case LayerOpKind::kNormBackward:
          err = cuda::NormBackward(ptr(op.a), ptr(op.b), ptr(op.d), ptr(op.c), op.rows, op.cols,
                                   op.rms, e, stream_);
          break;
        case LayerOpKind::kActivation:
          err = cuda::Activation(ptr(op.a), ptr(op.b), op.a_stride, ptr(op.c), op.rows, op.cols,
                                 op.swiglu, e, stream_);
          break;
        case LayerOpKind::kActivationBackward:
          err = cuda::ActivationBackward(ptr(op.a), ptr(op.b), ptr(op.d), op.a_stride, ptr(op.c),
                                         ptr(op.e), op.rows, op.cols, op.swiglu, e, stream_);
          break;
        case LayerOpKind::kAdd:
          err = cuda::Add(ptr(op.a), ptr(op.b), ptr(op.c), op.rows * op.cols, e, stream_);
          break;
        case LayerOpKind::kSplitHeads:
          err = cuda::SplitHeads(ptr(op.a), ptr(op.c), ptr(op.d), ptr(op.e),
                                 {op.batch, op.q_len, op.heads, op.kv_heads, op.head_dim}, e,
                                 stream_);
          break;
        case LayerOpKind::kMergeHeads:
          err = cuda::MergeHeads(ptr(op.a), ptr(op.d), ptr(op.e), ptr(op.c),
                                 {op.batch, op.q_len, op.heads, op.kv_heads, op.head_dim}, e,
                                 stream_);
          break;
        case LayerOpKind::kSoftmax:
          err =
              cuda::Softmax(ptr(op.a), op.rows, op.cols, op.q_len, op.causal, op.scale, e, stream_);
          break;
        case LayerOpKind::kSoftmaxBackward:
          err = cuda::SoftmaxBackward(ptr(op.a), ptr(op.b), op.rows, op.cols, op.scale, e, stream_);
          break;
        case LayerOpKind::kFusedAttention:
          RETURN_IF_ERROR(sdpa->Forward(ptr(op.a), ptr(op.c), ptr(op.d)));
          continue;
        case LayerOpKind::kFusedAttentionBackward:
          RETURN_IF_ERROR(sdpa->Backward(ptr(op.a), ptr(op.b), ptr(op.c), ptr(op.d), ptr(op.e)));
          continue;
      }
      RETURN_IF_ERROR(Cuda(err, OpName(op)));
    }
    return absl::OkStatus();
  };

  // 4. Check: one run, timed, into NaN-poisoned outputs.
  Beat(params, "check");
  for (int out : program.outputs) {
    if (out < 0) continue;
    RETURN_IF_ERROR(
        Cuda(cuda::FillNaN(ptr(out), program.buffers[out].elements, ty.ab_elem, stream_),
             "poison outputs"));
  }
  RETURN_IF_ERROR(Cuda(cudaEventRecord(start_, stream_), "event"));
  RETURN_IF_ERROR(run());
  RETURN_IF_ERROR(Cuda(cudaEventRecord(stop_, stream_), "event"));
  RETURN_IF_ERROR(Cuda(cudaEventSynchronize(stop_), "check sync"));
  float check_ms = 0;
  RETURN_IF_ERROR(Cuda(cudaEventElapsedTime(&check_ms, start_, stop_), "cudaEventElapsedTime"));
  {
    DeviceBuffer bad;
    RETURN_IF_ERROR(Cuda(bad.Allocate(sizeof(unsigned long long)), "check alloc"));
    for (int out : program.outputs) {
      if (out < 0) continue;
      unsigned long long nonfinite = 0;
      RETURN_IF_ERROR(Cuda(cuda::CountNonFinite(ptr(out), program.buffers[out].elements, ty.ab_elem,
                                                bad.get<unsigned long long>(), stream_),
                           "finiteness check"));
      RETURN_IF_ERROR(Cuda(cudaMemcpyAsync(&nonfinite, bad.get(), sizeof(nonfinite),
                                           cudaMemcpyDeviceToHost, stream_),
                           "check copy"));
      RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream_), "check sync"));
      if (nonfinite > 0) {
        return absl::InternalError(absl::StrCat(
            "correctness check: ", nonfinite, " elements of ", program.buffers[out].name,
            " are NaN or infinite after one run of ", name, ": refusing to time it"));
      }
    }
  }
  const double launch_s = check_ms * 1e-3;
  const GemmKey as_key{{1, 1, 1, 1}, Layout::kTN, key.layer.dtype};  // for the watchdog message
  if (absl::Status st = CheckWatchdog(launch_s, options, as_key); !st.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(name, ": ", st.message()));
  }

  // 5. Capture, warm up, sample.
  Algo timed;
  timed.broken = &broken_;
  timed.schedule = ScheduleSamples(launch_s, 1, program.bytes, l2_bytes_, options);
  RETURN_IF_ERROR(
      Cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "graph capture"));
  absl::Status captured = absl::OkStatus();
  for (int i = 0; i < timed.schedule.launches_per_sample && captured.ok(); ++i) captured = run();
  const cudaError_t end = cudaStreamEndCapture(stream_, &timed.graph);
  RETURN_IF_ERROR(captured);
  RETURN_IF_ERROR(Cuda(end, "graph capture"));
  RETURN_IF_ERROR(Cuda(cudaGraphInstantiate(&timed.exec, timed.graph, 0), "graph instantiate"));
  const double replay_s = launch_s * timed.schedule.launches_per_sample;
  const int per_sync = static_cast<int>(std::clamp(std::floor(0.5 / replay_s), 1.0, 1000.0));
  for (int i = 0; i < timed.schedule.warmup_replays; ++i) {
    RETURN_IF_ERROR(Cuda(cudaGraphLaunch(timed.exec, stream_), "graph launch"));
    if ((i + 1) % per_sync == 0 || i + 1 == timed.schedule.warmup_replays) {
      RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream_), "warm-up"));
      Beat(params, "warm-up");
    }
  }
  StoppingRule rule = Rule(timed, params);
  if (clocks_ != nullptr) clocks_->Start();
  absl::Cleanup stop_clocks = [&] {
    if (clocks_ != nullptr) timed.nvml_mhz = clocks_->Stop();
  };
  const absl::Time start = absl::Now();
  int slot = 0;
  while (true) {
    absl::StatusOr<double> v = TimedReplay(timed, slot++ % (kProbeSlots - 1));
    if (!v.ok()) return v.status();
    timed.samples.push_back(*v);
    Beat(params, "sampling");
    const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
    const StopReason why = rule.Why(timed.samples, elapsed);
    if (why != StopReason::kNotYet) {
      timed.stopped = DescribeStop(why, timed.samples, rule);
      timed.sampling_s = elapsed;
      break;
    }
  }
  std::move(stop_clocks).Invoke();

  // 6. The clock, and the answer.
  int sm_mhz = MedianMhz(timed.nvml_mhz);
  std::string clock_source = sm_mhz > 0 ? "nvml" : "";
  if (sm_mhz == 0) {
    ASSIGN_OR_RETURN(sm_mhz, ProbedMhz(timed));
    if (sm_mhz > 0) clock_source = "probe";
  }
  if (broken_) return absl::InternalError("sticky CUDA error after timing");
  v1::LayerTiming t;
  if (gpu_ != nullptr) {
    t = LayerTimingOf(*gpu_, key);
  } else {
    *t.mutable_shape() = ToProto(key);
    t.set_key(name);
    t.set_flops(LayerFlops(key));
  }
  if (params.samples_sink) {
    params.samples_sink(LayerKeyString(key), timed.samples, Rule(timed, params), timed.sampling_s,
                        timed.stopped);
  }
  const SampleStats stats = Summarize(timed.samples);
  t.set_time_s(stats.median);
  t.set_tflops(t.flops() / stats.median / 1e12);
  v1::TimingStats* s = t.mutable_stats();
  s->set_median_s(stats.median);
  s->set_p10_s(stats.p10);
  s->set_p90_s(stats.p90);
  s->set_samples(static_cast<int32_t>(timed.samples.size()));
  s->set_relative_spread(stats.relative_spread);
  s->set_stop_rule(timed.stopped);
  s->set_sm_clock_mhz(sm_mhz);
  s->set_clock_source(clock_source);
  const int launches = timed.schedule.launches_per_sample;
  double sampled = 0;
  for (double v : timed.samples) sampled += v * launches;
  s->set_launches_per_sample(launches);
  s->set_sampled_s(sampled);
  s->set_cold_l2(timed.schedule.cold_l2);
  s->set_engine(absl::StrCat(
      LayerTimingMethod("cublaslt", !timed.schedule.cold_l2), " graph of ", program.ops.size(),
      " kernels (", gemms.size(), " cuBLASLt GEMMs, heuristic, ws", workspace_bytes_ >> 20, "MiB)",
      sdpa ? absl::StrCat(" ", sdpa->Describe()) : "", " buffers ", program.bytes >> 20, "MiB"));
  v1::Provenance* prov = t.mutable_provenance();
  prov->set_source(v1::SOURCE_MEASURED);
  prov->set_method(LayerTimingMethod("cublaslt", !timed.schedule.cold_l2));
  *prov->mutable_device() = fp_;
  prov->set_samples(static_cast<int32_t>(timed.samples.size()));
  prov->set_relative_spread(stats.relative_spread);
  prov->mutable_measured_at()->set_seconds(absl::ToUnixSeconds(absl::Now()));
  return t;
}

}  // namespace wavecrest::engine
