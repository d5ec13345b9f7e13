// The cuBLASLt timing engine: how wavecrest measures a GEMM (method cublaslt-timing-v2).
//
// Every decision that needs no GPU is made by core/gemm_plan.h and tested on any machine; this
// file carries it out. Per GEMM:
//  1. Plan (before any allocation): overflow-checked sizes, the worker's caps, FP8 rules (TN on
//     transposed copies on Ada/Hopper, 16-byte leading dimensions, Transformer Engine's
//     accumulation modes), free memory, the framework's workspace (32 MiB on Hopper and later,
//     4 MiB before), the input sets for a cold L2, and the watchdog (a launch the catalog predicts
//     longer than half of it is refused before it runs).
//  2. Inputs: each operand's sets in one allocation, random values (never zeros).
//  3. Per algorithm (the heuristic's first; its top k when autotuning): one launch into a
//     NaN-poisoned output, timed, then checked: every element finite, and 16 elements against a
//     host reference that reads the operands as the row-major product of core/gemm.h (not as the
//     cuBLAS call does), within per-dtype tolerances (core/gemm_check.h). That launch's time sizes
//     the sample (launches per replay a multiple of the sets, so each replay goes round all of
//     them) and is checked against the watchdog.
//  4. L launches captured in a CUDA graph; warm-up (from cold about 100 ms for launches of
//     100 µs or more, 50 ms below; 5 ms when the GPU just ran timed work); then samples in
//     windows: a blocking kernel, then a window's replays back to back with an event between
//     each, then a clock probe, and one wait. (A wait after every sample left the GPU idle
//     between samples, and its clock swung: spreads of 3-12% on the lent H200 where a
//     back-to-back torch loop saw under 1%.) Sampling stops on the spread target or a stable
//     median after a minimum of sampled time (50 ms cold, 10 ms hot), or at the budget.
//  5. Autotuning: the fastest and the heuristic's first choice are re-timed alternately, and those
//     samples are reported (the ones that chose the winner would be biased low).
//  6. The SM clock: NVML's, sampled during the reported samples; else the median of the probes
//     queued right after each sample.
// Heartbeats go to the server through every phase. A sticky CUDA error marks the backend broken:
// the worker reports it and exits.
#include "core/status_macros.h"
#include "gpu_worker/cuda/cublaslt_engine.h"

namespace wavecrest::engine {

absl::StatusOr<v1::GemmTiming> CublasLtBackend::Time(const GemmKey& key,
                                                     const TimingParams& params) {
  // One GEMM without autotuning is a batch of one (engine_together.cc).
  if (!params.autotune) return TimeTogether({key}, params, [](size_t) { return true; })[0];
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(Ready());
  return TimeLocked(key, params);
}

absl::StatusOr<v1::GemmTiming> CublasLtBackend::TimeLocked(const GemmKey& key,
                                                           const TimingParams& params) {
  const EngineOptions options = EngineOptionsOf(params);
  // 1. The plan, before any allocation.
  ASSIGN_OR_RETURN(const GemmPlan plan, PlanFor(key, options));
  const TypeInfo ty = Types(key.dtype);
  // 2. Inputs: every set of an operand in one buffer.
  OperandSets a, b, d;
  RETURN_IF_ERROR(AllocateInputs(plan, ty, a, b, d));
  MatmulDescriptors desc;
  RETURN_IF_ERROR(MakeDescriptors(plan, ty, ty.cd, &desc));
  ASSIGN_OR_RETURN(const std::vector<cublasLtMatmulHeuristicResult_t> heur,
                   Heuristics(desc, plan.workspace_bytes, params.autotune ? params.top_k : 1,
                              GemmKeyString(key)));
  const float alpha = 1.0f, beta = 0.0f;
  const Launch launch = [&](const cublasLtMatmulAlgo_t& algo, int s) {
    return cublasLtMatmul(handle_, desc.op, &alpha, a.at(s), desc.la, b.at(s), desc.lb, &beta,
                          d.at(s), desc.ld, d.at(s), desc.ld, &algo, workspace_,
                          static_cast<size_t>(plan.workspace_bytes), stream_);
  };
  // 3 and 4: check, size, capture, warm up and sample each algorithm.
  const GemmRun run{key, plan, ty, options, params, a, b, d, launch};
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Algo>> algos, TimeAlgorithms(run, heur));
  Algo* best = algos[0].get();
  for (auto& r : algos) {
    if (r->median < best->median) best = r.get();
  }
  Algo* first = algos[0]->index == 0 ? algos[0].get() : nullptr;
  // 5. Autotuning: the reported samples come from re-timing.
  if (params.autotune) {
    std::vector<Algo*> reported = {best};
    if (first != nullptr && first != best) reported.push_back(first);
    RETURN_IF_ERROR(Retime(reported, params));
    if (reported.size() == 2 && reported[1]->median < reported[0]->median) {
      best = reported[1];  // re-timing reversed the order: report the faster
    }
  }
  return AnswerGemm(key, plan, options, params, *best, first, heur[best->index]);
}

