// The phases every timing goes through, for a GEMM's algorithm and for a layer's program alike:
// descriptors and the heuristic; graph capture; warm-up; sampling under the stopping rule
// (core/timing_stats.h, host code tested without a GPU); re-timing for autotuning; the SM clock;
// and the parts of the answer every timing has.
#include "core/sample_policies.h"
#include "core/status_macros.h"
#include "gpu_worker/cuda/cublaslt_engine.h"

namespace wavecrest::engine {

absl::Status CublasLtBackend::MakeDescriptors(const GemmPlan& plan, const TypeInfo& ty,
                                              cudaDataType_t d_type, MatmulDescriptors* out) {
  RETURN_IF_ERROR(Blas(cublasLtMatmulDescCreate(&out->op, ty.compute, CUDA_R_32F), "matmul desc"));
  const cublasOperation_t op_a = plan.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = plan.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  RETURN_IF_ERROR(SetDesc(out->op, CUBLASLT_MATMUL_DESC_TRANSA, op_a, "TRANSA"));
  RETURN_IF_ERROR(SetDesc(out->op, CUBLASLT_MATMUL_DESC_TRANSB, op_b, "TRANSB"));
  if (plan.fp8) {
    const int8_t fast = plan.fp8_fast_accumulation ? 1 : 0;
    const void* scale = one_;
    RETURN_IF_ERROR(SetDesc(out->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast, "FAST_ACCUM"));
    RETURN_IF_ERROR(
        SetDesc(out->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scale, "A_SCALE_POINTER"));
    RETURN_IF_ERROR(
        SetDesc(out->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scale, "B_SCALE_POINTER"));
  }
  auto layout = [&](cublasLtMatrixLayout_t* l, cudaDataType_t t, int64_t rows, int64_t cols,
                    int64_t ldim, int64_t stride) -> absl::Status {
    RETURN_IF_ERROR(Blas(cublasLtMatrixLayoutCreate(l, t, static_cast<uint64_t>(rows),
                                                    static_cast<uint64_t>(cols), ldim),
                         "matrix layout"));
    if (plan.batch <= 1) return absl::OkStatus();
    const int32_t count = static_cast<int32_t>(plan.batch);
    RETURN_IF_ERROR(Blas(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                          &count, sizeof(count)),
                         "BATCH_COUNT"));
    return Blas(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                 &stride, sizeof(stride)),
                "STRIDED_BATCH_OFFSET");
  };
  const int64_t a_rows = plan.trans_a ? plan.k : plan.m, a_cols = plan.trans_a ? plan.m : plan.k;
  const int64_t b_rows = plan.trans_b ? plan.n : plan.k, b_cols = plan.trans_b ? plan.k : plan.n;
  RETURN_IF_ERROR(layout(&out->la, ty.ab, a_rows, a_cols, plan.lda, plan.a_elems));
  RETURN_IF_ERROR(layout(&out->lb, ty.ab, b_rows, b_cols, plan.ldb, plan.b_elems));
  return layout(&out->ld, d_type, plan.m, plan.n, plan.ldd, plan.d_elems);
}

