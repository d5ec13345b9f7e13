#include "core/parallelism.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/network.h"
#include "core/status_macros.h"

namespace wavecrest {
namespace {

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

// One micro-batch on one tensor-parallel rank, split the way the pipeline and recomputation need.
struct MicroBatch {
  double layers_s = 0;             // every transformer layer, forward and backward
  double head_s = 0;               // the logits GEMMs and the loss (the last stage's extra)
  double layers_forward_s = 0;     // the layers' forward (full recomputation repeats it)
  double attention_forward_s = 0;  // attention's core forward (selective recomputation)
  double attention_s = 0;          // attention's core, forward and backward (hides CP's sends)
};

MicroBatch SplitMicroBatch(const Analysis& a) {
  MicroBatch mb;
  const double layers = static_cast<double>(a.spec.num_layers);
  for (const GemmAnalysis& g : a.gemms) {
    const double t = g.prediction.time_s * static_cast<double>(g.gemm.count);
    if (g.gemm.name == kLogits) {
      mb.head_s += t;
      continue;
    }
    mb.layers_s += t;
    const bool attention = g.gemm.fused_attention || g.gemm.name == kAttnScore ||
                           g.gemm.name == kAttnOverValue;
    if (attention) mb.attention_s += t;
    if (g.gemm.pass != Pass::kForward) continue;
    mb.layers_forward_s += t;
    if (attention) mb.attention_forward_s += t;
  }
  // Elementwise kernels: their forward is taken as a third of forward + backward (backward reads
  // about twice what forward does).
  mb.layers_s += layers * a.elementwise.layer_time_s;
  mb.layers_forward_s += layers * a.elementwise.layer_time_s / 3;
  mb.attention_forward_s += layers * a.elementwise.softmax_time_s / 3;
  mb.head_s += a.elementwise.loss_time_s;
  return mb;
}

// Context parallelism's ring of one micro-batch through one stage's `layers`, what attention's
// kernels do not hide: each layer's K and V chunk (b·s/c tokens of this rank's KV heads, 16-bit;
// under MLA K and V of every head) goes around c ranks in c - 1 sends forward, and backward
// sends K, V and their gradients (twice that); full recomputation re-runs the forward ring. The
// sends of a layer overlap its attention kernels (`attention_layer_s`).
double ContextParallelS(const Analysis& a, const RunConfig& run, double layers,
                        double attention_layer_s) {
  const ModelSpec& s = a.spec;
  const int64_t c = s.context_parallel;
  if (c <= 1) return 0;
  const DerivedShape d = Derive(s);
  const double kv_elements =
      s.kv_lora_rank > 0 ? static_cast<double>(d.heads_per_rank * (d.head_dim + d.v_head_dim))
                         : 2.0 * static_cast<double>(d.kv_heads_per_rank * d.head_dim);
  const double chunk = static_cast<double>(d.tokens) * kv_elements * 2;
  const Path path = PathFor(*a.gpu, run, s.tensor_parallel * c);
  const double sends = (1 + 2 + (run.recompute == Recompute::kFull ? 1 : 0)) *
                       static_cast<double>(c - 1);
  const double per_layer = sends * (chunk / path.bw + path.latency);
  return layers * std::max(0.0, per_layer - attention_layer_s);
}

// Activation offload of one micro-batch through one stage's `layers`, what compute does not hide:
// each layer's stored activations go to the host during forward and come back during backward.
double OffloadS(const Analysis& a, const RunConfig& run, double layers, double stored_per_layer,
                double forward_layer_s, double backward_layer_s) {
  if (!run.offload_activations) return 0;
  const double bw = a.gpu->link.host_bytes_per_s * kHostCopyEfficiency;
  if (bw <= 0) return 0;
  const double copy = stored_per_layer / bw;
  return layers * (std::max(0.0, copy - forward_layer_s) + std::max(0.0, copy - backward_layer_s));
}

// Tensor-parallel collectives of one micro-batch through one stage's `layers`.
double TensorParallelS(const Analysis& a, const RunConfig& run, double layers) {
  const ModelSpec& s = a.spec;
  const int64_t t = s.tensor_parallel;
  if (t <= 1) return 0;
  const double bytes = HiddenStatesBytes(s);
  const Path path = PathFor(*a.gpu, run, t);
  const bool full = run.recompute == Recompute::kFull;
  double per_layer = 0;
  if (run.sequence_parallel) {
    // Forward: 2 all-gathers and 2 reduce-scatters; backward the same and 2 all-gathers re-done.
    const double gathers = 4 + 2 + (full ? 2 : 0);
    const double scatters = 4 + (full ? 2 : 0);
    per_layer = (gathers + scatters) * GatherS(bytes, t, path);
  } else {
    per_layer = (4 + (full ? 2 : 0)) * AllReduceOver(bytes, t, path);
  }
  return layers * per_layer;
}

// The ranks an expert-parallel group is drawn from with d data-parallel ranks: d·c, times t with
// whole experts (expert_tensor_parallel 1); e of them form a group, pool/e hold the same experts.
int64_t ExpertPool(const ModelSpec& s, int64_t d) {
  return d * s.context_parallel * s.tensor_parallel / ExpertTensorParallel(s);
}

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

absl::Status CheckRun(const ModelSpec& s, const RunConfig& run, int64_t tp, int64_t* d,
                      int64_t* m) {
  const int64_t b = s.micro_batch_size;
  if (run.num_gpus < 0 || run.global_batch < 0) {
    return absl::InvalidArgumentError("run: num_gpus and global_batch must be >= 0");
  }
  if (run.num_gpus > 0 && run.num_gpus % tp != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.num_gpus: must be a multiple of tensor_parallel × pipeline_parallel × "
                     "context_parallel (",
                     tp, "); got ", run.num_gpus));
  }
  *d = run.num_gpus > 0 ? run.num_gpus / tp : std::max<int64_t>(s.data_parallel, 1);
  // No data parallelism stated but expert parallelism: the fewest data-parallel ranks that hold
  // the expert-parallel group (e ranks of d·c).
  if (run.num_gpus == 0 && *d == 1 && s.expert_parallel > 1) {
    *d = s.expert_parallel / std::gcd(s.expert_parallel, ExpertPool(s, 1));
  }
  const int64_t per_step = b * *d;
  const int64_t global = run.global_batch > 0 ? run.global_batch : per_step * s.pipeline_parallel;
  if (global % per_step != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.global_batch: must be a multiple of micro_batch_size × data-parallel "
                     "ranks (",
                     per_step, "); got ", global));
  }
  *m = global / per_step;
  if (s.expert_parallel > 1 && ExpertPool(s, *d) % s.expert_parallel != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.expert_parallel: must divide the data- × context-parallel ranks (", *d, " × ",
        s.context_parallel,
        ExpertTensorParallel(s) == s.tensor_parallel
            ? ""
            : absl::StrCat(" × the ", s.tensor_parallel, " tensor-parallel ranks of whole experts"),
        "), whose ranks it splits the experts over; got ", s.expert_parallel));
  }
  // Stages of unequal layers interleave too (Megatron-Core's layouts with the embedding and the
  // loss counted as layers: Llama 3.1 405B's 126 layers on 8 stages of 8 chunks): the chunks
  // of a middle stage must be equal, the end stages' fewer layers sit in their end chunks.
  const PipelineSplit split = SplitLayers(s.num_layers, s.pipeline_parallel);
  const int64_t stage_layers = split.middle;
  if (run.interleave < 1 || stage_layers % run.interleave != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.interleave: must be >= 1 and divide the layers per stage (", stage_layers,
                     "); got ", run.interleave));
  }
  if (run.zero_stage < 0 || run.zero_stage > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.zero_stage: must be 0, 1, 2 or 3; got ", run.zero_stage));
  }
  if (run.gradient_bytes != 0 && run.gradient_bytes != 2 && run.gradient_bytes != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.gradient_bytes: must be 0 (= 4), 2 or 4; got ", run.gradient_bytes));
  }
  if (!(run.tp_overlap >= 0 && run.tp_overlap <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.tp_overlap: must be in [0, 1]; got ", run.tp_overlap));
  }
  if (!(run.dp_overlap >= 0 && run.dp_overlap <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("run.dp_overlap: must be in [0, 1]; got ", run.dp_overlap));
  }
  if (!run.network.empty()) RETURN_IF_ERROR(FindNetwork(run.network).status());
  // (With --plan the plan picks the ZeRO stage, and gathers in FP8 only where it has one.)
  if (run.fp8_param_gather && (s.dtype != DType::kFp8E4M3 || (run.zero_stage < 1 && !run.plan))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run.fp8_param_gather: needs dtype fp8_e4m3 and zero_stage >= 1 (the weights gathered "
        "in FP8 by the distributed optimizer or FSDP); got dtype ",
        DTypeName(s.dtype), ", zero_stage ", run.zero_stage));
  }
  return absl::OkStatus();
}

