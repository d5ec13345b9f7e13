#include "core/collectives.h"

#include <algorithm>

#include "absl/status/statusor.h"
#include "core/network.h"

namespace wavecrest {
namespace {

// A ring collective as NCCL prices it (src/graph/tuning.cc, NVIDIA/nccl @5067397, its tuner's
// default constants, microseconds): each rank moves `factor`·(n-1)/n of `bytes` (factor 2 for an
// all-reduce, 1 for an all-gather or a reduce-scatter) in factor·(n-1) steps, of which
// factor·(nodes-1) cross the network. NCCL takes the faster of two protocols for the message:
// Simple (full bandwidth; 8.4 base, 3.4 per NVLink step, 14 per network step) and LL128 (120/128
// of it; 14 base, 1.9 per NVLink step, 4 per network step, 8.5 with one rank per node).
struct RingProtocol {
  double base_us, nvlink_step_us, network_step_us, one_per_node_step_us, bw_fraction;
};
constexpr RingProtocol kSimple{8.4, 3.4, 14.0, 14.0, 1.0};
constexpr RingProtocol kLl128{14.0, 1.9, 4.0, 8.5, 120.0 / 128.0};

double RingS(double bytes, int64_t n, const Path& path, int factor) {
  if (n <= 1) return 0;
  const double steps = static_cast<double>(factor * (n - 1));
  const double across = static_cast<double>(factor * (std::min(path.nodes, n) - 1));
  const double moved = factor * static_cast<double>(n - 1) / static_cast<double>(n) * bytes;
  double best = 0;
  for (const RingProtocol& p : {kSimple, kLl128}) {
    const double step_us = path.per_node == 1 ? p.one_per_node_step_us : p.network_step_us;
    const double latency =
        1e-6 * (p.base_us + (steps - across) * p.nvlink_step_us + across * step_us);
    const double t = latency + moved / (path.bw * p.bw_fraction);
    if (best == 0 || t < best) best = t;
  }
  return best;
}

}  // namespace

Path PathFor(const GpuSpec& gpu, const RunConfig& run, int64_t span) {
  const Interconnect& l = gpu.link;
  if (span <= l.domain_gpus && l.nvlink_bytes_per_s > 0) {
    Path nvlink{l.nvlink_bytes_per_s * kCollectiveEfficiency, l.nvlink_latency_s, false, false};
    nvlink.nvls_bw = l.nvls_allreduce_bytes_per_s;
    return nvlink;
  }
  const int64_t nodes = (span + l.domain_gpus - 1) / std::max<int64_t>(1, l.domain_gpus);
  if (!run.network.empty()) {
    if (absl::StatusOr<const NetworkProfile*> n = FindNetwork(run.network); n.ok()) {
      return {(*n)->gbits_per_gpu / 8 * 1e9 * kCollectiveEfficiency, l.network_latency_s, true,
              (*n)->in_network_reduction, nodes, 1};
    }
  }
  return {l.network_bytes_per_s * kCollectiveEfficiency, l.network_latency_s, true, false, nodes,
          1};
}

double AllReduceS(double bytes, int64_t n, const Path& path) { return RingS(bytes, n, path, 2); }
double GatherS(double bytes, int64_t n, const Path& path) { return RingS(bytes, n, path, 1); }

// The link of a collective over `n` ranks `stride` apart (a data-parallel group is every t-th
// rank). Inside one NVLink domain it is NVLink. Across domains NCCL runs one ring (or tree) per
// NIC, so the g ranks of the group that share a node send their share of the data out of g NICs
// at once: the group's bandwidth per rank is g NICs' (NVLink's at most). A tensor-parallel group
// of 8 with one data-parallel rank per node has g = 1, FSDP over whole nodes g = 8. NCCL's
// maintainers measure 192 GB/s of all-reduce bus bandwidth across DGX A100 nodes with 8 x 200
// Gb/s NICs (github.com/NVIDIA/nccl/issues/1576, quoting #812), 8 NICs' worth, not one's.
Path GroupPath(const GpuSpec& gpu, const RunConfig& run, int64_t n, int64_t stride) {
  Path path = PathFor(gpu, run, n * stride);
  if (!path.network) return path;
  const int64_t per_node =
      std::clamp<int64_t>(gpu.link.domain_gpus / std::max<int64_t>(1, stride), 1, n);
  const Path nvlink = PathFor(gpu, run, 1);
  const double bw = path.bw * static_cast<double>(per_node);
  path.bw = nvlink.bw > 0 ? std::min(bw, nvlink.bw) : bw;
  path.per_node = per_node;
  path.nodes = (n + per_node - 1) / per_node;
  return path;
}

// An all-reduce over a path: the ring's, or with in-network reduction each GPU sends its data once
// and receives the reduced result once (the switches add; NCCL's CollNet/SHARP), two steps.
double AllReduceOver(double bytes, int64_t n, const Path& path) {
  if (n <= 1) return 0;
  if (path.in_network_reduction) return bytes / path.bw + 2 * path.latency;
  const double ring = AllReduceS(bytes, n, path);
  // Inside an NVSwitch domain that reduces (NVLS), NCCL takes the faster of it (25 us of NVLink
  // latency in its tuner, src/graph/tuning.cc) and the ring.
  if (path.nvls_bw > 0) return std::min(ring, bytes / path.nvls_bw + 25e-6);
  return ring;
}

// One micro-batch's hidden states on one rank: b·s/c tokens × h, 16-bit (what the tensor-parallel
// collectives and the pipeline sends move).
double HiddenStatesBytes(const ModelSpec& s) {
  return static_cast<double>(Derive(s).tokens * s.hidden_size) * 2;
}

}  // namespace wavecrest