absl::StatusOr<std::vector<cublasLtMatmulHeuristicResult_t>> CublasLtBackend::Heuristics(
    const MatmulDescriptors& desc, int64_t workspace, int count, absl::string_view what) {
  cublasLtMatmulPreference_t pref = nullptr;
  RETURN_IF_ERROR(Blas(cublasLtMatmulPreferenceCreate(&pref), "preference"));
  absl::Cleanup release = [&] { cublasLtMatmulPreferenceDestroy(pref); };
  const uint64_t ws = static_cast<uint64_t>(workspace);
  RETURN_IF_ERROR(Blas(cublasLtMatmulPreferenceSetAttribute(
                           pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
                       "MAX_WORKSPACE_BYTES"));
  std::vector<cublasLtMatmulHeuristicResult_t> heur(count);
  int returned = 0;
  RETURN_IF_ERROR(Blas(cublasLtMatmulAlgoGetHeuristic(handle_, desc.op, desc.la, desc.lb, desc.ld,
                                                      desc.ld, pref, count, heur.data(), &returned),
                       "cublasLtMatmulAlgoGetHeuristic"));
  if (returned == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cuBLASLt's heuristic has no algorithm for ", what, " on ", fp_.name()));
  }
  heur.resize(returned);
  return heur;
}

absl::Status CublasLtBackend::CaptureGraph(Algo& algo,
                                           const std::function<absl::Status(int)>& enqueue) {
  RETURN_IF_ERROR(
      Cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "graph capture"));
  absl::Status captured = absl::OkStatus();
  for (int i = 0; i < algo.schedule.launches_per_sample && captured.ok(); ++i) {
    captured = enqueue(i);
  }
  const cudaError_t end = cudaStreamEndCapture(stream_, &algo.graph);
  RETURN_IF_ERROR(captured);
  RETURN_IF_ERROR(Cuda(end, "graph capture"));
  return Cuda(cudaGraphInstantiate(&algo.exec, algo.graph, 0), "graph instantiate");
}

absl::Status CublasLtBackend::WarmUp(Algo& algo, double launch_s, const TimingParams& params) {
  algo.launch_s = launch_s;
  const double replay_s = launch_s * algo.schedule.launches_per_sample;
  const int per_sync = static_cast<int>(std::clamp(std::floor(0.5 / replay_s), 1.0, 1000.0));
  for (int i = 0; i < algo.schedule.warmup_replays; ++i) {
    RETURN_IF_ERROR(Cuda(cudaGraphLaunch(algo.exec, stream_), "graph launch"));
    if ((i + 1) % per_sync == 0 || i + 1 == algo.schedule.warmup_replays) {
      RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream_), "warm-up"));
      Beat(params, "warm-up");
    }
  }
  last_sampled_ = absl::Now();  // the GPU is hot: the next item of a batch gets the hot schedule
  return absl::OkStatus();
}

absl::Status CublasLtBackend::Sample(Algo& algo, const TimingParams& params, bool clocked) {
  const StoppingRule rule = Rule(algo, params);
  if (clocked) clocks_->Start();
  absl::Cleanup stop_clocks = [&] {
    if (clocked) TakeClocks(clocks_->StopTimed(), algo);
  };
  algo.sample_end_ns.clear();
  algo.sample_mhz.clear();
  const absl::Time start = absl::Now();
  int slot = 0;
  while (true) {
    RETURN_IF_ERROR(TimedWindow(algo, rule, slot++ % (kProbeSlots - 1)));
    Beat(params, "sampling");
    const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
    const StopReason why = rule.Why(algo.samples, elapsed);
    if (why != StopReason::kNotYet) {
      algo.stopped = DescribeStop(why, algo.samples, rule);
      absl::StrAppend(&algo.stopped, ScheduleNote(algo.schedule));
      algo.sampling_s = elapsed;
      break;
    }
  }
  last_sampled_ = absl::Now();
  std::move(stop_clocks).Invoke();
  KeepOneClockState(algo);
  algo.median = Percentile(algo.samples, 0.5);
  return absl::OkStatus();
}

void CublasLtBackend::TakeClocks(const std::vector<ClockReading>& readings, Algo& algo) {
  algo.nvml_mhz.clear();
  for (const ClockReading& r : readings) algo.nvml_mhz.push_back(r.mhz);
  algo.sample_mhz = ClockPerSample(readings, algo.sample_end_ns);
}

// Samples of different clock states are not pooled silently (core/sample_policies.h): the state
// with most of the timed work is kept, and the answer's stats say so.
void CublasLtBackend::KeepOneClockState(Algo& algo) {
  if (algo.sample_mhz.size() != algo.samples.size()) {
    algo.clock_states = 0;
    algo.clock_policy = "clock unknown";
    return;
  }
  std::vector<ClockedSample> clocked;
  for (size_t i = 0; i < algo.samples.size(); ++i) {
    clocked.push_back({algo.samples[i], algo.sample_mhz[i]});
  }
  ClockStates states = SeparateClockStates(clocked);
  algo.clock_states = states.states;
  algo.clock_policy = states.policy;
  if (states.separated) algo.samples = std::move(states.samples);
}