// The memory layout a run implies, for EstimateMemory.
MemoryLayout LayoutOf(const RunConfig& run, const StepBreakdown& r) {
  MemoryLayout layout;
  layout.sequence_parallel = run.sequence_parallel;
  layout.recompute = run.recompute;
  layout.interleave = run.interleave;
  layout.microbatches = r.microbatches;
  layout.data_parallel = r.data_parallel;
  layout.zero_stage = run.zero_stage;
  layout.offload_activations = run.offload_activations;
  layout.gradient_bytes = run.gradient_bytes;
  layout.fp8_params = run.fp8_param_gather;
  return layout;
}

// Whether the pipeline sends run under compute: Megatron-LM overlaps them in the interleaved
// schedule unless told not to, and cannot in plain 1F1B.
bool PipelineSendsOverlapped(const RunConfig& run) { return run.pp_overlap && run.interleave > 1; }

// Activations forward and gradients backward between pipeline stages for one step: per
// micro-batch and virtual stage, b·s·h/(t·c) each (Megatron's scatter-gather optimisation splits
// them over the TP ranks; each context-parallel rank sends its own part of the sequence).
double PipelineSendsS(const Analysis& a, const RunConfig& run, double microbatches) {
  const ModelSpec& s = a.spec;
  if (s.pipeline_parallel <= 1) return 0;
  const Path path =
      PathFor(*a.gpu, run, s.tensor_parallel * s.context_parallel * s.pipeline_parallel);
  const double bytes = HiddenStatesBytes(s) / static_cast<double>(s.tensor_parallel);
  const double send = bytes / path.bw + path.latency;
  if (PipelineSendsOverlapped(run)) {
    // Megatron-LM's overlap_p2p_comm: the steady state's sends run under the next chunk's compute;
    // the warm-up's forward chain and the flush's backward chain (p - 1 sends each) wait on them.
    return 2.0 * static_cast<double>(s.pipeline_parallel - 1) * send;
  }
  return microbatches * static_cast<double>(run.interleave) * 2 * send;
}