absl::StatusOr<GemmPlan> CublasLtBackend::PlanFor(const GemmKey& key,
                                                  const EngineOptions& options) {
  size_t free = 0, total = 0;
  RETURN_IF_ERROR(Cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo"));
  DeviceLimits limits;
  limits.compute_capability = cc_;
  limits.l2_bytes = l2_bytes_;
  limits.free_bytes = static_cast<int64_t>(free) + workspace_bytes_;  // ours is allocated
  limits.margin_bytes = kMemoryMargin;
  absl::StatusOr<GemmPlan> planned = PlanGemm(key, limits, options);
  if (!planned.ok()) {
    return absl::Status(planned.status().code(),
                        absl::StrCat(planned.status().message(), " (", fp_.name(), ")"));
  }
  if (gpu_ != nullptr) {
    // A launch the catalog predicts past the watchdog is refused before it runs.
    RETURN_IF_ERROR(CheckWatchdog(PredictGemm(*gpu_, key).time_s, options, key));
  }
  return planned;
}

absl::Status CublasLtBackend::AllocateInputs(const GemmPlan& plan, const TypeInfo& ty,
                                             OperandSets& a, OperandSets& b, OperandSets& d) {
  for (auto [ops, bytes, what] :
       {std::tuple<OperandSets*, int64_t, const char*>{&a, plan.a_bytes, "A"},
        {&b, plan.b_bytes, "B"},
        {&d, plan.d_bytes, "D"}}) {
    ops->stride = (bytes + kAlign - 1) / kAlign * kAlign;
    RETURN_IF_ERROR(Cuda(ops->buffer.Allocate(static_cast<size_t>(ops->stride) * plan.sets),
                         absl::StrCat("cudaMalloc ", what, " (", plan.sets, " sets)")));
  }
  const uint64_t seed = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  RETURN_IF_ERROR(Cuda(cuda::FillRandom(a.at(0), a.stride / ty.ab_bytes * plan.sets, ty.ab_elem,
                                        seed * 2 + 1, stream_),
                       "fill A"));
  return Cuda(cuda::FillRandom(b.at(0), b.stride / ty.ab_bytes * plan.sets, ty.ab_elem,
                               seed * 2 + 2, stream_),
              "fill B");
}

absl::StatusOr<std::vector<std::unique_ptr<Algo>>> CublasLtBackend::TimeAlgorithms(
    const GemmRun& run, const std::vector<cublasLtMatmulHeuristicResult_t>& heuristics) {
  std::vector<std::unique_ptr<Algo>> algos;
  for (size_t h = 0; h < heuristics.size(); ++h) {
    if (heuristics[h].state != CUBLAS_STATUS_SUCCESS) continue;
    auto algo = std::make_unique<Algo>();
    algo->index = static_cast<int>(h);
    algo->algo = heuristics[h].algo;
    algo->broken = &broken_;
    absl::Status st = PrepareAndSample(run, *algo);
    if (!st.ok()) {
      // The heuristic's first choice must work (it is what a framework runs); a top-k
      // alternative that fails is skipped, not reported as the best.
      if (h == 0 || broken_) return st;
      continue;
    }
    algos.push_back(std::move(algo));
  }
  if (algos.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "none of the ", heuristics.size(), " algorithms cuBLASLt's heuristic offered for ",
        GemmKeyString(run.key), " could run"));
  }
  return algos;
}

absl::Status CublasLtBackend::PrepareAndSample(const GemmRun& run, Algo& algo) {
  RETURN_IF_ERROR(Prepare(run, algo));
  // Without autotuning these samples are the reported ones: NVML samples the clock meanwhile.
  return Sample(algo, run.params, clocks_ != nullptr && !run.params.autotune);
}

