// Collectives between GPUs as the planner prices them (core/parallelism.h): the link a group of
// ranks talks over, NCCL's ring all-reduce, all-gather and reduce-scatter with its tuner's
// latencies, in-network reduction, and a micro-batch's hidden states. Shared by the planner's
// files (parallelism.cc, expert_parallel.cc); PREDICTIONS, as everything of the planner.
#ifndef WAVECREST_CORE_COLLECTIVES_H_
#define WAVECREST_CORE_COLLECTIVES_H_

#include <cstdint>

#include "core/gpu_catalog.h"
#include "core/model_spec.h"
#include "core/parallelism.h"

namespace wavecrest {

// A link a group of GPUs talks over: NVLink when the whole group (`span` consecutive ranks) fits
// in one NVLink domain, the network otherwise: the run's named network (`run.network`) or the
// GPU's reference system's.
struct Path {
  double bw = 0;
  double latency = 0;  // one point-to-point send's
  bool network = false;
  bool in_network_reduction = false;  // SHARP: the switches reduce all-reduces across nodes
  int64_t nodes = 1;                  // the nodes a collective's ranks span
  int64_t per_node = 1;               // its ranks in each node
  double nvls_bw = 0;                 // NVLink SHARP all-reduce bandwidth inside the domain
};
Path PathFor(const GpuSpec& gpu, const RunConfig& run, int64_t span);

// A ring collective over n ranks on `path` (NCCL's tuning model; collectives.cc): an all-reduce
// of `bytes`, and an all-gather or a reduce-scatter of `bytes` (each rank's whole).
double AllReduceS(double bytes, int64_t n, const Path& path);
double GatherS(double bytes, int64_t n, const Path& path);

// The link of a collective over `n` ranks `stride` apart (collectives.cc says how NICs add up).
Path GroupPath(const GpuSpec& gpu, const RunConfig& run, int64_t n, int64_t stride);

// An all-reduce over a path: the ring's, in-network reduction's, or NVLink SHARP's.
double AllReduceOver(double bytes, int64_t n, const Path& path);

// One micro-batch's hidden states on one rank: b·s/c tokens × h, 16-bit (what the tensor-parallel
// collectives and the pipeline sends move).
double HiddenStatesBytes(const ModelSpec& s);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_COLLECTIVES_H_