// ZeRO-3 (FSDP) with its layer-by-layer overlap, for one step of `microbatches`: per micro-batch
// each layer's 16-bit weights are gathered while the previous layer computes forward, gathered
// again and its gradients reduce-scattered while the next layer computes backward. Exposed: the
// first gather of each pass, the last reduce-scatter, and for the other layers what the
// collectives take beyond a layer's compute (forward_s, backward_s per layer and micro-batch).
double Zero3PrefetchS(double layer_weights, double layer_grads, int64_t layers, int64_t replicas,
                      const Path& path, double forward_s, double backward_s, double microbatches) {
  const double gather = GatherS(layer_weights, replicas, path);
  const double scatter = GatherS(layer_grads, replicas, path);
  const double overlapped = static_cast<double>(std::max<int64_t>(0, layers - 1));
  const double forward = gather + overlapped * std::max(0.0, gather - forward_s);
  const double backward =
      gather + overlapped * std::max(0.0, gather + scatter - backward_s) + scatter;
  return microbatches * (forward + backward);
}

// The gradient reduction of one step over the `replicas` ranks holding the same weights (data-
// and context-parallel; FP32 main gradients unless the run says 16-bit), and for the distributed
// optimizer the all-gather of the 16-bit weights after the step; what backward does not hide.
// ZeRO-3 with prefetch is Zero3PrefetchS (`layer` is one layer's forward and backward compute of
// one micro-batch, with recomputation).
double DataParallelS(const Analysis& a, const RunConfig& run, int64_t stride, int64_t replicas,
                     double params_per_gpu, double microbatches, double layer_forward_s,
                     double layer_backward_s) {
  if (replicas <= 1) return 0;
  const Path path = GroupPath(*a.gpu, run, replicas, stride);
  const int64_t layers = std::max<int64_t>(1, a.spec.num_layers / a.spec.pipeline_parallel);
  const double n = static_cast<double>(layers);
  const double grads = params_per_gpu * (run.gradient_bytes > 0 ? run.gradient_bytes : 4);
  const double weights = params_per_gpu * (run.fp8_param_gather ? 1 : 2);
  if (run.zero_stage >= 3) {
    // FSDP gathers the weights for every micro-batch's forward and backward and reduce-scatters
    // its gradients, layer by layer: overlapped with the layers' compute (prefetch), or not.
    if (run.zero3_prefetch) {
      return Zero3PrefetchS(weights / n, grads / n, layers, replicas, path, layer_forward_s,
                            layer_backward_s, microbatches);
    }
    return microbatches * n *
           (2 * GatherS(weights / n, replicas, path) + GatherS(grads / n, replicas, path));
  }
  double reduce = 0;
  if (run.zero_stage == 2) {
    // Sharded gradients cannot accumulate whole: every micro-batch's backward reduce-scatters
    // them, layer by layer as it finishes (PyTorch FSDP's SHARD_GRAD_OP; DeepSpeed's buckets),
    // and the weights are gathered layer by layer once a step.
    reduce = microbatches * n * GatherS(grads / n, replicas, path) +
             n * GatherS(weights / n, replicas, path);
  } else {
    reduce = run.zero_stage >= 1
                 ? GatherS(grads, replicas, path) + GatherS(weights, replicas, path)
                 : AllReduceOver(grads, replicas, path);
  }
  return reduce * (1 - run.dp_overlap);
}

constexpr char kNicsPerNode[] =
    "a collective's ranks in one node cross the network through as many NICs at once (NCCL's "
    "ring per NIC; NVLink's bandwidth at most), point-to-point sends and all-to-alls through "
    "their own NIC; a ring's latency is NCCL's tuning model (a base, a step per rank, the node "
    "crossings at the network's latency; the faster of its Simple and LL128 protocols)";

