#include "core/run_tp.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/memory.h"
#include "core/parallelism.h"

namespace wavecrest {
namespace {

// Whether `s` (at its tensor_parallel degree) fits on one node of `gpu` as a team would run it.
bool FitsOnNode(const ModelSpec& s, const GpuSpec& gpu, int64_t node) {
  if (s.workload != Workload::kTraining) return EstimateMemory(s, gpu).fits;
  const int64_t replica = s.tensor_parallel * std::max<int64_t>(1, s.pipeline_parallel) *
                          std::max<int64_t>(1, s.context_parallel);
  if (replica > node) return false;
  const int64_t d = std::max<int64_t>(1, node / replica);
  // The least memory first (the planner's layouts are listed from the most): the first that fits
  // settles it.
  std::vector<RunConfig> layouts = CandidateLayouts(s, RunConfig());
  std::reverse(layouts.begin(), layouts.end());
  for (const RunConfig& c : layouts) {
    if (c.zero_stage > 0 && d * std::max<int64_t>(1, s.context_parallel) == 1) continue;
    MemoryLayout m;
    m.sequence_parallel = c.sequence_parallel;
    m.recompute = c.recompute;
    m.interleave = c.interleave;
    m.data_parallel = d;
    m.zero_stage = c.zero_stage;
    m.offload_activations = c.offload_activations;
    if (EstimateMemory(s, gpu, m).fits) return true;
  }
  return false;
}

}  // namespace

RunTp RunTpDegrees(const ModelSpec& base, const GpuSpec& gpu,
                   const std::vector<int64_t>& supported) {
  RunTp out;
  const int64_t node = std::max<int64_t>(1, gpu.link.domain_gpus);
  const std::string what = base.workload == Workload::kTraining ? "its training state fits"
                                                                 : "its weights and KV cache fit";
  for (int64_t t : supported) {
    ModelSpec s = base;
    s.tensor_parallel = t;
    if (!FitsOnNode(s, gpu, node)) continue;
    for (int64_t x : supported) {
      if (x == t || x * 2 == t || x == t * 2) out.degrees.push_back(x);
    }
    std::vector<int64_t> neighbours;
    for (int64_t x : out.degrees) {
      if (x != t) neighbours.push_back(x);
    }
    out.source = absl::StrCat(
        "the run this model would get: TP ", t, " is the smallest of ",
        absl::StrJoin(supported, ", "), " at which ", what, " on one ", gpu.name, " node of ",
        node, base.workload == Workload::kTraining ? " (a planned layout, the rest data parallel)"
                                                     : "",
        neighbours.empty() ? ""
                           : absl::StrCat(neighbours.size() == 1 ? ", with its neighbour "
                                                                 : ", with its neighbours ",
                                          absl::StrJoin(neighbours, " and ")),
        "; --tp-options to choose others");
    return out;
  }
  out.degrees = supported;
  out.source = absl::StrCat("the degrees of ", absl::StrJoin(supported, ", "),
                            " the baseline supports: ", what, " on one ", gpu.name, " node of ",
                            node, " at none of them, so a run needs pipeline stages or more "
                            "nodes; --tp-options to choose");
  return out;
}

}  // namespace wavecrest
