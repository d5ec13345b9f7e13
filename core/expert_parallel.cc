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
// holds whole groups, a token reaches at most groups_per_token nodes. The alltoall dispatcher's are k copies spread over the e ranks:
// k·(local-1)/e and k·(e-local)/e, whatever the groups.
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
// latency per all-to-all (the sends to all peers are posted together). With experts split over the
// t ranks too, the expert MLP's collectives carry the k copies of each token instead of one: (k-1)
// more of the four per layer (all-gather and reduce-scatter, forward and backward); whole experts
// (et = 1) have none (TensorParallelS's MLP half is taken off their layers). Not overlapped with
// compute (Megatron-Core's default; RunConfig::ep_overlap hides part of it in PlanStep).
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
  const Path nvlink = PathFor(gpu, run, 1);
  double per = 0;
  if (stride * e <= gpu.link.domain_gpus) {
    per = token_bytes * copies.nvlink / nvlink.bw + nvlink.latency;
  } else {
    const Path net = PathFor(gpu, run, gpu.link.domain_gpus + 1);
    per = std::max(token_bytes * copies.nvlink / nvlink.bw, token_bytes * copies.network / net.bw) +
          net.latency;
  }
  const double all_to_alls = 2 * (2 + (run.recompute == Recompute::kFull ? 1 : 0));
  double tp_extra = 0;
  if (t > 1 && et == t) {
    const Path tp_path = PathFor(gpu, run, t);
    tp_extra = (k - 1) * 4 * GatherS(HiddenStatesBytes(s), t, tp_path);
  }
  return moe_layers * (all_to_alls * per + tp_extra);
}

// What the step assumed of expert parallelism: the dispatcher, the overlap, balanced routing and
// the MoE block as fused kernels run it.
std::string ExpertParallelAssumption(const ModelSpec& s, const RunConfig& run,
                                     const StepBreakdown& r) {
  return absl::StrFormat(
      "expert parallelism over %d ranks: %d of %d experts per rank, tokens to their experts and "
      "back by all-to-all (dispatch and combine, forward and backward, 16-bit; %s) %s, routing "
      "balanced across experts%s (as NVIDIA's MoE benchmarks force it; real routers are uneven "
      "and the slowest rank sets the pace); expert gradients reduce over the %d ranks holding "
      "the same experts%s; the MoE block as fused, sync-free kernels run it (Megatron-Core's "
      "published runs at micro-batch 1 measured slower, PyTorch's with DeepEP at micro-batches "
      "2-4 faster: the band)",
      s.expert_parallel, s.num_experts / s.expert_parallel, s.num_experts,
      run.ep_dispatcher == EpDispatcher::kFlex
          ? "the flex dispatcher (DeepEP, HybridEP): each token once to every node and every "
            "rank holding one of its experts, across nodes to the GPU of the same index, which "
            "forwards it over NVLink"
          : "Megatron-Core's alltoall dispatcher: one copy per routed expert; ep_dispatcher "
            "flex prices DeepEP's",
      run.ep_overlap ? "under another micro-batch's MoE layers (ep_overlap, Megatron-Core's "
                       "--overlap-moe-expert-parallel-comm; the first forward's and the last "
                       "backward's exposed)"
                     : "not overlapped with compute (Megatron-Core's default)",
      GroupLimitedRouting(s)
          ? absl::StrFormat(" within %d of %d groups of experts per token (group-limited "
                            "routing)",
                            s.expert_groups_per_token, s.expert_groups)
          : "",
      std::max<int64_t>(1, ExpertPool(s, r.data_parallel) / s.expert_parallel),
      ExpertTensorParallel(s) < s.tensor_parallel
          ? "; whole experts (expert tensor parallelism 1): each tensor-parallel rank routes its "
            "own share of the tokens"
          : "");
}

}  // namespace wavecrest