// The links collectives run over, and the network's source.
std::string NetworkAssumption(const GpuSpec& gpu, const RunConfig& run) {
  using Network = absl::StatusOr<const NetworkProfile*>;
  const Network network = run.network.empty() ? Network(nullptr) : FindNetwork(run.network);
  if (network.ok() && *network != nullptr) {
    return absl::StrFormat(
        "collectives by the ring model at %.0f%% of NVLink bandwidth inside a node (%s) and of "
        "the network %s across nodes: %s%s; %s",
        100 * kCollectiveEfficiency, gpu.link.source, (*network)->name, (*network)->source,
        (*network)->in_network_reduction
            ? "; all-reduces across nodes reduced in the network (each GPU sends once)"
            : "",
        kNicsPerNode);
  }
  return absl::StrFormat("collectives by the ring model at %.0f%% of %s bandwidth (%s)%s",
                         100 * kCollectiveEfficiency,
                         gpu.link.network_bytes_per_s > 0 ? "NVLink/network" : "link",
                         gpu.link.source,
                         gpu.link.network_bytes_per_s > 0 ? absl::StrCat("; ", kNicsPerNode) : "");
}

// ... and NVLink SHARP's all-reduces inside a node where the switch has it.
std::string LinkAssumption(const GpuSpec& gpu, const RunConfig& run) {
  return absl::StrCat(
      NetworkAssumption(gpu, run),
      gpu.link.nvls_allreduce_bytes_per_s > 0
          ? absl::StrFormat("; all-reduces inside a node by NVLink SHARP where faster (%.0f GB/s, "
                            "NCCL's NVLS on this NVSwitch)",
                            gpu.link.nvls_allreduce_bytes_per_s / 1e9)
          : "");
}

// What runs under compute: tensor-parallel collectives, pipeline sends; and the optimizer.
std::string OverlapAssumption(const ModelSpec& s, const RunConfig& run) {
  return absl::StrCat(
      s.tensor_parallel <= 1 ? "" :
      run.tp_overlap > 0
          ? absl::StrFormat("%.0f%% of the tensor-parallel collectives hidden under their GEMMs "
                            "(--tp-overlap, Megatron-Core's --tp-comm-overlap); ",
                            100 * run.tp_overlap)
          : "tensor-parallel collectives not overlapped with compute (Megatron-LM's default: "
            "--tp-comm-overlap off; --tp-overlap says how much it hides); ",
      s.pipeline_parallel <= 1 ? ""
      : PipelineSendsOverlapped(run)
          ? "pipeline sends overlapped with the next chunk's compute, the warm-up's and the "
            "flush's 2(p-1) exposed (Megatron-LM's overlap_p2p_comm, its default for interleaved "
            "schedules); "
          : run.interleave > 1
              ? "pipeline sends not overlapped (overlap_p2p_comm off); "
              : "pipeline sends not overlapped (1F1B without interleaving cannot); ",
      run.overlap_grad_reduce && run.zero_stage < 3
          ? "the gradient reduction and the weights' all-gather overlapped with the last "
            "micro-batch's backward and the first's forward, up to one micro-batch's compute of "
            "the stage hidden (Megatron-Core's overlap_grad_reduce / overlap_param_gather); "
          : "",
      "the optimizer step is memory-bound (Adam, FP32 master weights and moments)");
}

// A named fused attention kernel: where its rate comes from on this GPU.
std::string AttentionKernelAssumption(const GpuSpec& gpu, const ModelSpec& s) {
  const DType dtype = ComputeDType(s.dtype, kAttnFused);
  const FusedKernelRate fwd = FusedKernelRateOf(gpu, dtype, s.attention, Pass::kForward);
  const FusedKernelRate bwd = FusedKernelRateOf(gpu, dtype, s.attention, Pass::kBackward);
  const char* basis =
      gpu.compute_capability < 90
          ? "FlashAttention-2 up to 73% of peak forward and 63% backward on an A100"
          : gpu.compute_capability < 100
                ? "FlashAttention-2 up to 335 TFLOP/s forward and backward on an H100 without "
                  "Hopper's new instructions"
                : "FlashAttention-2 as on Hopper (no published figure for this architecture)";
  return absl::StrFormat(
      "attention %s, priced from the FlashAttention-2 paper (arXiv:2307.08691): %s%s; %.0f%% "
      "of the calibrated fused kernel's forward rate and %.0f%% of its backward",
      AttentionName(s.attention), basis,
      s.attention == Attention::kFlash2
          ? ""
          : s.attention == Attention::kFlash1
                ? ", FlashAttention 1 half of that (A100)"
                : ", flash-attn 1.0's Triton kernel 1/1.4 of it forward and 1/2 backward (A100)",
      100 * fwd.rate, 100 * bwd.rate);
}

