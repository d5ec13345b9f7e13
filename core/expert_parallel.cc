#include "core/expert_parallel.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/analysis.h"
#include "core/collectives.h"
#include "core/parallelism.h"

namespace wavecrest {
namespace {

// The chance that a token's k experts, drawn without replacement and uniformly from n (as routing
// balanced across the experts draws them), include one of `held` given experts: 1 - C(n-held,
// k) / C(n, k).
double HitProbability(int64_t n, int64_t held, int64_t k) {
  double miss = 1;
  for (int64_t i = 0; i < k && miss > 0; ++i) {
    miss *= std::max<double>(0, static_cast<double>(n - held - i)) / static_cast<double>(n - i);
  }
  return 1 - miss;
}

// The chance that a token's k experts include one of the `len` consecutive experts from
// `first`, under group-limited routing balanced across the experts (DeepSeek's n_group and
// topk_group): M of the G groups of n/G consecutive experts drawn uniformly, then k experts
// uniformly among their M·n/G. Sums over which of the groups the range touches are drawn (a count
// of subsets by size and by the experts of the range they hold); without groups, or where that
// count would be too large to take, HitProbability(n, len, k).
double GroupedHitProbability(int64_t n, int64_t first, int64_t len, int64_t k, int64_t groups,
                             int64_t per_token) {
  if (groups <= 1 || per_token <= 0 || per_token >= groups || n % groups != 0) {
    return HitProbability(n, len, k);
  }
  const int64_t g = n / groups, drawn = per_token * g;
  std::vector<int64_t> overlap;
  for (int64_t grp = first / g; grp * g < first + len && grp < groups; ++grp) {
    overlap.push_back(std::min(first + len, (grp + 1) * g) - std::max(first, grp * g));
  }
  const int64_t touched = static_cast<int64_t>(overlap.size());
  const int64_t most = std::min(touched, per_token);
  if (touched * (most + 1) * (len + 1) > 4'000'000) return HitProbability(n, len, k);
  // ways[j][x]: subsets of j touched groups holding x experts of the range.
  std::vector<std::vector<double>> ways(most + 1, std::vector<double>(len + 1, 0));
  ways[0][0] = 1;
  for (int64_t o : overlap) {
    for (int64_t j = most; j >= 1; --j) {
      for (int64_t x = len; x >= o; --x) ways[j][x] += ways[j - 1][x - o];
    }
  }
  const auto lchoose = [](int64_t a, int64_t b) {
    return std::lgamma(static_cast<double>(a) + 1) - std::lgamma(static_cast<double>(b) + 1) -
           std::lgamma(static_cast<double>(a - b) + 1);
  };
  double miss = 0;
  for (int64_t j = 0; j <= most; ++j) {
    if (per_token - j > groups - touched) continue;  // the other groups cannot fill the draw
    // One given subset of j touched groups with the rest of the M from the untouched.
    const double subset = std::exp(lchoose(groups - touched, per_token - j) -
                                   lchoose(groups, per_token));
    for (int64_t x = 0; x <= len; ++x) {
      if (ways[j][x] == 0) continue;
      miss += ways[j][x] * subset * (1 - HitProbability(drawn, x, k));
    }
  }
  return 1 - miss;
}

// How many copies of one token a rank sends per all-to-all: to the other ranks of its NVLink
// domain and across the network.
struct EpCopies {
  double nvlink = 0;
  double network = 0;
};

// The flex dispatcher's copies per token, for e expert-parallel ranks of n experts, `local` of
// them in a node (N = e / local nodes), k experts per token: across the network one per other
// node holding one of its experts, (N-1)·P(node); over NVLink one per other rank of its own node
// holding one, (local-1)·P(rank), and in each destination node the forwards from the receiving
// GPU to the other ranks it reaches there, local·P(rank) - P(node) per node (by symmetry, what a
// rank forwards for the others equals what is forwarded for it). With group-limited routing
// (`groups` > 1 and `groups_per_token`: DeepSeek's n_group and topk_group; 0 groups when the
// routing is not group-limited) P(rank) and P(node) are GroupedHitProbability's; when a node
// holds whole groups, a token reaches at most groups_per_token nodes. The alltoall dispatcher's
// are k copies spread over the e ranks: k·(local-1)/e and k·(e-local)/e, whatever the groups.
EpCopies FlexCopies(int64_t n, int64_t k, int64_t e, int64_t local, int64_t groups,
                   int64_t groups_per_token) {
  const int64_t per_rank = std::max<int64_t>(n / e, 1);
  // Each rank holds consecutive experts (Megatron-Core's local experts); with groups the chance
  // depends on where a rank's or a node's experts fall among them: averaged over the ranks and
  // the nodes (without, every rank and node alike: the first).
  const bool grouped = groups > 1;
  const int64_t ranks = grouped ? e : 1, nodes_n = grouped ? std::max<int64_t>(e / local, 1) : 1;
  double rank_hit = 0, node_hit = 0;
  for (int64_t r = 0; r < ranks; ++r) {
    rank_hit += GroupedHitProbability(n, r * per_rank, per_rank, k, groups, groups_per_token);
  }
  for (int64_t m = 0; m < nodes_n; ++m) {
    node_hit += GroupedHitProbability(n, m * per_rank * local, per_rank * local, k, groups,
                                      groups_per_token);
  }
  rank_hit /= static_cast<double>(ranks);
  node_hit /= static_cast<double>(nodes_n);
  const double nodes = static_cast<double>(e) / static_cast<double>(local);
  const double l = static_cast<double>(local);
  return {(l - 1) * rank_hit + (nodes - 1) * (l * rank_hit - node_hit), (nodes - 1) * node_hit};
}

}  // namespace

// DeepEP's normal (training and prefill) kernels on H800 (NVLink ~160 GB/s, one CX7 400 Gb/s NIC
// of ~50 GB/s per GPU), DeepSeek-V3's setting (4096 tokens, hidden 7168, top-8, FP8 dispatch,
// BF16 combine): 153 GB/s dispatch and 158 combine over NVLink at EP 8; over RDMA 43 and 43 at
// EP 16, 58 and 57 at EP 32, 51 and 50 at EP 64 (github.com/deepseek-ai/DeepEP, the README's V1
// tables, now docs/legacy.md at 0297fc80). As fractions of the link, the dispatch's and
// combine's mean, at most the whole link (the RDMA figures are "bottleneck bandwidth", which can
// count a rank's own traffic): the catalog's links are scaled by them.
namespace {
struct FlexEfficiency {
  int64_t ep;
  double fraction;
};
constexpr FlexEfficiency kFlexRdma[] = {{16, 43.0 / 50}, {32, 1.0}, {64, 1.0}};
constexpr double kFlexNvlink = (153.0 + 158.0) / 2 / 160;
}  // namespace

// The flex dispatcher's fraction of the link: NVLink's, or the network's at the table's largest
// EP size not above e (EP 16's below it).
double FlexLinkEfficiency(bool network, int64_t e) {
  if (!network) return kFlexNvlink;
  double f = kFlexRdma[0].fraction;
  for (const FlexEfficiency& x : kFlexRdma) {
    if (x.ep <= e) f = x.fraction;
  }
  return f;
}

// DeepEP's low-latency kernels on the same H800s (pure RDMA, 128 tokens, hidden 7168, top-8,
// FP8 dispatch, BF16 combine; the V1 README table, docs/legacy.md at 0297fc80), microseconds per
// call by EP size: the shortest an all-to-all across nodes has been measured to take.
namespace {
struct LowLatencyCall {
  int64_t ep;
  double dispatch_us, combine_us;
};
constexpr LowLatencyCall kDeepEpLowLatency[] = {{8, 77, 114},   {16, 118, 195}, {32, 155, 273},
                                                {64, 173, 314}, {128, 192, 369}, {256, 194, 360}};
constexpr double kDeepEpNicBytesPerS = 50e9;  // the CX7's ~50 GB/s those figures were taken on
}  // namespace

// The floor of one dispatch and one combine over e ranks across nodes: the table's row of the
// largest EP size not above e (EP 8's below it), scaled by the NIC's rate against the CX7's
// (the low-latency kernels move their 128 tokens at 39-127 GB/s: bandwidth-bound).
EpCallFloor CallFloor(int64_t e, double nic_bytes_per_s) {
  LowLatencyCall row = kDeepEpLowLatency[0];
  for (const LowLatencyCall& x : kDeepEpLowLatency) {
    if (x.ep <= e) row = x;
  }
  const double scale = nic_bytes_per_s > 0 ? kDeepEpNicBytesPerS / nic_bytes_per_s : 1;
  return {1e-6 * row.dispatch_us * scale, 1e-6 * row.combine_us * scale};
}

absl::StatusOr<EpDispatcher> ParseEpDispatcher(absl::string_view name) {
  if (name.empty() || name == "alltoall") return EpDispatcher::kAllToAll;
  if (name == "flex" || name == "deepep" || name == "hybridep") return EpDispatcher::kFlex;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown value \"", name,
      "\"; allowed: alltoall (the default), flex (also deepep, hybridep: its backends)"));
}

