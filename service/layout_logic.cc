#include "service/layout_logic.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/units.h"
#include "service/convert.h"
#include "service/errors.h"

namespace wavecrest {
namespace {

// `spec` with the micro-batch the request gave (0: the plan chooses it).
ModelSpec AsRequested(const v1::ModelSpec& requested, const ModelSpec& spec) {
  ModelSpec s = spec;
  s.micro_batch_size = requested.micro_batch_size();
  return s;
}

// The degrees the request stated (0 where it left them).
ModelSpec RequestedDegrees(const v1::ModelSpec& requested) {
  ModelSpec s;
  s.tensor_parallel = requested.tensor_parallel();
  s.pipeline_parallel = requested.pipeline_parallel();
  s.context_parallel = requested.context_parallel();
  s.expert_parallel = requested.expert_parallel();
  return s;
}

}  // namespace

absl::Status RunFieldError(const absl::Status& status) {
  const absl::string_view msg = status.message();
  const size_t colon = msg.find(": ");
  if (absl::StartsWith(msg, "run.") && colon != absl::string_view::npos) {
    return FieldError(msg.substr(0, colon), msg.substr(colon + 2));
  }
  return FieldError("run", msg);
}

bool SearchesDegrees(const v1::ModelSpec& requested, const ModelSpec& spec,
                     const RunConfig& run) {
  if (!run.plan || run.keep_degrees || run.num_gpus <= 0 || run.global_batch <= 0 ||
      spec.workload != Workload::kTraining) {
    return false;
  }
  const HeldDegrees held = HeldOf(RequestedDegrees(requested), false);
  return !(held.tensor && held.pipeline && held.context && held.expert);
}

absl::StatusOr<LayoutSearch> SearchRequestedLayout(const v1::ModelSpec& requested,
                                                   const GpuSpec& gpu, const RunConfig& run,
                                                   ModelSpec& spec, PlannedMicroBatch& planned) {
  const HeldDegrees held = HeldOf(RequestedDegrees(requested), false);
  absl::StatusOr<LayoutSearch> search = SearchLayouts(AsRequested(requested, spec), gpu, run,
                                                      held, &CatalogPredictionMemo());
  if (!search.ok()) return RunFieldError(search.status());
  StepBreakdown best = search->ranked.front().step;
  spec.tensor_parallel = best.tensor_parallel;
  spec.pipeline_parallel = best.pipeline_parallel;
  spec.context_parallel = best.context_parallel;
  spec.expert_parallel = best.expert_parallel;
  spec.data_parallel = best.data_parallel;
  spec.micro_batch_size = best.micro_batch_size;
  planned.micro_batch = best.micro_batch_size;
  planned.assumption = search->assumption;
  planned.step = std::move(best);
  return search;
}

void AddLayouts(const LayoutSearch& search, v1::AnalyzeResponse& response) {
  int32_t rank = 0;
  for (const LayoutChoice& c : search.ranked) {
    v1::LayoutOption* o = response.add_layouts();
    o->set_rank(++rank);
    *o->mutable_step() = ToProto(c.step);
    o->set_why(c.why);
  }
  response.set_layouts_examined(search.examined);
  response.set_layouts_fit(search.fit);
}

void AddPlanThatFits(const v1::ModelSpec& requested, const GpuSpec& gpu, const RunConfig& run,
                     const ModelSpec& spec, v1::AnalyzeResponse& response) {
  const v1::StepBreakdown& given = response.step();
  if (!response.has_step() || given.memory().fits()) return;
  RunConfig free = run;
  free.plan = true;
  free.num_gpus = given.gpus();
  free.global_batch = given.global_batch();
  // The degrees the request states held, as --plan holds them; all free where none fits so.
  const ModelSpec asked = AsRequested(requested, spec);
  const HeldDegrees held = HeldOf(RequestedDegrees(requested), false);
  absl::StatusOr<LayoutSearch> search =
      SearchLayouts(asked, gpu, free, held, &CatalogPredictionMemo());
  const bool kept = search.ok() && search->fit > 0;
  if (!kept) search = SearchLayouts(asked, gpu, free, HeldDegrees{}, &CatalogPredictionMemo());
  if (!search.ok() || search->fit == 0) return;
  const StepBreakdown& plan = search->ranked.front().step;
  // Past the GPU it cannot start; past the share the plan leaves to the model but within the
  // GPU, published layouts that ran come out there (bench/published_runs' "memory:" line).
  const bool within_gpu = given.memory().total_bytes() <= given.memory().capacity_bytes();
  response.mutable_step()->mutable_assumptions()->Add(absl::StrFormat(
      "does NOT fit in memory as given (%.1f GiB of %.0f per GPU): %s; the fastest layout that "
      "fits on these %d GPUs at global batch %d%s is %s, micro-batch %d, %.3g s per step "
      "(layouts; analyze --plan answers with it)",
      given.memory().total_bytes() / kGiB, given.memory().capacity_bytes() / kGiB,
      within_gpu ? absl::StrFormat("past the %.0f%% of the GPU the plan leaves to the model but "
                                   "within it, where published layouts that ran reach: it may "
                                   "not start",
                                   100 * kUsableMemoryFraction)
                 : "not a run that can start",
      given.gpus(), given.global_batch(),
      kept ? absl::StrCat(HeldWords(held, asked)) : " (no layout fits with the degrees given)",
      DegreesName(plan), plan.micro_batch_size, plan.step_s));
  auto* a = response.mutable_step()->mutable_assumptions();
  std::rotate(a->begin(), a->end() - 1, a->end());
  AddLayouts(*search, response);
}

}  // namespace wavecrest