// How MFU and TFLOP/s count attention.
std::string FlopCountAssumption(FlopCount count) {
  return count == FlopCount::kCausal
             ? "MFU and TFLOP/s count the model's FLOPs with attention's s × s products halved "
               "for the causal mask (--flop-count causal: Megatron-Core's count; NeMo's since "
               "2025-08); times are the same either way"
             : "MFU and TFLOP/s count the model's FLOPs with attention's whole s × s product "
               "(--flop-count full, the default: PaLM's 6N + 12·L·h·s, NeMo's before 2025-08, "
               "MosaicML's; Megatron-Core halves it for a causal mask: --flop-count causal); "
               "times are the same either way";
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

// What the figures take for granted, in words.
std::vector<std::string> Assumptions(const Analysis& a, const RunConfig& run,
                                     const StepBreakdown& r) {
  const ModelSpec& s = a.spec;
  const GpuSpec& gpu = *a.gpu;
  const double p = static_cast<double>(s.pipeline_parallel);
  const double v = static_cast<double>(run.interleave);
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  std::vector<std::string> out;
  const PipelineSplit split = SplitLayers(s.num_layers, s.pipeline_parallel);
  out.push_back(absl::StrFormat(
      "1F1B pipeline%s: bubble (p-1)/v = %g of a stage's micro-batch time; the last stage (its "
      "layers, the logits and the loss) is the slowest%s",
      v > 1 ? " (interleaved)" : "", (p - 1) / v,
      split.even ? ""
                 : absl::StrFormat(" or a middle one; layers per stage %d first, %d middle, %d "
                                   "last (Megatron's uneven split)",
                                   split.first, split.middle, split.last)));
  out.push_back(LinkAssumption(gpu, run));
  out.push_back(OverlapAssumption(s, run));
  if (s.dtype == DType::kFp8E4M3) {
    out.push_back(absl::StrCat(
        "FP8 as Transformer Engine's default recipe: the linear layers in FP8 (E4M3), attention's "
        "core and the output layer in BF16; its casts priced as memory traffic (the projection's "
        "input cast alone, every input transposed for wgrad, every output gradient cast and "
        "transposed; norms and activations write FP8 themselves, amax inside the casts), the "
        "weights' casts (once per step) not",
        run.fp8_param_gather ? "; the weights kept and all-gathered in FP8, 1 byte each "
                               "(fp8_param_gather, Megatron-Core's --fp8-param-gather)"
                             : "; the weights kept and all-gathered in BF16 (fp8_param_gather "
                               "gathers them in FP8)"));
  }
  if (run.zero_stage >= 3) {
    out.push_back(
        run.zero3_prefetch
            ? "ZeRO-3 (FSDP) with ideal prefetch (zero3_prefetch): each layer's weights "
              "gathered under the previous layer's compute, its gradients reduce-scattered under "
              "the next layer's backward; exposed are the first gather, the last reduce-scatter "
              "and what exceeds a layer's compute"
            : "ZeRO-3 (FSDP): every layer's gathers (forward and backward) and reduce-scatter "
              "exposed, per micro-batch, as the published FSDP runs measure with prefetch on "
              "(their collectives share the SMs and memory with the compute); zero3_prefetch "
              "prices them hidden");
  }
  if (s.expert_parallel > 1) out.push_back(ExpertParallelAssumption(s, run, r));
  if (s.context_parallel > 1) {
    out.push_back(absl::StrFormat(
        "context parallelism over %d ranks: load-balanced ring attention (2 chunks per rank), "
        "K/V sends overlapped with the attention kernels; gradients reduce over data × context "
        "ranks (%d)",
        s.context_parallel, r.data_parallel * s.context_parallel));
  }
  if (run.offload_activations) {
    out.push_back(absl::StrFormat(
        "activation offload: %.2f GiB per layer and micro-batch to the host and back over PCIe "
        "(%.0f GB/s at %.0f%%), overlapped with the layer's forward and backward; %.1f GiB of "
        "host memory per GPU",
        r.memory.stored_bytes_per_layer / kGiB, gpu.link.host_bytes_per_s / 1e9,
        100 * kHostCopyEfficiency, r.memory.offloaded_bytes / kGiB));
  }
  out.push_back(FlopCountAssumption(run.flop_count));
  if (IsNamedFusedKernel(s.attention)) out.push_back(AttentionKernelAssumption(gpu, s));
  if (run.recompute == Recompute::kSelective && s.attention != Attention::kUnfused) {
    out.push_back(
        "selective recomputation adds nothing with fused attention: its backward already "
        "recomputes the attention scores");
  }
  return out;
}

// The gradient reduction and the optimizer step of one step (r.dp_comm_s, r.optimizer_s):
// parameters per GPU, the routed experts split over e ranks (and whole under tensor parallelism
// with expert_tensor_parallel 1), whose gradients reduce over the ranks holding the same experts;
// the rest over d·c.
// With overlap_grad_reduce, the reduction hides under one micro-batch's compute of the stage
// (`stage_compute`: its layers' forward and backward, with recomputation).
void ReduceAndUpdate(const Analysis& a, const RunConfig& run, double m, double forward_layer,
                     double layer_backward, double stage_compute, StepBreakdown& r) {
  const ModelSpec& s = a.spec;
  const GpuSpec& gpu = *a.gpu;
  const double model_parallel = static_cast<double>(s.tensor_parallel * s.pipeline_parallel);
  const double e = static_cast<double>(s.expert_parallel);
  const double whole = static_cast<double>(s.tensor_parallel / ExpertTensorParallel(s));
  const double expert_per_gpu =
      static_cast<double>(a.params.expert_params) / model_parallel * whole / e;
  const double dense_per_gpu =
      static_cast<double>(a.params.total_params - a.params.expert_params) / model_parallel;
  const int64_t replicas = r.data_parallel * s.context_parallel;
  const int64_t expert_replicas =
      std::max<int64_t>(1, ExpertPool(s, r.data_parallel) / s.expert_parallel);
  if ((s.expert_parallel <= 1 && whole == 1) || run.zero_stage >= 3) {
    // ZeRO-3's layer-by-layer overlap is priced over all of a GPU's parameters at once.
    r.dp_comm_s = DataParallelS(a, run, s.tensor_parallel, replicas,
                                dense_per_gpu + expert_per_gpu, m, forward_layer, layer_backward);
  } else {
    // The ranks holding the same experts are e expert-parallel groups of stride et apart.
    r.dp_comm_s = DataParallelS(a, run, s.tensor_parallel, replicas, dense_per_gpu, m,
                                forward_layer, layer_backward) +
                  DataParallelS(a, run, ExpertTensorParallel(s) * s.expert_parallel,
                                expert_replicas, expert_per_gpu, m, forward_layer, layer_backward);
  }
  if (run.overlap_grad_reduce && run.zero_stage < 3) {
    r.dp_comm_s = std::max(0.0, r.dp_comm_s - stage_compute);
  }
  const double optimizer_params =
      run.zero_stage >= 1 ? dense_per_gpu / static_cast<double>(replicas) +
                                expert_per_gpu / static_cast<double>(expert_replicas)
                          : dense_per_gpu + expert_per_gpu;
  r.optimizer_s = optimizer_params * kAdamBytesPerParam /
                  (gpu.memory_bandwidth_bytes_per_s * gpu.Model(s.dtype).memory_efficiency);
}

// The step's layout, totals, assumptions and error band, once its components are priced.
void FinishStep(const Analysis& a, const RunConfig& run, double m, StepBreakdown& r) {
  const ModelSpec& s = a.spec;
  r.sequence_parallel = run.sequence_parallel;
  r.recompute = run.recompute;
  r.zero_stage = run.zero_stage;
  r.offload_activations = run.offload_activations;
  r.interleave = std::max<int64_t>(run.interleave, 1);
  r.micro_batch_size = s.micro_batch_size;
  r.step_s = r.compute_s + r.recompute_s + r.tp_comm_s + r.ep_comm_s + r.cp_comm_s + r.offload_s +
             r.pp_bubble_s + r.pp_comm_s + r.dp_comm_s + r.optimizer_s;
  r.flop_count = run.flop_count;
  r.model_flops_per_step =
      a.flops.ModelFlops(run.flop_count) * m * static_cast<double>(r.data_parallel);
  r.tflops_per_gpu = r.model_flops_per_step / (r.step_s * static_cast<double>(r.gpus)) / 1e12;
  r.mfu = r.tflops_per_gpu * 1e12 / a.gpu->PeakFlops(s.dtype);
  r.tokens_per_s_per_gpu =
      static_cast<double>(r.global_batch * s.seq_length) / r.step_s / static_cast<double>(r.gpus);
  r.assumptions = Assumptions(a, run, r);
  const PlannerBand& band = PlannerBandFor(s);
  r.band_p10 = band.p10;
  r.band_p90 = band.p90;
  r.band_kind = band.kind;
  r.band_runs = band.runs;
}

}  // namespace