StoppingRule CublasLtBackend::Rule(const Algo& algo, const TimingParams& params) const {
  StoppingRule rule;
  rule.target_spread = params.target_spread;
  rule.budget_s = params.max_seconds;
  rule.min_samples = algo.schedule.min_samples;
  rule.min_sampled_s = algo.schedule.min_sampled_s;
  rule.sample_scale = algo.schedule.launches_per_sample;
  return rule;
}

absl::Status CublasLtBackend::TimedWindow(Algo& algo, const StoppingRule& rule, int slot) {
  const int launches = algo.schedule.launches_per_sample;
  double sampled_s = 0;
  for (double v : algo.samples) sampled_s += v * launches;
  const double replay_s =
      algo.samples.empty() ? 0 : Percentile(algo.samples, 0.5) * launches;  // 0: first window
  const int n = std::min(
      timer_.capacity(),
      WindowSamples(algo.schedule, replay_s > 0 ? replay_s : algo.launch_s * launches,
                    static_cast<int>(algo.samples.size()), sampled_s, rule.max_samples));
  RETURN_IF_ERROR(Cuda(cuda::ProbeClock(probes_ + 2 * (kProbeSlots - 1),
                                        kBlockingNs + kBlockingNsPerSample * n, stream_),
                       "blocking kernel"));
  for (int i = 0; i < n; ++i) {
    RETURN_IF_ERROR(Cuda(timer_.Record(i, stream_), "event"));
    RETURN_IF_ERROR(Cuda(cudaGraphLaunch(algo.exec, stream_), "graph launch"));
  }
  RETURN_IF_ERROR(Cuda(timer_.Record(n, stream_), "event"));
  RETURN_IF_ERROR(Cuda(cuda::ProbeClock(probes_ + 2 * slot, kProbeNs, stream_), "clock probe"));
  std::vector<double> seconds;
  RETURN_IF_ERROR(Cuda(timer_.Intervals(n, &seconds), "event sync and elapsed times"));
  // The window was waited for: its last sample ended now, each earlier one the later ones' time
  // before that (the replays ran back to back).
  int64_t end_ns = SteadyNowNs();
  std::vector<int64_t> ends(seconds.size());
  for (size_t i = seconds.size(); i-- > 0;) {
    ends[i] = end_ns;
    end_ns -= static_cast<int64_t>(seconds[i] * 1e9);
  }
  for (size_t i = 0; i < seconds.size(); ++i) {
    algo.samples.push_back(seconds[i] / launches);
    algo.sample_end_ns.push_back(ends[i]);
    algo.probe_slots.push_back(slot);
  }
  return absl::OkStatus();
}

absl::Status CublasLtBackend::Retime(const std::vector<Algo*>& algos, const TimingParams& params) {
  std::vector<size_t> index(algos.size(), 0);  // one GEMM's algorithms: all are its item
  return SampleInterleaved(algos, index, params, [](size_t) { return true; });
}

absl::StatusOr<SmClock> CublasLtBackend::ReadClock(const Algo& algo) {
  SmClock clock;
  clock.mhz = MedianMhz(algo.nvml_mhz);
  if (clock.mhz > 0) {
    clock.source = "nvml";
  } else {
    ASSIGN_OR_RETURN(clock.mhz, ProbedMhz(algo));
    if (clock.mhz > 0) clock.source = "probe";
  }
  if (broken_) return absl::InternalError("sticky CUDA error after timing");
  return clock;
}

absl::StatusOr<std::vector<int>> CublasLtBackend::ProbeMhzPerSample(const Algo& algo) {
  std::vector<unsigned long long> host(2 * kProbeSlots);
  RETURN_IF_ERROR(Cuda(cudaMemcpyAsync(host.data(), probes_, host.size() * sizeof(host[0]),
                                       cudaMemcpyDeviceToHost, stream_),
                       "clock copy"));
  RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream_), "clock sync"));
  std::vector<int> mhz;
  for (int slot : algo.probe_slots) {
    const unsigned long long cycles = host[2 * slot], ns = host[2 * slot + 1];
    mhz.push_back(ns > 0 ? static_cast<int>(std::lround(1000.0 * cycles / ns)) : 0);
  }
  return mhz;
}

