#include "service/advisor_logic.h"

#include "absl/strings/str_cat.h"
#include "core/analysis.h"
#include "core/hf_import.h"
#include "core/parallelism.h"
#include "core/status_macros.h"
#include "service/assumed.h"
#include "service/convert.h"
#include "service/errors.h"
#include "service/layout_logic.h"
#include "service/spec_io.h"

namespace wavecrest {

namespace {

// Converts, fills defaults and validates; appends violations (with `prefix`) to `all`.
ModelSpec ConvertAndCheck(const v1::ModelSpec& p, absl::string_view prefix,
                          std::vector<FieldViolation>* all) {
  std::vector<FieldViolation> violations;
  ModelSpec spec = WithDefaults(FromProto(p, &violations));
  for (FieldViolation& v : Validate(spec)) violations.push_back(std::move(v));
  for (FieldViolation& v : violations) {
    all->push_back({std::string(prefix) + v.field, std::move(v.description)});
  }
  return spec;
}

}  // namespace

std::string GpuRequired() {
  return "required: a GPU name such as h100-sxm (known: " + KnownGpuNames() + ")";
}

absl::StatusOr<ModelSpec> SpecFromRequest(const v1::ModelSpec& p, absl::string_view prefix) {
  std::vector<FieldViolation> violations;
  ModelSpec spec = ConvertAndCheck(p, prefix, &violations);
  if (!violations.empty()) return InvalidArgumentWithViolations(violations);
  return spec;
}

absl::StatusOr<const GpuSpec*> CatalogGpuFromRequest(absl::string_view name,
                                                     absl::string_view field) {
  if (name.empty()) {
    return FieldError(field, GpuRequired());
  }
  return FindGpu(name);
}

namespace {

// A planned run whose model leaves the micro-batch unset plans it too (PlanMicroBatch): what the
// request said decides, as WithDefaults gave `spec` 1; `spec` then takes the chosen one, so that
// the kernels analysed after are that micro-batch's.
PlannedMicroBatch PlanRequestedMicroBatch(const v1::ModelSpec& requested, const GpuSpec& gpu,
                                          const RunConfig& run, ModelSpec& spec) {
  ModelSpec unset = spec;
  unset.micro_batch_size = requested.micro_batch_size();
  PlannedMicroBatch planned = PlanMicroBatch(unset, gpu, run, &CatalogPredictionMemo());
  if (planned.micro_batch > 0) spec.micro_batch_size = planned.micro_batch;
  return planned;
}

// The model's FLOPs, the kernels' MFU and TFLOP/s as the request counts attention's FLOPs.
void SetFlopCount(const Analysis& analysis, FlopCount count, v1::AnalyzeResponse& response) {
  response.set_flop_count(std::string(FlopCountName(count)));
  response.set_model_flops(analysis.flops.ModelFlops(count));
  response.set_mfu(KernelMfu(analysis, count));
  response.set_tflops_per_gpu(response.mfu() * analysis.gpu->PeakFlops(analysis.spec.dtype) /
                              1e12);
}

}  // namespace

namespace {

// The step with its layers measured whole, when the store has the layer measured on this GPU:
// the GEMMs outside the layers stay predicted.
void AddMeasuredStep(const Analysis& analysis, const GpuSpec& gpu, FlopCount flop_count,
                     const MeasuredLayerLookup& lookup, v1::AnalyzeResponse* response) {
  absl::StatusOr<LayerKey> key = MakeLayerKey(LayerKind::kTransformerLayer, analysis.spec);
  if (!key.ok()) return;
  std::optional<v1::LayerTiming> layer = lookup(gpu, *key);
  if (!layer || layer->provenance().source() == v1::SOURCE_PREDICTED || !(layer->time_s() > 0)) {
    return;
  }
  double outside_s = 0;
  for (const GemmAnalysis& g : analysis.gemms) {
    if (g.gemm.name == kLogits) {
      outside_s += g.prediction.time_s * static_cast<double>(g.gemm.count);
    }
  }
  const double layers_s = layer->time_s() * static_cast<double>(analysis.spec.num_layers);
  v1::MeasuredStep* m = response->mutable_measured_step();
  m->set_step_time_s(layers_s + outside_s + analysis.elementwise.loss_time_s);
  m->set_measured_share(layers_s / m->step_time_s());
  m->set_mfu(KernelMfu(analysis, flop_count) * analysis.step_time_s / m->step_time_s());
  m->set_tokens_per_second_per_gpu(static_cast<double>(analysis.flops.tokens_per_step) /
                                   m->step_time_s() /
                                   static_cast<double>(analysis.spec.tensor_parallel));
  *m->mutable_layer() = *std::move(layer);
}

// One rank's kernels at TP t > 1 leave out the collectives that split them: beside them, the
// same model as a run on t GPUs (one replica, the run's defaults), so that the MFU a layout
// achieves is never read off the kernels alone. Training only (the planner prices training).
void AddTensorParallelRun(const Analysis& analysis, FlopCount flop_count,
                          v1::AnalyzeResponse& response) {
  if (analysis.spec.tensor_parallel <= 1 || analysis.spec.workload != Workload::kTraining) return;
  RunConfig run;
  run.flop_count = flop_count;
  absl::StatusOr<StepBreakdown> step = PlanStep(analysis, run);
  if (step.ok()) *response.mutable_tensor_parallel_run() = ToProto(*step);
}

// The run's step as the answer: its time, MFU, tokens/s and memory at the top level. A planned
// micro-batch comes with its step: not planned again.
absl::Status AnswerWithTheRun(const Analysis& analysis, const RunConfig& run,
                              PlannedMicroBatch planned, v1::AnalyzeResponse& response) {
  absl::StatusOr<StepBreakdown> step =
      planned.step ? *std::move(planned.step) : PlanStep(analysis, run);
  // "run.global_batch: must be ..." names its field.
  if (!step.ok()) return RunFieldError(step.status());
  if (!planned.assumption.empty()) {
    step->assumptions.insert(step->assumptions.begin(), planned.assumption);
  }
  *response.mutable_step() = ToProto(*step);
  response.set_step_time_s(response.step().step_time_s());
  response.set_mfu(response.step().mfu());
  response.set_tflops_per_gpu(response.step().tflops_per_gpu());
  response.set_tokens_per_second_per_gpu(response.step().tokens_per_second_per_gpu());
  if (response.step().has_memory()) *response.mutable_memory() = response.step().memory();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::AnalyzeResponse> HandleAnalyze(const v1::AnalyzeRequest& request,
                                                  const MeasuredLayerLookup& lookup) {
  if (!request.hf_config_json().empty()) {
    v1::AnalyzeRequest imported = request;
    RETURN_IF_ERROR(ResolveHfConfig(&imported));
    return HandleAnalyze(imported, lookup);
  }
  std::vector<FieldViolation> all;
  ModelSpec spec = ConvertAndCheck(request.model(), "model.", &all);
  if (request.gpu().empty()) all.push_back({"gpu", GpuRequired()});
  const absl::StatusOr<FlopCount> flop_count = ParseFlopCount(request.flop_count());
  if (!flop_count.ok()) all.push_back({"flop_count", std::string(flop_count.status().message())});
  if (!all.empty()) return InvalidArgumentWithViolations(all);
  ASSIGN_OR_RETURN(const GpuSpec* gpu, FindGpu(request.gpu()));
  // A run is the answer whenever one is described: `run`, or parallelism beyond TP in the model
  // (`--tp 8 --pp 4 --dp 2` is a run on 64 GPUs, not one rank's kernels).
  const bool run_given = request.has_run() || spec.pipeline_parallel > 1 ||
                         spec.data_parallel > 1 || spec.context_parallel > 1 ||
                         spec.expert_parallel > 1;
  RunConfig run;
  PlannedMicroBatch planned;
  std::optional<LayoutSearch> search;  // the degrees `plan` chose on the run's GPUs
  if (run_given) {
    ASSIGN_OR_RETURN(run, FromProto(request.run(), "run."));
    run.flop_count = *flop_count;
    if (SearchesDegrees(request.model(), spec, run)) {
      ASSIGN_OR_RETURN(search, SearchRequestedLayout(request.model(), *gpu, run, spec, planned));
    } else {
      planned = PlanRequestedMicroBatch(request.model(), *gpu, run, spec);
    }
  }
  // The catalog's GPUs are never freed: their predictions may be remembered across calls.
  ASSIGN_OR_RETURN(Analysis analysis, Analyze(spec, *gpu, &CatalogPredictionMemo()));
  v1::AnalyzeResponse response = ToProto(analysis);
  SetFlopCount(analysis, *flop_count, response);
  *response.mutable_assumed() = AssumedOf(analysis.spec);
  v1::KernelStep* kernels = response.mutable_kernels();
  kernels->set_step_time_s(response.step_time_s());
  kernels->set_mfu(response.mfu());
  kernels->set_tokens_per_second_per_gpu(response.tokens_per_second_per_gpu());
  *kernels->mutable_memory() = response.memory();
  if (!run_given) AddTensorParallelRun(analysis, *flop_count, response);
  if (run_given) RETURN_IF_ERROR(AnswerWithTheRun(analysis, run, std::move(planned), response));
  if (search) AddLayouts(*search, response);
  if (run_given && !run.plan) AddPlanThatFits(request.model(), *gpu, run, spec, response);
  if (lookup) AddMeasuredStep(analysis, *gpu, *flop_count, lookup, &response);
  return response;
}

v1::ListDevicesResponse CatalogDevices() {
  v1::ListDevicesResponse r;
  for (const GpuSpec& g : GpuCatalog()) *r.add_catalog() = ToProto(g);
  return r;
}

absl::StatusOr<v1::ParseModelResponse> HandleParseModel(const v1::ParseModelRequest& request) {
  if (static_cast<int64_t>(request.text().size()) > kMaxSpecFileBytes) {
    return FieldError("text", absl::StrCat(request.text().size(), " bytes; at most ",
                                           kMaxSpecFileBytes, " allowed"));
  }
  absl::StatusOr<v1::ModelSpec> model = ParseModelJson(request.text());
  if (!model.ok()) return FieldError("text", model.status().message());
  RETURN_IF_ERROR(SpecFromRequest(*model, "model.").status());
  v1::ParseModelResponse out;
  *out.mutable_model() = std::move(*model);
  return out;
}

absl::StatusOr<v1::ExportModelResponse> HandleExportModel(const v1::ExportModelRequest& request) {
  const std::string format = request.format().empty() ? "hf" : request.format();
  if (!request.base_config_json().empty()) {
    if (format != "hf") {
      return FieldError("base_config_json", "only a config.json export (format \"hf\") has one");
    }
    if (static_cast<int64_t>(request.base_config_json().size()) > kMaxHfConfigBytes) {
      return FieldError("base_config_json",
                        absl::StrCat(request.base_config_json().size(), " bytes; at most ",
                                     kMaxHfConfigBytes, " allowed"));
    }
  }
  std::vector<std::string> changed;
  absl::StatusOr<std::string> text =
      ExportModel(request.model(), format, request.base_config_json(), &changed);
  if (!text.ok()) return text.status();
  v1::ExportModelResponse out;
  out.set_text(std::move(*text));
  for (std::string& f : changed) out.add_changed_fields(std::move(f));
  return out;
}

v1::ListModelsResponse HandleListModels(const std::string& models_dir) {
  v1::ListModelsResponse out;
  if (models_dir.empty()) return out;
  for (const std::string& file : ModelFilesIn(models_dir)) {
    const std::string path = models_dir + "/" + file;
    absl::StatusOr<v1::ModelSpec> spec = LoadModelFile(path);
    if (!spec.ok()) continue;
    v1::ExampleModel* m = out.add_models();
    m->set_file(file);
    *m->mutable_spec() = std::move(*spec);
    absl::StatusOr<std::string> text = ReadFile(path, kMaxHfConfigBytes);
    if (text.ok() && LooksLikeHfConfig(*text)) m->set_hf_config_json(*std::move(text));
  }
  return out;
}

}  // namespace wavecrest
