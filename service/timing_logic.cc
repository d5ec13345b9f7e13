#include "service/timing_logic.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/analysis.h"
#include "core/status_macros.h"
#include "service/advisor_logic.h"
#include "service/convert.h"
#include "service/errors.h"
#include "service/spec_io.h"

namespace wavecrest {
namespace {

v1::Mode ModeOrAuto(v1::Mode mode) { return mode == v1::MODE_UNSPECIFIED ? v1::MODE_AUTO : mode; }

void CheckMode(v1::Mode mode, std::vector<FieldViolation>* v) {
  if (!v1::Mode_IsValid(mode)) {
    v->push_back({"mode", absl::StrCat("unknown value ", mode,
                                       "; allowed: MODE_AUTO, MODE_MEASURED, MODE_PREDICTED")});
  }
}

// The request's model, or its violations added to `v`.
ModelSpec CheckModel(const v1::ModelSpec& model, std::vector<FieldViolation>* v) {
  absl::StatusOr<ModelSpec> s = SpecFromRequest(model, "model.");
  if (s.ok()) return *std::move(s);
  for (auto& f : ViolationsOf(s.status())) v->push_back(std::move(f));
  return ModelSpec();
}

// The request's GPU; a missing one is a violation added to `v` (NOT_FOUND stays an error, after
// the violations).
absl::StatusOr<GpuTarget> CheckGpu(const Measurer& measurer, absl::string_view name,
                                   std::vector<FieldViolation>* v) {
  absl::StatusOr<GpuTarget> gpu = measurer.ResolveGpu(name, "gpu");
  if (!gpu.ok() && gpu.status().code() == absl::StatusCode::kInvalidArgument) {
    for (auto& f : ViolationsOf(gpu.status())) v->push_back(std::move(f));
  }
  return gpu;
}

void CheckShape(const v1::GemmShape& s, const std::string& field, std::vector<FieldViolation>* v) {
  auto dim = [&](const char* name, int64_t x, int64_t lo) {
    if (x < lo || x > kMaxGemmDim) {
      v->push_back({absl::StrCat(field, ".", name),
                    absl::StrCat("must be in [", lo, ", ", kMaxGemmDim, "]; got ", x)});
      return false;
    }
    return true;
  };
  // Every dimension is checked (each bad one is a violation), then whether all were good.
  const bool dims_ok[] = {dim("m", s.m(), 1), dim("n", s.n(), 1), dim("k", s.k(), 1),
                          dim("batch", s.batch(), 0)};
  const bool ok = std::all_of(std::begin(dims_ok), std::end(dims_ok), [](bool b) { return b; });
  if (ok) {
    const double flops = GemmFlops({s.m(), s.n(), s.k(), std::max<int64_t>(s.batch(), 1)});
    if (flops > kMaxGemmFlops) {
      v->push_back({field, absl::StrCat("2·m·n·k·batch = ", flops, " FLOPs; at most ",
                                        kMaxGemmFlops, " allowed")});
    }
  }
}

// Refuses, before any work, what would hold a GPU longer than a request may: measuring costs
// about kMeasureCostFactor runs of each unit, `seconds` of them predicted.
absl::Status CheckGpuSeconds(double seconds, absl::string_view field, absl::string_view what,
                             absl::string_view advice) {
  if (seconds * kMeasureCostFactor <= kMaxGpuSecondsPerRequest) return absl::OkStatus();
  return FieldError(field, absl::StrCat(what, " would take about ",
                                        static_cast<int64_t>(seconds * kMeasureCostFactor),
                                        " s of GPU time (predicted); at most ",
                                        kMaxGpuSecondsPerRequest, " s per request: ", advice));
}

absl::Status CheckGpuWork(const TimingTask& task, absl::string_view field, bool gpu_may_run) {
  // A model's GEMMs get the cap given shapes get.
  for (const GemmKey& k : task.gemms) {
    if (GemmFlops(k.shape) > kMaxGemmFlops) {
      return FieldError(field, absl::StrCat(GemmKeyString(k), " is ", GemmFlops(k.shape),
                                            " FLOPs; at most ", kMaxGemmFlops, " per GEMM"));
    }
  }
  if (task.mode == v1::MODE_PREDICTED || !gpu_may_run) return absl::OkStatus();
  double seconds = 0;
  for (const GemmKey& k : task.gemms) seconds += PredictGemmTime(*task.gpu, k);
  return CheckGpuSeconds(seconds, field, "measuring these GEMMs",
                         "split the request or ask for MODE_PREDICTED");
}

// The distinct GEMMs of `spec` (fused attention is not a cuBLASLt GEMM) and what uses each.
void AddModelGemms(const ModelSpec& spec, TimeGemmsPlan* plan) {
  absl::flat_hash_map<GemmKey, size_t> index;
  for (const Gemm& g : BuildGemms(spec)) {
    if (g.fused_attention) continue;
    auto [it, added] = index.emplace(g.key(), plan->task.gemms.size());
    if (added) {
      plan->task.gemms.push_back(g.key());
      plan->used_by.emplace_back();
    }
    plan->used_by[it->second].push_back(absl::StrCat(g.name, " ", PassName(g.pass)));
  }
}

// The layer kinds a TimeLayers request names; violations name the entry.
std::vector<LayerKind> KindsOf(const v1::TimeLayersRequest& request,
                               std::vector<FieldViolation>* v) {
  std::vector<LayerKind> kinds;
  for (int i = 0; i < request.kinds_size() && i < 8; ++i) {
    absl::StatusOr<LayerKind> k = FromProto(request.kinds(i));
    if (!k.ok()) {
      v->push_back({absl::StrCat("kinds[", i, "]"), std::string(k.status().message())});
    } else {
      kinds.push_back(*k);
    }
  }
  if (request.kinds_size() > 8) v->push_back({"kinds", "at most 8 entries"});
  return kinds;
}

// The layers of `kinds` (every kind of the model's layers when none), distinct, in the request's
// order, each with how many of the model's layers run it: the model's stack (LayerStackOf), local
// and global, MoE and dense layers each their own.
std::vector<LayerUse> LayersOf(const std::vector<LayerKind>& kinds, const ModelSpec& spec,
                               const MoeRouting& routing, std::vector<FieldViolation>* v) {
  absl::StatusOr<std::vector<LayerUse>> stack = LayerStackOf(spec, routing);
  if (kinds.empty()) {
    if (!stack.ok()) v->push_back({"model", std::string(stack.status().message())});
    return stack.ok() ? *std::move(stack) : std::vector<LayerUse>();
  }
  std::vector<LayerUse> uses;
  for (size_t i = 0; i < kinds.size(); ++i) {
    bool found = false;
    for (const LayerUse& u : stack.ok() ? *stack : std::vector<LayerUse>()) {
      if (u.key.kind != kinds[i]) continue;
      found = true;
      if (std::find_if(uses.begin(), uses.end(), [&](const LayerUse& x) {
            return x.key == u.key;
          }) == uses.end()) {
        uses.push_back(u);
      }
    }
    if (found) continue;
    absl::StatusOr<LayerKey> key = MakeLayerKey(kinds[i], spec, DefaultRole(spec), routing);
    v->push_back({absl::StrCat("kinds[", i, "]"),
                  std::string(!key.ok() ? key.status().message() : stack.status().message())});
  }
  return uses;
}

// A progress message of a stream whose responses have a `progress` field.
template <typename Response>
Response ProgressMessage(int64_t done, int64_t total, absl::string_view what) {
  Response msg;
  msg.mutable_progress()->set_done(done);
  msg.mutable_progress()->set_total(total);
  msg.mutable_progress()->set_message(std::string(what));
  return msg;
}

}  // namespace

absl::StatusOr<TimeGemmsPlan> AcceptTimeGemms(v1::TimeGemmsRequest request,
                                            const Measurer& measurer) {
  RETURN_IF_ERROR(ResolveHfConfig(&request));
  std::vector<FieldViolation> v;
  const bool has_model = request.has_model();
  if (has_model == (request.gemms_size() > 0)) {
    v.push_back({"gemms", "give either gemms (1 to 4096 shapes) or model, not both or neither"});
  }
  if (request.gemms_size() > kMaxGemmsPerRequest) {
    v.push_back({"gemms", absl::StrCat("at most ", kMaxGemmsPerRequest, " shapes; got ",
                                       request.gemms_size())});
  }
  CheckMode(request.mode(), &v);
  absl::StatusOr<DType> dtype = FromProto(request.dtype());
  if (!dtype.ok()) v.push_back({"dtype", std::string(dtype.status().message())});
  absl::StatusOr<Layout> layout = FromProto(request.layout());
  if (!layout.ok()) v.push_back({"layout", std::string(layout.status().message())});
  if (request.gemms_size() <= kMaxGemmsPerRequest) {
    for (int i = 0; i < request.gemms_size(); ++i) {
      CheckShape(request.gemms(i), absl::StrCat("gemms[", i, "]"), &v);
    }
  }
  const ModelSpec spec = has_model ? CheckModel(request.model(), &v) : ModelSpec();
  absl::StatusOr<GpuTarget> gpu = CheckGpu(measurer, request.gpu(), &v);
  if (!v.empty()) return InvalidArgumentWithViolations(v);
  if (!gpu.ok()) return gpu.status();

  TimeGemmsPlan plan;
  plan.task.kind = gpu->kind;
  plan.task.gpu = gpu->spec;
  plan.task.mode = ModeOrAuto(request.mode());
  plan.task.autotune = request.autotune();
  plan.task.warm_l2 = request.warm_l2();
  RETURN_IF_ERROR(CheckDtypeSupported(has_model ? spec.dtype : *dtype, *gpu->spec));
  if (has_model) {
    AddModelGemms(spec, &plan);
  } else {
    for (const v1::GemmShape& s : request.gemms()) {
      plan.task.gemms.push_back(
          {{s.m(), s.n(), s.k(), std::max<int64_t>(s.batch(), 1)}, *layout, *dtype});
    }
  }
  RETURN_IF_ERROR(CheckGpuWork(plan.task, has_model ? "model" : "gemms",
                               measurer.MightMeasure(plan.task.kind)));
  return plan;
}

absl::StatusOr<MeasureCounts> StreamTimeGemms(const TimeGemmsPlan& plan, const CallContext& ctx,
                                              const Send<v1::TimeGemmsResponse>& send) {
  TimingTask task = plan.task;
  task.deadline = ctx.deadline;
  send(ProgressMessage<v1::TimeGemmsResponse>(
      0, static_cast<int64_t>(task.gemms.size()),
      absl::StrCat(task.gemms.size(), " distinct GEMMs on ", task.kind)));
  absl::StatusOr<MeasureCounts> summary = ctx.measurer->TimeGemms(
      task,
      [&](size_t i, v1::GemmTiming t) {
        t.set_index(static_cast<int32_t>(i));
        if (i < plan.used_by.size()) {
          for (const auto& u : plan.used_by[i]) t.add_used_by(u);
        }
        v1::TimeGemmsResponse msg;
        *msg.mutable_timing() = std::move(t);
        send(std::move(msg));
      },
      [&](int64_t done, int64_t total, absl::string_view what) {
        send(ProgressMessage<v1::TimeGemmsResponse>(done, total, what));
      },
      ctx.cancelled);
  if (!summary.ok()) return summary.status();
  for (const std::string& note : summary->notes) {
    v1::TimeGemmsResponse msg;
    msg.mutable_progress()->set_message("note: " + note);
    send(std::move(msg));
  }
  return *summary;
}

absl::StatusOr<LayerTask> AcceptTimeLayers(v1::TimeLayersRequest request, const Measurer& measurer) {
  RETURN_IF_ERROR(ResolveHfConfig(&request));
  std::vector<FieldViolation> v;
  CheckMode(request.mode(), &v);
  const std::vector<LayerKind> kinds = KindsOf(request, &v);
  ModelSpec spec;
  if (!request.has_model()) {
    v.push_back({"model", "required: the model whose layers to time (or hf_config_json)"});
  } else {
    spec = CheckModel(request.model(), &v);
  }
  absl::StatusOr<GpuTarget> gpu = CheckGpu(measurer, request.gpu(), &v);
  absl::StatusOr<MoeRouting> routing = ParseRouting(request.routing(), "");
  if (!routing.ok()) {
    v.push_back({"routing", std::string(routing.status().message())});
  } else if (absl::Status st = CheckRouting(*routing, spec.num_experts, "");
             !st.ok() && spec.num_experts > 0) {
    v.push_back({"routing", std::string(st.message())});
  }
  std::vector<LayerUse> uses =
      v.empty() ? LayersOf(kinds, spec, *routing, &v) : std::vector<LayerUse>();
  if (!v.empty()) return InvalidArgumentWithViolations(v);
  if (!gpu.ok()) return gpu.status();
  RETURN_IF_ERROR(CheckDtypeSupported(spec.dtype, *gpu->spec));
  LayerTask task;
  task.kind = gpu->kind;
  task.gpu = gpu->spec;
  task.mode = ModeOrAuto(request.mode());
  task.warm_l2 = request.warm_l2();
  bool whole_layer = false;
  for (LayerUse& u : uses) {
    whole_layer |= u.key.kind == LayerKind::kTransformerLayer;
    task.layers.push_back(std::move(u.key));
    task.model_layers.push_back(u.layers);
    task.roles.push_back(std::move(u.role));
  }
  if (!whole_layer && kinds.empty()) {
    absl::StatusOr<LayerKey> layer =
        MakeLayerKey(LayerKind::kTransformerLayer, spec, DefaultRole(spec), *routing);
    task.notes.push_back(absl::StrCat(
        "the whole layer is not timed: ",
        layer.ok() ? "no key" : layer.status().message(),
        "; analyze prices it (its GEMMs and attention kernels summed)"));
  }
  if (task.mode != v1::MODE_PREDICTED && measurer.MightMeasure(task.kind)) {
    double seconds = 0;
    for (const LayerKey& k : task.layers) seconds += PredictLayer(*task.gpu, k).time_s;
    RETURN_IF_ERROR(
        CheckGpuSeconds(seconds, "model", "timing these layers",
                        "shorten seq_length or micro_batch_size, or ask for MODE_PREDICTED"));
  }
  return task;
}

absl::StatusOr<MeasureCounts> StreamTimeLayers(const LayerTask& plan, const CallContext& ctx,
                                               const Send<v1::TimeLayersResponse>& send) {
  LayerTask task = plan;
  task.deadline = ctx.deadline;
  auto progress = [&](int64_t done, int64_t total, absl::string_view what) {
    send(ProgressMessage<v1::TimeLayersResponse>(done, total, what));
  };
  progress(0, static_cast<int64_t>(task.layers.size()),
           absl::StrCat(task.layers.size(), " layers on ", task.kind));
  absl::StatusOr<MeasureCounts> summary = ctx.measurer->TimeLayers(
      task,
      [&](size_t i, v1::LayerTiming t) {
        t.set_index(static_cast<int32_t>(i));
        if (i < task.model_layers.size()) t.set_model_layers(task.model_layers[i]);
        if (i < task.roles.size()) t.set_role(task.roles[i]);
        v1::TimeLayersResponse msg;
        *msg.mutable_timing() = std::move(t);
        send(std::move(msg));
      },
      progress, ctx.cancelled);
  if (!summary.ok()) return summary.status();
  summary->notes.insert(summary->notes.begin(), task.notes.begin(), task.notes.end());
  if (!summary->notes.empty()) {
    v1::TimeLayersResponse msg;
    msg.mutable_progress()->set_message("notes");
    for (const std::string& note : summary->notes) msg.add_notes(note);
    send(std::move(msg));
  }
  return *summary;
}

}  // namespace wavecrest
