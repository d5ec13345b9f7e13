#include "client/cli.h"

#include "absl/strings/str_cat.h"
#include "client/format.h"
#include "core/gemm.h"
#include "core/model_spec.h"
#include "core/status_macros.h"
#include "server/advisor_logic.h"
#include "server/convert.h"
#include "server/errors.h"
#include "server/spec_io.h"

namespace wavecrest {

int ExitCodeFor(const absl::Status& status) {
  return status.ok() ? 0 : 10 + static_cast<int>(status.code());
}

absl::StatusOr<v1::ModelSpec> LoadSpecWithOverrides(const CliOptions& o) {
  if (o.model.empty()) return FieldError("--model", "required: a model spec file");
  ASSIGN_OR_RETURN(v1::ModelSpec spec, LoadModelFile(o.model));
  if (o.seq != 0) spec.set_seq_length(o.seq);
  if (o.micro_batch != 0) spec.set_micro_batch_size(o.micro_batch);
  if (o.tp != 0) spec.set_tensor_parallel(o.tp);
  if (o.kv_cache != 0) spec.set_kv_cache_length(o.kv_cache);
  if (!o.dtype.empty()) {
    ASSIGN_OR_RETURN(DType d, ParseDType(o.dtype));
    spec.set_dtype(ToProto(d));
  }
  if (!o.attention.empty()) {
    ASSIGN_OR_RETURN(Attention a, ParseAttention(o.attention));
    spec.set_attention(a == Attention::kFlash ? v1::ATTENTION_FLASH : v1::ATTENTION_UNFUSED);
  }
  if (!o.workload.empty()) {
    ASSIGN_OR_RETURN(Workload w, ParseWorkload(o.workload));
    spec.set_workload(w == Workload::kTraining  ? v1::WORKLOAD_TRAINING
                      : w == Workload::kPrefill ? v1::WORKLOAD_PREFILL
                                                : v1::WORKLOAD_DECODE);
  }
  return spec;
}

namespace {

int Fail(std::ostream& err, const absl::Status& status) {
  err << "wavecrest: " << FormatError(status) << "\n";
  return ExitCodeFor(status);
}

absl::StatusOr<v1::AnalyzeResponse> DoAnalyze(const CliOptions& o) {
  v1::AnalyzeRequest request;
  ASSIGN_OR_RETURN(*request.mutable_model(), LoadSpecWithOverrides(o));
  request.set_gpu(o.gpu);
  return HandleAnalyze(request);
}

}  // namespace

int RunCli(const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (o.format != "table" && o.format != "json") {
    err << "wavecrest: --format: must be table or json; got \"" << o.format << "\"\n";
    return 2;
  }
  const bool json = o.format == "json";
  if (o.command == "analyze") {
    absl::StatusOr<v1::AnalyzeResponse> r = DoAnalyze(o);
    if (!r.ok()) return Fail(err, r.status());
    out << (json ? ToJson(*r) + "\n" : FormatAnalysis(*r));
    return 0;
  }
  err << "wavecrest: unknown command \"" << o.command << "\" (try --help)\n";
  return 2;
}

}  // namespace wavecrest