absl::Status CublasLtBackend::Prepare(const GemmRun& run, Algo& algo) {
  const GemmPlan& plan = run.plan;
  const EngineOptions& options = run.options;
  const TimingParams& params = run.params;
  const GemmKey& key = run.key;
  const Launch& launch = run.launch;
  Beat(params, "check");
  ASSIGN_OR_RETURN(const double launch_s, CheckOnce(run, algo.algo));
  RETURN_IF_ERROR(CheckWatchdog(launch_s, options, key));
  algo.schedule =
      ScheduleSamples(launch_s, plan.sets, plan.set_bytes, l2_bytes_, options, GpuHot(options));
  if (!options.warm_l2 && !algo.schedule.cold_l2 && plan.sets < kMaxInputSets) {
    return absl::InternalError("the sample schedule does not reach a cold L2 (engine defect)");
  }
  // Capture L launches going round the sets. A cuBLAS failure is reported after the capture
  // ends (Blas synchronises the stream, which a capturing stream cannot).
  cublasStatus_t capture_status = CUBLAS_STATUS_SUCCESS;
  absl::Status captured = CaptureGraph(algo, [&](int i) {
    capture_status = launch(algo.algo, i % plan.sets);
    return capture_status == CUBLAS_STATUS_SUCCESS ? absl::OkStatus()
                                                   : absl::InternalError("capture");
  });
  RETURN_IF_ERROR(Blas(capture_status, "cublasLtMatmul (capture)"));
  RETURN_IF_ERROR(captured);
  return WarmUp(algo, launch_s, params);
}

absl::StatusOr<v1::GemmTiming> CublasLtBackend::AnswerGemm(
    const GemmKey& key, const GemmPlan& plan, const EngineOptions& options,
    const TimingParams& params, const Algo& best, const Algo* first,
    const cublasLtMatmulHeuristicResult_t& heuristic) {
  // 6. The clock during the reported samples.
  ASSIGN_OR_RETURN(const SmClock clock, ReadClock(best));
  auto id_of = [&](const Algo& algo) -> absl::StatusOr<int32_t> {
    int32_t id = 0;
    RETURN_IF_ERROR(Blas(cublasLtMatmulAlgoConfigGetAttribute(&algo.algo, CUBLASLT_ALGO_CONFIG_ID,
                                                              &id, sizeof(id), nullptr),
                         "ALGO_CONFIG_ID"));
    return id;
  };
  ASSIGN_OR_RETURN(const int32_t algo_id, id_of(best));
  v1::GemmTiming t = TimingOf(key);
  v1::TimingStats* s = t.mutable_stats();
  // The L2 state achieved, not the one asked for (tiny operands cannot make L2 cold).
  const SampleStats stats = Assemble(
      best, clock, params, GemmKeyString(key),
      TimingMethod("cublaslt", params.autotune, !best.schedule.cold_l2), s, t.mutable_provenance());
  t.set_time_s(stats.median);
  t.set_tflops(GemmFlops(key.shape) / stats.median / 1e12);
  s->set_algorithm_id(algo_id);
  s->set_heuristic_waves(heuristic.wavesCount);
  if (params.autotune && first != nullptr) {
    ASSIGN_OR_RETURN(const int32_t first_id, id_of(*first));
    s->set_heuristic_median_s(first->median);
    s->set_heuristic_algorithm_id(first_id);
  }
  s->set_engine(EngineMethod(plan, best.schedule, options));
  return t;
}

absl::StatusOr<double> CublasLtBackend::CheckOnce(const GemmRun& run,
                                                  const cublasLtMatmulAlgo_t& algo) {
  const GemmPlan& plan = run.plan;
  const TypeInfo& ty = run.ty;
  const OperandSets& d = run.d;
  RETURN_IF_ERROR(
      Cuda(cuda::FillNaN(d.at(0), plan.d_elems * plan.batch, ty.cd_elem, stream_), "poison D"));
  ASSIGN_OR_RETURN(const double launch_s,
                   TimeOnce([&] { return Blas(run.launch(algo, 0), "cublasLtMatmul"); }));
  ASSIGN_OR_RETURN(const uint64_t nonfinite,
                   CountNonFinite(d.at(0), plan.d_elems * plan.batch, ty.cd_elem));
  if (nonfinite > 0) {
    return absl::InternalError(absl::StrCat("correctness check: ", nonfinite,
                                            " output elements are NaN or infinite after the "
                                            "GEMM (unwritten or wrong): refusing to time it"));
  }
  RETURN_IF_ERROR(CheckSampledElements(run, algo));
  return launch_s;
}