// The ranks an expert-parallel group is drawn from with d data-parallel ranks: d·c, times t with
// whole experts (expert_tensor_parallel 1); e of them form a group, pool/e hold the same experts.
int64_t ExpertPool(const ModelSpec& s, int64_t d) {
  return d * s.context_parallel * s.tensor_parallel / ExpertTensorParallel(s);
}

// Expert parallelism's all-to-alls of one micro-batch through `moe_layers` MoE layers of one
// stage: each sends the rank's routed token copies to the experts' ranks (dispatch) and brings
// the results back (combine), forward and again backward (the gradients), and once more forward
// under full recomputation; T·k/t tokens of h 16-bit values per GPU (T = b·s/c; with tensor
// parallelism the tokens are split over its ranks, as the sequence-parallel region leaves them),
// (e-1)/e of them to other ranks (the flex dispatcher sends fewer: FlexCopies). The EP group is
// every et-th rank (the experts' tensor-parallel degree; Megatron-Core's etp-ep-dp-pp order): the
// peers in the same NVLink domain over NVLink, the others over the network, both at once; one
// latency per all-to-all (the sends to all peers are posted together), and across nodes no call
// shorter than DeepEP's measured floor (CallFloor). With experts split over the
// t ranks too, the expert MLP's collectives carry the k copies of each token instead of one: (k-1)
// more of the four per layer (all-gather and reduce-scatter, forward and backward); whole experts
// (et = 1) have none (TensorParallelS's MLP half is taken off their layers). Not overlapped with
// compute (Megatron-Core's default; RunConfig::ep_overlap hides part of it: EpOverlapS).
double ExpertParallelS(const Analysis& a, const RunConfig& run, double moe_layers) {
  const ModelSpec& s = a.spec;
  const int64_t e = s.expert_parallel;
  if (e <= 1 || moe_layers <= 0) return 0;
  const GpuSpec& gpu = *a.gpu;
  const int64_t t = s.tensor_parallel, et = ExpertTensorParallel(s);
  const double k = static_cast<double>(s.experts_per_token);
  // One copy of each of the rank's tokens (padded to the experts' capacity when there is one).
  const double token_bytes =
      HiddenStatesBytes(s) * Derive(s).expert_padding / static_cast<double>(t);
  // Megatron-Core lays expert groups out etp-ep-dp-pp: e ranks of stride et.
  const int64_t stride = et;
  const int64_t local = std::clamp<int64_t>(gpu.link.domain_gpus / stride, 1, e);
  const EpCopies copies = run.ep_dispatcher == EpDispatcher::kFlex
                              ? FlexCopies(s.num_experts, s.experts_per_token, e, local,
                                           GroupLimitedRouting(s) ? s.expert_groups : 0,
                                           s.expert_groups_per_token)
                              : EpCopies{k * static_cast<double>(local - 1) / e,
                                         k * static_cast<double>(e - local) / e};
  // The transfer of one all-to-all: NVLink to the peers of the node and the network to the
  // others, both at once. The flex dispatcher's kernels reach the fractions of the links DeepEP
  // measured (FlexLinkEfficiency), NCCL's all-to-all kCollectiveEfficiency.
  const bool flex = run.ep_dispatcher == EpDispatcher::kFlex;
  const bool across = stride * e > gpu.link.domain_gpus;
  const Path nvlink = PathFor(gpu, run, 1);
  const Path net = PathFor(gpu, run, gpu.link.domain_gpus + 1);
  const double nvlink_bw =
      flex ? nvlink.bw / kCollectiveEfficiency * FlexLinkEfficiency(false, e) : nvlink.bw;
  const double net_bw =
      flex ? net.bw / kCollectiveEfficiency * FlexLinkEfficiency(true, e) : net.bw;
  const double transfer =
      across ? std::max(token_bytes * copies.nvlink / nvlink_bw,
                        token_bytes * copies.network / net_bw) + net.latency
             : token_bytes * copies.nvlink / nvlink_bw + nvlink.latency;
  // Across nodes no call is shorter than DeepEP's fastest measured one of its EP size (the
  // low-latency kernels' 128 tokens), at the run's network rate.
  const EpCallFloor floor = across ? CallFloor(e, net.bw / kCollectiveEfficiency) : EpCallFloor{};
  const double dispatch = std::max(transfer, floor.dispatch_s);
  const double combine = std::max(transfer, floor.combine_s);
  // Forward: dispatch and combine; backward: their gradients (a combine and a dispatch); full
  // recomputation and the op-level policy (which keeps no all-to-all's output): the forward's
  // again.
  const double passes =
      2 + (run.recompute == Recompute::kFull || run.recompute == Recompute::kOp ||
                   RecomputesMoeAlone(run)
               ? 1
               : 0);
  double tp_extra = 0;
  if (t > 1 && et == t) {
    const Path tp_path = PathFor(gpu, run, t);
    tp_extra = (k - 1) * 4 * GatherS(HiddenStatesBytes(s), t, tp_path);
  }
  return moe_layers * (passes * (dispatch + combine) + tp_extra);
}