absl::StatusOr<EpDispatcher> ParseEpDispatcher(absl::string_view name) {
  if (name.empty() || name == "alltoall") return EpDispatcher::kAllToAll;
  if (name == "flex" || name == "deepep" || name == "hybridep") return EpDispatcher::kFlex;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown value \"", name,
      "\"; allowed: alltoall (the default), flex (also deepep, hybridep: its backends)"));
}

absl::StatusOr<StepBreakdown> PlanStep(const Analysis& a, const RunConfig& run) {
  if (run.plan) return PlanLayout(a, run);
  const ModelSpec& s = a.spec;
  const GpuSpec& gpu = *a.gpu;
  if (s.workload != Workload::kTraining) {
    return absl::InvalidArgumentError("run: a step breakdown is for training workloads");
  }
  StepBreakdown r;
  r.tensor_parallel = s.tensor_parallel;
  r.pipeline_parallel = s.pipeline_parallel;
  r.context_parallel = s.context_parallel;
  r.expert_parallel = s.expert_parallel;
  const int64_t tp = s.tensor_parallel * s.pipeline_parallel * s.context_parallel;
  if (absl::Status st = CheckRun(s, run, tp, &r.data_parallel, &r.microbatches); !st.ok()) {
    return st;
  }
  r.gpus = tp * r.data_parallel;
  r.nodes = (r.gpus + gpu.link.domain_gpus - 1) / gpu.link.domain_gpus;
  r.global_batch = r.microbatches * s.micro_batch_size * r.data_parallel;
  r.memory = EstimateMemory(s, gpu, LayoutOf(run, r));
  const double m = static_cast<double>(r.microbatches);
  const double p = static_cast<double>(s.pipeline_parallel);
  const double layers = static_cast<double>(s.num_layers);

  // One micro-batch through the slowest stage: the last (its layers, the logits and the loss),
  // or with uneven stages a middle one if its extra layers outweigh the head.
  const MicroBatch mb = SplitMicroBatch(a);
  const PipelineSplit split = SplitLayers(s.num_layers, s.pipeline_parallel);
  const double per_layer = mb.layers_s / layers;
  const bool last_slowest = static_cast<double>(split.last) * per_layer + mb.head_s >=
                            static_cast<double>(split.middle) * per_layer;
  const double stage_layers = static_cast<double>(last_slowest ? split.last : split.middle);
  const double compute = stage_layers * per_layer + (last_slowest ? mb.head_s : 0);
  const bool flash = s.attention != Attention::kUnfused;
  const double recompute = run.recompute == Recompute::kFull
                               ? mb.layers_forward_s / layers * stage_layers
                           : run.recompute == Recompute::kSelective && !flash
                               ? mb.attention_forward_s / layers * stage_layers
                               : 0;
  const double stage_moe_layers =
      static_cast<double>(Derive(s).moe_layers) / layers * stage_layers;
  // Whole experts under tensor parallelism: a MoE layer's MLP has no tensor-parallel collectives
  // (the tokens go to their experts by the all-to-all instead), half of a layer's.
  const double tp_layers = stage_layers - (ExpertTensorParallel(s) < s.tensor_parallel
                                               ? stage_moe_layers / 2
                                               : 0);
  const double tp_comm = TensorParallelS(a, run, tp_layers) * (1 - run.tp_overlap);
  const double cp_comm = ContextParallelS(a, run, stage_layers, mb.attention_s / layers);
  const double forward_layer = mb.layers_forward_s / layers;
  const double offload =
      OffloadS(a, run, stage_layers, r.memory.stored_bytes_per_layer, forward_layer,
               mb.layers_s / layers - forward_layer);
  const double ep_comm = ExpertParallelS(a, run, stage_moe_layers);
  const double stage = compute + recompute + tp_comm + ep_comm + cp_comm + offload;
  r.compute_s = m * compute;
  r.ep_comm_s = m * ep_comm;
  if (run.ep_overlap) {
    // Paired micro-batches hide their all-to-alls under the other's MoE layers; one micro-batch's
    // worth (the unpaired first forward and last backward) stays.
    const double hidden = std::max(0.0, ep_comm - stage_moe_layers * per_layer);
    r.ep_comm_s = ep_comm + (m - 1) * hidden;
  }
  r.recompute_s = m * recompute;
  r.tp_comm_s = m * tp_comm;
  r.cp_comm_s = m * cp_comm;
  r.offload_s = m * offload;
  r.pp_bubble_s = (p - 1) / static_cast<double>(run.interleave) * stage;
  r.pp_comm_s = PipelineSendsS(a, run, m);

  const double layer_backward = mb.layers_s / layers - forward_layer + recompute / stage_layers;
  ReduceAndUpdate(a, run, m, forward_layer, layer_backward, compute + recompute, r);
  FinishStep(a, run, m, r);
  return r;
}