absl::StatusOr<int> CublasLtBackend::OutputTypePartials(const cublasLtMatmulAlgo_t& algo) {
  int32_t splits = 1;
  uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_NONE;
  RETURN_IF_ERROR(Blas(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                                            &splits, sizeof(splits), nullptr),
                       "SPLITK_NUM"));
  RETURN_IF_ERROR(
      Blas(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                                &scheme, sizeof(scheme), nullptr),
           "REDUCTION_SCHEME"));
  const bool output_type = splits > 1 && (scheme == CUBLASLT_REDUCTION_SCHEME_INPLACE ||
                                          scheme == CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE);
  return output_type ? splits : 0;
}

absl::Status CublasLtBackend::CheckSampledElements(const GemmRun& run,
                                                   const cublasLtMatmulAlgo_t& algo) {
  const GemmKey& key = run.key;
  const GemmPlan& plan = run.plan;
  const TypeInfo& ty = run.ty;
  const OperandSets &a = run.a, &b = run.b, &d = run.d;
  ASSIGN_OR_RETURN(const int partials, OutputTypePartials(algo));
  // The sampled elements: the four corners of the first and last batch entries, then spread.
  const GemmShape& s = key.shape;
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  std::vector<unsigned char> xv(static_cast<size_t>(s.k) * ty.ab_bytes),
      wv(static_cast<size_t>(s.k) * ty.ab_bytes);
  for (int n = 0; n < kCheckSamples; ++n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    int64_t i = static_cast<int64_t>((x >> 11) % static_cast<uint64_t>(s.m));
    int64_t j = static_cast<int64_t>((x >> 29) % static_cast<uint64_t>(s.n));
    const int64_t batch = (n * (s.batch - 1)) / (kCheckSamples - 1);
    if (n < 4) {
      i = (n & 1) ? s.m - 1 : 0;
      j = (n & 2) ? s.n - 1 : 0;
    }
    const ReferenceVectors v = RowMajorVectors(plan.run_layout, s, batch, i, j);
    // cuBLAS's B buffer holds the left operand x, its A buffer the right operand w.
    RETURN_IF_ERROR(Fetch(b.at(0), v.x_offset, v.x_stride, s.k, ty.ab_bytes, xv.data()));
    RETURN_IF_ERROR(Fetch(a.at(0), v.w_offset, v.w_stride, s.k, ty.ab_bytes, wv.data()));
    unsigned char cv[4] = {0, 0, 0, 0};
    RETURN_IF_ERROR(Fetch(d.at(0), v.c_offset, 1, 1, ty.cd_bytes, cv));
    RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream_), "check sync"));
    double exact = 0, abs_sum = 0;
    for (int64_t kk = 0; kk < s.k; ++kk) {
      const double p =
          Decode(&xv[kk * ty.ab_bytes], ty.ab_elem) * Decode(&wv[kk * ty.ab_bytes], ty.ab_elem);
      exact += p;
      abs_sum += std::fabs(p);
    }
    const double got = Decode(cv, ty.cd_elem);
    const double tol =
        CheckTolerance(key.dtype, s.k, exact, abs_sum, partials);
    if (!(std::fabs(got - exact) <= tol)) {
      return absl::InternalError(absl::StrCat(
          "correctness check: C[", i, "][", j, "] of batch ", batch, " is ", got,
          ", the row-major reference ", exact, " (tolerance ", tol, "): refusing to time it"));
    }
  }
  return absl::OkStatus();
}

absl::Status CublasLtBackend::Fetch(const void* base, int64_t offset, int64_t stride, int64_t count,
                                    int bytes, void* out) {
  const char* src = static_cast<const char*>(base) + offset * bytes;
  if (stride == 1) {
    return Cuda(cudaMemcpyAsync(out, src, static_cast<size_t>(count) * bytes,
                                cudaMemcpyDeviceToHost, stream_),
                "check copy");
  }
  return Cuda(cudaMemcpy2DAsync(out, bytes, src, static_cast<size_t>(stride) * bytes, bytes,
                                static_cast<size_t>(count), cudaMemcpyDeviceToHost, stream_),
              "check copy");
}

}  // namespace wavecrest::engine