double MoeHostWaitS(const ModelSpec& s, const RunConfig& run) {
  if (run.moe_host_s) return *run.moe_host_s;
  return s.num_experts > 0 && s.moe_capacity_factor == 0 ? kMoeHostWaitS : 0;
}

double MoeHostStepS(const ModelSpec& s, const RunConfig& run, double moe_layers,
                    double microbatches) {
  const double wait = MoeHostWaitS(s, run);
  const double filled =
      run.ep_overlap && microbatches > 1 ? (microbatches - 1) * std::min(wait, kMoeHostIdleS) : 0;
  return moe_layers * (microbatches * wait - filled);
}

double EpOverlapS(const Analysis& a, const RunConfig& run, double ep_comm, double moe_compute,
                  double microbatches) {
  if (!run.ep_overlap || microbatches <= 1) return microbatches * ep_comm;
  // Paired micro-batches hide their all-to-alls under the other's MoE layers; one micro-batch's
  // worth (the unpaired first forward and last backward) stays. While hidden, the dispatch
  // kernels hold kEpOverlapSms of the GPU's SMs, so the compute beside them runs on the rest.
  const double exposed = std::max(0.0, ep_comm - moe_compute);
  const double hidden = ep_comm - exposed;
  const double sms = static_cast<double>(a.gpu->sm_count);
  const double slowed = sms > kEpOverlapSms ? kEpOverlapSms / (sms - kEpOverlapSms) : 0;
  return ep_comm + (microbatches - 1) * (exposed + hidden * slowed);
}

