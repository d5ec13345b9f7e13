// Analyses and training runs between their protos and the core: the Analyze response, a run's
// layout (validated) and its step's breakdown.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/memory.h"
#include "core/moe_routing.h"
#include "core/step_assumptions.h"
#include "service/convert.h"
#include "service/errors.h"

namespace wavecrest {
namespace {

void AlignmentToProto(const DimAlignment& x, v1::DimAlignment* d) {
  d->set_largest_pow2(x.pow2);
  d->set_meets_rule(x.meets_rule);
}

// One GEMM of the analysis: its shape, share, alignment, prediction and penalties.
void GemmAnalysisToProto(const GemmAnalysis& g, v1::GemmAnalysis* out) {
  *out->mutable_gemm() = ToProto(g.gemm);
  out->set_step_flop_share(g.step_flop_share);
  AlignmentToProto(g.m_align, out->mutable_m_alignment());
  AlignmentToProto(g.n_align, out->mutable_n_alignment());
  AlignmentToProto(g.k_align, out->mutable_k_alignment());
  out->set_time_s(g.prediction.time_s);
  out->set_tflops(g.prediction.tflops);
  out->set_bound(ToProto(g.prediction.bound));
  *out->mutable_tile() = ToProto(g.prediction);
  out->set_error_band_p10(g.prediction.band_p10);
  out->set_error_band_p90(g.prediction.band_p90);
  for (const std::string& why : g.prediction.penalties) out->add_penalties(why);
}

// The step's provenance. Its band: the GEMMs' bands weighted by their share of the step (their
// errors come from one model, so they are taken as moving together: a conservative band).
v1::Provenance StepProvenance(const Analysis& a) {
  v1::Provenance p = PredictedProvenance(*a.gpu, a.spec.dtype, 0);
  double p10 = 0, p90 = 0;
  for (const GemmAnalysis& g : a.gemms) {
    const double w = g.prediction.time_s * static_cast<double>(g.gemm.count) / a.step_time_s;
    p10 += w * g.prediction.band_p10;
    p90 += w * g.prediction.band_p90;
  }
  p.set_error_band_p10(p10);
  p.set_error_band_p90(p90);
  return p;
}

void RecomputeFromProto(const v1::RunConfig& r, absl::string_view prefix, RunConfig& c,
                        std::vector<FieldViolation>& v) {
  switch (r.recompute()) {
    case v1::RECOMPUTE_UNSPECIFIED:
    case v1::RECOMPUTE_NONE:
      c.recompute = Recompute::kNone;
      break;
    case v1::RECOMPUTE_SELECTIVE:
      c.recompute = Recompute::kSelective;
      break;
    case v1::RECOMPUTE_FULL:
      c.recompute = Recompute::kFull;
      break;
    case v1::RECOMPUTE_OP:
      c.recompute = Recompute::kOp;
      break;
    default:
      v.push_back({absl::StrCat(prefix, "recompute"),
                   absl::StrCat("unknown value ", r.recompute(),
                                "; allowed: RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL, RECOMPUTE_OP")});
  }
}

// The counts, tokens, ZeRO stage, gradient bytes and overlaps, each within its range.
void CheckRunRanges(const v1::RunConfig& r, absl::string_view prefix,
                    std::vector<FieldViolation>& v) {
  const std::pair<const char*, int64_t> counts[] = {{"num_gpus", r.num_gpus()},
                                                    {"global_batch", r.global_batch()},
                                                    {"interleave", r.interleave()}};
  for (const auto& [name, value] : counts) {
    if (value < 0 || value > (int64_t{1} << 24)) {
      v.push_back({absl::StrCat(prefix, name),
                   absl::StrCat("must be in [0, ", int64_t{1} << 24, "]; got ", value)});
    }
  }
  // Up to 1e15 tokens: a thousand times the largest published pre-training runs.
  if (!(r.train_tokens() >= 0 && r.train_tokens() <= 1e15)) {
    v.push_back({absl::StrCat(prefix, "train_tokens"),
                 absl::StrCat("must be in [0, 1e15]; got ", r.train_tokens())});
  }
  if (r.zero_stage() < 0 || r.zero_stage() > 3) {
    v.push_back({absl::StrCat(prefix, "zero_stage"),
                 absl::StrCat("must be 0, 1, 2 or 3; got ", r.zero_stage())});
  }
  if (r.gradient_bytes() != 0 && r.gradient_bytes() != 2 && r.gradient_bytes() != 4) {
    v.push_back({absl::StrCat(prefix, "gradient_bytes"),
                 absl::StrCat("must be 0 (= 4), 2 or 4; got ", r.gradient_bytes())});
  }
  for (const auto& [name, value] : {std::pair<const char*, double>{"dp_overlap", r.dp_overlap()},
                                     {"tp_overlap", r.tp_overlap()}}) {
    if (!(value >= 0 && value <= 1)) {
      v.push_back({absl::StrCat(prefix, name), absl::StrCat("must be in [0, 1]; got ", value)});
    }
  }
}

// A rule the model breaks, and what it hurts.
void RuleToProto(const RuleViolation& v, v1::RuleViolation* out) {
  out->set_priced(v.priced);
  out->set_id(v.id);
  out->set_paper_rule(v.paper_rule);
  out->set_message(v.message);
  for (const auto& h : v.hurts) out->add_hurts(h);
}

}  // namespace

v1::AnalyzeResponse ToProto(const Analysis& a) {
  v1::AnalyzeResponse r;
  *r.mutable_model() = ToProto(a.spec);
  r.set_gpu(a.gpu->name);
  for (const GemmAnalysis& g : a.gemms) GemmAnalysisToProto(g, r.add_gemms());
  *r.mutable_params() = ToProto(a.params);
  r.set_step_flops(a.flops.step_flops);
  r.set_model_flops(a.flops.model_flops);
  r.set_tokens_per_step(a.flops.tokens_per_step);
  r.set_gemm_time_s(a.gemm_time_s);
  r.set_elementwise_time_s(a.elementwise.time_s);
  r.set_step_time_s(a.step_time_s);
  r.set_mfu(a.mfu);
  r.set_tokens_per_second_per_gpu(a.tokens_per_s_per_gpu);
  if (a.step_time_s > 0) {
    r.set_memory_bandwidth_utilization(DecodeBytesPerStep(a.spec) /
                                       (a.step_time_s * a.gpu->memory_bandwidth_bytes_per_s));
  }
  *r.mutable_memory() = ToProto(EstimateMemory(a.spec, *a.gpu));
  if (std::string routing = ExpertRoutingAssumption(a.spec); !routing.empty()) {
    r.add_assumptions(std::move(routing));
  }
  if (IsHybrid(a.spec)) r.add_assumptions(HybridAssumption(a.spec));
  for (const RuleViolation& v : a.rules) RuleToProto(v, r.add_rules());
  *r.mutable_provenance() = StepProvenance(a);
  return r;
}

absl::StatusOr<RunConfig> FromProto(const v1::RunConfig& r, absl::string_view prefix) {
  std::vector<FieldViolation> v;
  RunConfig c;
  c.num_gpus = r.num_gpus();
  c.global_batch = r.global_batch();
  c.interleave = r.interleave() == 0 ? 1 : r.interleave();
  c.sequence_parallel = r.sequence_parallel();
  c.zero_stage = r.zero_stage();
  c.plan = r.plan();
  c.keep_degrees = r.keep_degrees();
  c.train_tokens = r.train_tokens();
  c.eager = r.eager();
  c.rope_unfused = r.rope_unfused();
  c.moe_unfused_ops = r.moe_unfused_ops();
  c.recompute_moe = r.recompute_moe();
  c.recompute_mla_up_proj = r.recompute_mla_up_proj();
  c.mtp_layers = r.mtp_layers();
  c.fsdp_shard = r.fsdp_shard();
  c.dp_overlap = r.dp_overlap();
  c.tp_overlap = r.tp_overlap();
  c.zero3_prefetch = r.zero3_prefetch() && !r.no_zero3_prefetch();
  c.reshard_after_forward = !r.no_reshard_after_forward();
  c.pp_overlap = !r.no_pp_overlap();
  c.overlap_grad_reduce = r.overlap_grad_reduce();
  c.ep_overlap = r.ep_overlap();
  c.fp8_param_gather = r.fp8_param_gather();
  if (r.has_moe_host_s()) c.moe_host_s = r.moe_host_s();
  if (r.has_sustained_gemm_stretch()) c.sustained_gemm_stretch = r.sustained_gemm_stretch();
  c.network = r.network();
  if (absl::StatusOr<EpDispatcher> d = ParseEpDispatcher(r.ep_dispatcher()); d.ok()) {
    c.ep_dispatcher = *d;
  } else {
    v.push_back({absl::StrCat(prefix, "ep_dispatcher"), std::string(d.status().message())});
  }
  if (absl::StatusOr<Fp8Recipe> f = ParseFp8Recipe(r.fp8_recipe()); f.ok()) {
    c.fp8_recipe = *f;
  } else {
    v.push_back({absl::StrCat(prefix, "fp8_recipe"), std::string(f.status().message())});
  }
  if (absl::StatusOr<LossKernel> l = ParseLossKernel(r.loss()); l.ok()) {
    c.loss = *l;
  } else {
    v.push_back({absl::StrCat(prefix, "loss"), std::string(l.status().message())});
  }
  if (absl::StatusOr<CpRing> ring = ParseCpRing(r.cp_ring()); ring.ok()) {
    c.cp_ring = *ring;
  } else {
    v.push_back({absl::StrCat(prefix, "cp_ring"), std::string(ring.status().message())});
  }
  c.offload_activations = r.offload_activations();
  c.gradient_bytes = r.gradient_bytes();
  RecomputeFromProto(r, prefix, c, v);
  CheckRunRanges(r, prefix, v);
  if (!v.empty()) return InvalidArgumentWithViolations(v);
  return c;
}

v1::StepBreakdown ToProto(const StepBreakdown& b) {
  v1::StepBreakdown p;
  p.set_gpus(b.gpus);
  p.set_nodes(b.nodes);
  p.set_tensor_parallel(b.tensor_parallel);
  p.set_pipeline_parallel(b.pipeline_parallel);
  p.set_data_parallel(b.data_parallel);
  p.set_microbatches(b.microbatches);
  p.set_global_batch(b.global_batch);
  p.set_compute_s(b.compute_s);
  p.set_recompute_s(b.recompute_s);
  p.set_tp_comm_s(b.tp_comm_s);
  p.set_pp_bubble_s(b.pp_bubble_s);
  p.set_pp_comm_s(b.pp_comm_s);
  p.set_dp_comm_s(b.dp_comm_s);
  p.set_optimizer_s(b.optimizer_s);
  p.set_step_time_s(b.step_s);
  p.set_mfu(b.mfu);
  p.set_mfu_other_count(b.mfu_other_count);
  p.set_tokens_per_step(b.tokens_per_step);
  p.set_tflops_per_gpu(b.tflops_per_gpu);
  p.set_tokens_per_second_per_gpu(b.tokens_per_s_per_gpu);
  for (const std::string& a : b.assumptions) p.add_assumptions(a);
  *p.mutable_memory() = ToProto(b.memory);
  p.set_sequence_parallel(b.sequence_parallel);
  p.set_recompute(b.recompute == Recompute::kFull        ? v1::RECOMPUTE_FULL
                  : b.recompute == Recompute::kSelective ? v1::RECOMPUTE_SELECTIVE
                  : b.recompute == Recompute::kOp        ? v1::RECOMPUTE_OP
                                                         : v1::RECOMPUTE_NONE);
  p.set_zero_stage(b.zero_stage);
  p.set_offload_activations(b.offload_activations);
  p.set_recompute_mla_up_proj(b.recompute_mla_up_proj);
  p.set_interleave(b.interleave);
  p.set_micro_batch_size(b.micro_batch_size);
  p.set_cp_comm_s(b.cp_comm_s);
  p.set_ep_comm_s(b.ep_comm_s);
  p.set_moe_host_s(b.moe_host_s);
  p.set_offload_s(b.offload_s);
  p.set_context_parallel(b.context_parallel);
  p.set_expert_parallel(b.expert_parallel);
  p.set_error_band_p10(b.band_p10);
  p.set_error_band_p90(b.band_p90);
  p.set_error_band_kind(b.band_kind);
  p.set_error_band_runs(b.band_runs);
  for (const std::string& g : b.band_gpus) p.add_error_band_gpus(g);
  p.set_error_band_gpu_checked(b.band_gpu_checked);
  p.set_train_tokens(b.train_tokens);
  p.set_time_to_train_s(b.time_to_train_s);
  p.set_gpu_hours(b.gpu_hours);
  return p;
}

}  // namespace wavecrest