const std::vector<PlannerBand>& PlannerBands() {
  // Measured step / predicted - 1, p10 and p90, over the published runs of each kind (472 A100
  // figures beside the repository, MosaicML's 231, NVIDIA's 53, NeMo AutoModel's 7,
  // Megatron-LM's 9 and Meta's 2 (Llama 3 405B) H100 figures in bench/data; one figure per run):
  // bench/results/planner_bands.txt.
  static const std::vector<PlannerBand> kBands = {
      {kBandDense, -0.067, 0.168, 282},
      {kBandExpertParallel, -0.070, 0.988, 25},
      {kBandContextParallel, 0.054, 0.424, 14},
  };
  return kBands;
}

const PlannerBand& PlannerBandOf(const std::string& kind) {
  for (const PlannerBand& b : PlannerBands()) {
    if (kind == b.kind) return b;
  }
  return PlannerBands().front();
}

const PlannerBand& PlannerBandFor(const ModelSpec& s) {
  if (s.expert_parallel > 1) return PlannerBandOf(kBandExpertParallel);
  if (s.context_parallel > 1) return PlannerBandOf(kBandContextParallel);
  return PlannerBandOf(kBandDense);
}

std::vector<int64_t> CandidateInterleaves(const ModelSpec& s, const RunConfig& run) {
  std::vector<int64_t> out = {std::max<int64_t>(run.interleave, 1)};
  if (run.interleave > 1 || s.pipeline_parallel <= 1) return out;
  const PipelineSplit split = SplitLayers(s.num_layers, s.pipeline_parallel);
  for (int64_t v = 2; v <= std::min<int64_t>(split.middle, kMaxPlannedInterleave); ++v) {
    if (split.middle % v == 0) out.push_back(v);
  }
  return out;
}