absl::StatusOr<int> CublasLtBackend::ProbedMhz(const Algo& algo) {
  ASSIGN_OR_RETURN(std::vector<int> mhz, ProbeMhzPerSample(algo));
  std::erase(mhz, 0);  // unknown
  return MedianMhz(std::move(mhz));
}

SampleStats CublasLtBackend::Assemble(const Algo& algo, const SmClock& clock,
                                      const TimingParams& params, const std::string& name,
                                      const std::string& method, v1::TimingStats* s,
                                      v1::Provenance* prov) {
  if (params.samples_sink) {
    // Per-sample clocks only where they line up with the samples (not after a clock state was
    // set aside).
    auto aligned = [&](const std::vector<int>& v) {
      return v.size() == algo.samples.size() ? v : std::vector<int>();
    };
    params.samples_sink(name, algo.samples, Rule(algo, params), algo.sampling_s, algo.stopped,
                        aligned(algo.sample_mhz),
                        aligned(ProbeMhzPerSample(algo).value_or(std::vector<int>())));
  }
  const SampleStats stats = Summarize(algo.samples);
  s->set_median_s(stats.median);
  s->set_p10_s(stats.p10);
  s->set_p90_s(stats.p90);
  s->set_samples(static_cast<int32_t>(algo.samples.size()));
  s->set_relative_spread(stats.relative_spread);
  s->set_stop_rule(algo.stopped);
  s->set_sm_clock_mhz(clock.mhz);
  s->set_clock_source(clock.source);
  s->set_clock_states(algo.clock_states);
  s->set_clock_policy(algo.clock_policy);
  s->set_rerun_sigma(RerunSigma(stats.relative_spread));
  const int launches = algo.schedule.launches_per_sample;
  double sampled = 0;
  for (double v : algo.samples) sampled += v * launches;
  s->set_launches_per_sample(launches);
  s->set_sampled_s(sampled);
  s->set_cold_l2(algo.schedule.cold_l2);
  prov->set_source(v1::SOURCE_MEASURED);
  prov->set_method(method);
  *prov->mutable_device() = fp_;
  prov->set_samples(static_cast<int32_t>(algo.samples.size()));
  prov->set_relative_spread(stats.relative_spread);
  prov->mutable_measured_at()->set_seconds(absl::ToUnixSeconds(absl::Now()));
  return stats;
}

absl::StatusOr<double> CublasLtBackend::TimeOnce(const std::function<absl::Status()>& enqueue) {
  RETURN_IF_ERROR(Cuda(timer_.Record(0, stream_), "event"));
  RETURN_IF_ERROR(enqueue());
  RETURN_IF_ERROR(Cuda(timer_.Record(1, stream_), "event"));
  std::vector<double> seconds;
  RETURN_IF_ERROR(Cuda(timer_.Intervals(1, &seconds), "check sync and elapsed time"));
  return seconds[0];
}

absl::StatusOr<uint64_t> CublasLtBackend::CountNonFinite(const void* p, int64_t elements,
                                                         Elem elem) {
  DeviceBuffer bad;
  RETURN_IF_ERROR(Cuda(bad.Allocate(sizeof(unsigned long long)), "check alloc"));
  unsigned long long nonfinite = 0;
  RETURN_IF_ERROR(
      Cuda(cuda::CountNonFinite(p, elements, elem, bad.get<unsigned long long>(), stream_),
           "finiteness check"));
  RETURN_IF_ERROR(Cuda(
      cudaMemcpyAsync(&nonfinite, bad.get(), sizeof(nonfinite), cudaMemcpyDeviceToHost, stream_),
      "check copy"));
  RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream_), "check sync"));
  return static_cast<uint64_t>(nonfinite);
}

}  // namespace wavecrest::engine
