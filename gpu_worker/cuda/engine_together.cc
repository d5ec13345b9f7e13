// Timing several GEMMs or layers together (issue 35, item 1). On a lent H200 a GEMM timed alone
// moved 5-20% between processes: under its power limit the GPU steps its clock over hundreds of
// milliseconds, and a GEMM timed in 15 ms sees one step of it. What Recommend and Sweep decide on
// is a ratio of things of one request; timed in rounds, one window each (baseline, candidate,
// baseline, ...), every one of them sees the same stretch of clocks, and drift they share cancels
// in their ratios. Each item is prepared first (plan, inputs, check, graph, warm-up) and keeps its
// memory until its group is sampled; a group is as large as device memory allows.
#include "core/status_macros.h"
#include "gpu_worker/cuda/cublaslt_engine.h"

namespace wavecrest::engine {

struct CublasLtBackend::PreparedGemm {
  GemmKey key;
  EngineOptions options;
  GemmPlan plan;
  TypeInfo ty{};
  OperandSets a, b, d;
  MatmulDescriptors desc;
  std::vector<cublasLtMatmulHeuristicResult_t> heur;
  float alpha = 1.0f, beta = 0.0f;
  Launch launch;
  Algo timed;
};

absl::StatusOr<std::unique_ptr<CublasLtBackend::PreparedGemm>> CublasLtBackend::PrepareGemm(
    const GemmKey& key, const TimingParams& params) {
  auto p = std::make_unique<PreparedGemm>();
  p->timed.broken = &broken_;
  p->key = key;
  p->options = EngineOptionsOf(params);
  ASSIGN_OR_RETURN(p->plan, PlanFor(key, p->options));
  p->ty = Types(key.dtype);
  RETURN_IF_ERROR(AllocateInputs(p->plan, p->ty, p->a, p->b, p->d));
  RETURN_IF_ERROR(MakeDescriptors(p->plan, p->ty, p->ty.cd, &p->desc));
  ASSIGN_OR_RETURN(p->heur,
                   Heuristics(p->desc, p->plan.workspace_bytes, 1, GemmKeyString(key)));
  RETURN_IF_ERROR(Blas(p->heur[0].state, "cublasLtMatmulAlgoGetHeuristic (first algorithm)"));
  const PreparedGemm* q = p.get();
  p->launch = [this, q](const cublasLtMatmulAlgo_t& algo, int s) {
    return cublasLtMatmul(handle_, q->desc.op, &q->alpha, q->a.at(s), q->desc.la, q->b.at(s),
                          q->desc.lb, &q->beta, q->d.at(s), q->desc.ld, q->d.at(s), q->desc.ld,
                          &algo, workspace_, static_cast<size_t>(q->plan.workspace_bytes),
                          stream_);
  };
  p->timed.algo = p->heur[0].algo;
  const GemmRun run{p->key, p->plan, p->ty, p->options, params, p->a, p->b, p->d, p->launch};
  RETURN_IF_ERROR(Prepare(run, p->timed));
  return p;
}

absl::StatusOr<v1::GemmTiming> CublasLtBackend::AnswerPrepared(const PreparedGemm& p,
                                                               const TimingParams& params) {
  return AnswerGemm(p.key, p.plan, p.options, params, p.timed, &p.timed, p.heur[0]);
}

std::vector<absl::StatusOr<v1::GemmTiming>> CublasLtBackend::TimeTogether(
    const std::vector<GemmKey>& keys, const TimingParams& params, const OnItem& on_item,
    const OnDone<v1::GemmTiming>& on_done) {
  // Autotuning re-times its two algorithms alternately itself (Retime).
  if (params.autotune) return TimingBackend::TimeTogether(keys, params, on_item, on_done);
  return TimeInGroups<v1::GemmTiming, PreparedGemm>(
      keys.size(), params, on_item, on_done, [&](size_t i) { return PrepareGemm(keys[i], params); },
      [&](const PreparedGemm& p) { return AnswerPrepared(p, params); });
}

absl::Status CublasLtBackend::SampleInterleaved(const std::vector<Algo*>& algos,
                                                const std::vector<size_t>& index,
                                                const TimingParams& params,
                                                const OnItem& on_item) {
  std::vector<StoppingRule> rules;
  for (Algo* a : algos) {
    a->samples.clear();
    a->sample_end_ns.clear();
    a->sample_mhz.clear();
    a->probe_slots.clear();
    a->sampling_s = 0;
    rules.push_back(Rule(*a, params));
  }
  if (clocks_) clocks_->Start();
  absl::Cleanup stop_clocks = [&] {
    if (!clocks_) return;
    const std::vector<ClockReading> readings = clocks_->StopTimed();
    for (Algo* a : algos) TakeClocks(readings, *a);  // interleaved: the same stretch of work
  };
  // Every item in every round, until all rules are met or the batch's budget (the per-item
  // budget, max_seconds, or half the time left before the caller's deadline) is spent.
  const absl::Time start = absl::Now();
  const double budget_s =
      std::min(params.max_seconds, absl::ToDoubleSeconds(params.deadline - start) / 2);
  int slot = 0, round = 0;
  bool all_met = false;
  while (AnotherRound(round, all_met, absl::ToDoubleSeconds(absl::Now() - start), budget_s)) {
    all_met = true;
    for (size_t j = 0; j < algos.size(); ++j) {
      if (!on_item(index[j])) return absl::CancelledError("the batch was stopped");
      Algo& a = *algos[j];
      const absl::Time window = absl::Now();
      RETURN_IF_ERROR(TimedWindow(a, rules[j], slot++ % (kProbeSlots - 1)));
      a.sampling_s += absl::ToDoubleSeconds(absl::Now() - window);
      Beat(params, "sampling");
      all_met = all_met && rules[j].Why(a.samples, a.sampling_s) != StopReason::kNotYet;
    }
    ++round;
  }
  for (size_t j = 0; j < algos.size(); ++j) {
    Algo& a = *algos[j];
    StopReason why = rules[j].Why(a.samples, a.sampling_s);
    if (why == StopReason::kNotYet) why = StopReason::kBudget;  // the batch's budget
    a.stopped = DescribeStop(why, a.samples, rules[j]);
    absl::StrAppend(&a.stopped, ScheduleNote(a.schedule));
    if (algos.size() > 1) {
      absl::StrAppend(&a.stopped, "; interleaved with ", algos.size() - 1, " others, ", round,
                      " rounds");
    }
  }
  last_sampled_ = absl::Now();
  std::move(stop_clocks).Invoke();
  for (Algo* a : algos) {
    KeepOneClockState(*a);
    a->median = Percentile(a->samples, 0.5);
  }
  return absl::OkStatus();
}

}  // namespace wavecrest::engine