// What the step assumed of expert parallelism: the dispatcher, the overlap, the routing and
// the MoE block as fused kernels run it.
std::string ExpertParallelAssumption(const ModelSpec& s, const RunConfig& run,
                                     const StepBreakdown& r) {
  return absl::StrFormat(
      "expert parallelism over %d ranks: %d of %d experts per rank, tokens to their experts and "
      "back by all-to-all (dispatch and combine, forward and backward, 16-bit; %s; across nodes "
      "no call shorter than DeepEP's low-latency kernels of that EP size, 77-194 us a dispatch "
      "and 114-369 us a combine at 400 Gb/s) %s, routing as the experts' line says%s (the "
      "busiest rank sets the pace); expert gradients reduce over the %d rank%s holding the same "
      "experts%s; %s",
      s.expert_parallel, s.num_experts / s.expert_parallel, s.num_experts,
      run.ep_dispatcher == EpDispatcher::kFlex
          ? "the flex dispatcher (DeepEP, HybridEP): each token once to every node and every "
            "rank holding one of its experts, across nodes to the GPU of the same index, which "
            "forwards it over NVLink, at the link fractions DeepEP measured (97% of NVLink, 86% "
            "of the NIC at EP 16, all of it from EP 32)"
          : "Megatron-Core's alltoall dispatcher: one copy per routed expert; ep_dispatcher "
            "flex prices DeepEP's",
      run.ep_overlap ? "under another micro-batch's MoE layers (ep_overlap, Megatron-Core's "
                       "--overlap-moe-expert-parallel-comm; the first forward's and the last "
                       "backward's exposed; the compute beside them slowed by the 20 SMs the "
                       "dispatch kernels hold, Megatron-Core's moe_deepep_num_sms default, "
                       "taken for every dispatcher; that slowdown is counted in the EP "
                       "all-to-all row)"
                     : "not overlapped with compute (Megatron-Core's default)",
      GroupLimitedRouting(s)
          ? absl::StrFormat(" within %d of %d groups of experts per token (group-limited "
                            "routing)",
                            s.expert_groups_per_token, s.expert_groups)
          : "",
      std::max<int64_t>(1, ExpertPool(s, r.data_parallel) / s.expert_parallel),
      ExpertPool(s, r.data_parallel) / s.expert_parallel > 1 ? "s" : "",
      ExpertTensorParallel(s) < s.tensor_parallel
          ? "; whole experts (expert tensor parallelism 1): each tensor-parallel rank routes its "
            "own share of the tokens"
          : "",
      MoeHostWaitS(s, run) > 0
          ? absl::StrFormat("each MoE layer and micro-batch costs %.1f ms on the host's account "
                            "(--moe-host-ms; the step's \"MoE host waits\": a FITTED constant, "
                            "3 ms by default from NVIDIA's Megatron-Bridge MoE runs, for what "
                            "dropless experts cost beyond their priced kernels: token counts read "
                            "back to the CPU, kernels launched outside CUDA graphs, and whatever "
                            "else those runs spent there)%s",
                            1e3 * MoeHostWaitS(s, run),
                            run.ep_overlap
                                ? absl::StrFormat(
                                      "; under the overlap the GPU's idle share of it, %.1f ms, "
                                      "filled by the other micro-batch's queued kernels (measured "
                                      "in Megatron-Bridge's MoE overlap skill's H100 profile)",
                                      1e3 * std::min(MoeHostWaitS(s, run), kMoeHostIdleS))
                                : "")
          : "no host waits priced in the MoE layers (a capacity factor's static shapes, or "
            "--moe-host-ms 0)");
}

}  // namespace wavecrest