std::vector<RunConfig> CandidateLayouts(const ModelSpec& s, const RunConfig& run) {
  std::vector<RunConfig> out;
  for (int64_t v : CandidateInterleaves(s, run)) {
    for (bool sp : {false, true}) {
      for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
        for (int zero = 0; zero <= 3; ++zero) {
          for (bool offload : {false, true}) {
            RunConfig c = run;
            c.plan = false;
            c.sequence_parallel = sp;
            c.recompute = rc;
            c.zero_stage = zero;
            c.offload_activations = offload;
            c.interleave = v;
            // FP8 weights are gathered by the distributed optimizer or FSDP: none to gather at 0.
            c.fp8_param_gather = run.fp8_param_gather && zero >= 1;
            out.push_back(c);
          }
        }
      }
    }
  }
  return out;
}

absl::StatusOr<StepBreakdown> PlanLayout(const Analysis& a, const RunConfig& run) {
  std::optional<StepBreakdown> best, smallest;
  int fit = 0, tried = 0;
  for (const RunConfig& c : CandidateLayouts(a.spec, run)) {
    absl::StatusOr<StepBreakdown> b = PlanStep(a, c);
    if (!b.ok()) return b.status();
    // Nothing to shard over.
    if (c.zero_stage > 0 && b->data_parallel * b->context_parallel == 1) continue;
    // Megatron-Core's interleaved schedule runs whole rounds of p micro-batches.
    if (c.interleave > 1 && b->microbatches % b->pipeline_parallel != 0) continue;
    ++tried;
    if (!smallest || b->memory.total_bytes < smallest->memory.total_bytes) smallest = *b;
    if (!b->memory.fits) continue;
    ++fit;
    if (!best || b->step_s < best->step_s) best = *b;
  }
  StepBreakdown out = best ? *best : *smallest;
  const std::string layout =
      absl::StrCat(out.sequence_parallel ? "sequence parallelism, " : "no sequence parallelism, ",
                   out.recompute == Recompute::kNone ? "no" : RecomputeName(out.recompute),
                   " recomputation, ZeRO stage ", out.zero_stage,
                   out.offload_activations ? ", activations offloaded" : "",
                   out.interleave > 1
                       ? absl::StrCat(", ", out.interleave, " interleaved stages per rank")
                       : "");
  out.assumptions.insert(
      out.assumptions.begin(),
      best ? absl::StrCat("planned: ", layout, ", the fastest of the ", fit, " layouts of ", tried,
                          " that fit in memory")
           : absl::StrCat("planned: none of the ", tried,
                          " layouts fits in memory; the one needing the least is ", layout,
                          ": more GPUs (pipeline or tensor parallelism) are needed"));
  return out;
}

PlannedMicroBatch PlanMicroBatch(const ModelSpec& spec, const GpuSpec& gpu, const RunConfig& run,
                                 PredictionMemo* memo) {
  if (!run.plan || spec.micro_batch_size != 0 || run.global_batch <= 0 ||
      spec.workload != Workload::kTraining) {
    return {};
  }
  std::optional<StepBreakdown> best, smallest;
  std::vector<std::string> weighed;
  for (const int64_t b : kPlannedMicroBatches) {
    ModelSpec s = spec;
    s.micro_batch_size = b;
    absl::StatusOr<Analysis> a = Analyze(s, gpu, memo);
    if (!a.ok()) continue;
    // A micro-batch that does not divide the sequences per data-parallel rank is refused here
    // (run.global_batch); so is every one where the run itself is wrong, which the caller's own
    // step then reports.
    absl::StatusOr<StepBreakdown> step = PlanLayout(*a, run);
    if (!step.ok()) continue;
    weighed.push_back(absl::StrCat(b));
    if (b == kDefaultMicroBatch) smallest = *step;
    if (!step->memory.fits) continue;
    if (!best || step->step_s < best->step_s) best = *step;
  }
  if (weighed.empty()) return {};
  const int64_t chosen = best ? best->micro_batch_size : kDefaultMicroBatch;
  return {chosen,
          absl::StrCat("planned: micro-batch ", chosen, " of ", absl::StrJoin(weighed, ", "),
                       best ? " (those dividing the sequences per data-parallel rank), the "
                              "fastest whose layout fits"
                            : " (those dividing the sequences per data-parallel rank); none fits, "
                              "so the smallest"),
          best ? best : smallest};
}

}  // namespace wavecrest
