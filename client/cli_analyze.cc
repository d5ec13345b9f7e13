// `wavecrest analyze`: the request from the model, its overrides and the run's flags, answered
// offline or through --server.
#include "absl/strings/str_cat.h"
#include "client/cli_commands.h"
#include "client/format.h"
#include "core/expert_parallel.h"
#include "core/memory.h"
#include "core/network.h"
#include "core/parallelism.h"
#include "core/status_macros.h"
#include "service/advisor_logic.h"
#include "service/errors.h"

namespace wavecrest {
namespace cli {
namespace {

// Any of the training run's flags given: the answer is the run's step.
bool AnyRunFlag(const CliOptions& o) {
  return o.gpus != 0 || o.global_batch != 0 || o.interleave != 0 || o.sequence_parallel ||
         !o.recompute.empty() || o.dp_overlap != 0 || o.tp_overlap != 0 || o.no_pp_overlap ||
         o.overlap_grad_reduce || o.zero3_prefetch || o.no_reshard_after_forward || o.ep_overlap ||
         !o.network.empty() || !o.ep_dispatcher.empty() || o.fp8_param_gather ||
         !o.fp8_recipe.empty() || !o.loss.empty() || !o.cp_ring.empty() ||
         o.moe_host_ms >= 0 || o.sustained_stretch != 0 || o.zero_stage != 0 || o.plan ||
         o.keep_degrees || o.tokens != 0 ||
         o.offload_activations || o.gradient_bytes != 0 || o.eager || o.rope_unfused ||
         o.moe_unfused_ops ||
         o.recompute_moe || o.recompute_mla_up_proj ||
         o.mtp_layers != 0 || o.fsdp_shard != 0;
}

// A choice flag's value the service would refuse, refused here naming the flag (as --recompute's).
template <typename T>
absl::Status CheckChoice(absl::string_view flag, const std::string& value,
                         absl::StatusOr<T> (*parse)(absl::string_view)) {
  if (value.empty()) return absl::OkStatus();
  const absl::StatusOr<T> parsed = parse(value);
  return parsed.ok() ? absl::OkStatus() : FieldError(flag, parsed.status().message());
}

// The run's choice flags checked before the request is made (exit 2, the flag named).
absl::Status CheckRunChoices(const CliOptions& o) {
  RETURN_IF_ERROR(CheckChoice("--network", o.network, &FindNetwork));
  RETURN_IF_ERROR(CheckChoice("--ep-dispatcher", o.ep_dispatcher, &ParseEpDispatcher));
  RETURN_IF_ERROR(CheckChoice("--fp8-recipe", o.fp8_recipe, &ParseFp8Recipe));
  RETURN_IF_ERROR(CheckChoice("--loss", o.loss, &ParseLossKernel));
  return CheckChoice("--cp-ring", o.cp_ring, &ParseCpRing);
}

// The run's layout from the flags; INVALID_ARGUMENT naming the flag for an unknown choice.
absl::Status RunConfigFromFlags(const CliOptions& o, v1::RunConfig* run) {
  RETURN_IF_ERROR(CheckRunChoices(o));
  run->set_num_gpus(o.gpus);
  run->set_global_batch(o.global_batch);
  run->set_interleave(o.interleave);
  run->set_sequence_parallel(o.sequence_parallel);
  run->set_dp_overlap(o.dp_overlap);
  run->set_tp_overlap(o.tp_overlap);
  run->set_no_pp_overlap(o.no_pp_overlap);
  run->set_overlap_grad_reduce(o.overlap_grad_reduce);
  run->set_zero3_prefetch(o.zero3_prefetch);
  run->set_eager(o.eager);
  run->set_rope_unfused(o.rope_unfused);
  run->set_moe_unfused_ops(o.moe_unfused_ops);
  run->set_recompute_moe(o.recompute_moe);
  run->set_recompute_mla_up_proj(o.recompute_mla_up_proj);
  run->set_mtp_layers(o.mtp_layers);
  run->set_fsdp_shard(o.fsdp_shard);
  run->set_no_reshard_after_forward(o.no_reshard_after_forward);
  run->set_ep_overlap(o.ep_overlap);
  run->set_network(o.network);
  run->set_ep_dispatcher(o.ep_dispatcher);
  run->set_fp8_param_gather(o.fp8_param_gather);
  run->set_fp8_recipe(o.fp8_recipe);
  run->set_loss(o.loss);
  run->set_cp_ring(o.cp_ring);
  if (o.moe_host_ms >= 0) run->set_moe_host_s(o.moe_host_ms / 1000);
  if (o.sustained_stretch != 0) run->set_sustained_gemm_stretch(o.sustained_stretch);
  run->set_zero_stage(o.zero_stage);
  run->set_plan(o.plan);
  run->set_keep_degrees(o.keep_degrees);
  run->set_train_tokens(o.tokens);
  run->set_offload_activations(o.offload_activations);
  run->set_gradient_bytes(o.gradient_bytes);
  if (o.recompute == "none") {
    run->set_recompute(v1::RECOMPUTE_NONE);
  } else if (o.recompute == "selective") {
    run->set_recompute(v1::RECOMPUTE_SELECTIVE);
  } else if (o.recompute == "full") {
    run->set_recompute(v1::RECOMPUTE_FULL);
  } else if (o.recompute == "op") {
    run->set_recompute(v1::RECOMPUTE_OP);
  } else if (!o.recompute.empty()) {
    return FieldError("--recompute",
                      absl::StrCat("\"", o.recompute, "\" is not one of: none, selective, full, op"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::AnalyzeResponse> Analyze(const CliOptions& o) {
  v1::AnalyzeRequest request;
  ASSIGN_OR_RETURN(*request.mutable_model(), LoadSpecWithOverrides(o));
  request.set_gpu(o.gpu);
  if (!o.flop_count.empty() && o.flop_count != "full" && o.flop_count != "causal") {
    return FieldError("--flop-count",
                      absl::StrCat("\"", o.flop_count, "\" is not one of: full, causal"));
  }
  request.set_flop_count(o.flop_count);
  if (AnyRunFlag(o)) RETURN_IF_ERROR(RunConfigFromFlags(o, request.mutable_run()));
  if (o.server.empty()) return HandleAnalyze(request);
  return ClientFor(o).Analyze(request);
}

}  // namespace

int DoAnalyze(const CliOptions& o, std::ostream& out, std::ostream& err) {
  absl::StatusOr<v1::AnalyzeResponse> r = Analyze(o);
  if (!r.ok()) return Fail(err, r.status());
  out << (o.format == "json" ? FormatJson(*r) + "\n" : FormatAnalysis(*r));
  return 0;
}

}  // namespace cli
}  // namespace wavecrest
