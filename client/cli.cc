#include "client/cli.h"

#include "absl/strings/str_join.h"
#include "core/hf_import.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/advisor_client.h"
#include "client/format.h"
#include "client/svg.h"
#include "core/attention_calibration.h"
#include "core/calibrate.h"
#include "core/calibration.h"
#include "core/cost_model.h"
#include "core/gemm.h"
#include "core/model_spec.h"
#include "core/moe_routing.h"
#include "core/recommend.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"
#include "service/advisor_logic.h"
#include "service/convert.h"
#include "service/errors.h"
#include "service/recommend_logic.h"
#include "service/spec_io.h"
#include "service/sweep_logic.h"
#include "service/text.h"

namespace wavecrest {

int ExitCodeFor(const absl::Status& status) {
  return status.ok() ? 0 : 10 + static_cast<int>(status.code());
}

absl::StatusOr<v1::ModelSpec> LoadSpecWithOverrides(const CliOptions& o) {
  if (o.model.empty()) return FieldError("--model", "required: a model spec file");
  // A file that cannot be read is a command-line problem (exit 2); one that does not parse is
  // invalid input (INVALID_ARGUMENT, exit 13).
  absl::StatusOr<std::string> text = ReadFile(o.model, kMaxSpecFileBytes);
  if (!text.ok()) return FieldError("--model", text.status().message());
  absl::StatusOr<v1::ModelSpec> parsed = ParseModelJson(*text, o.model);
  if (!parsed.ok()) {
    return absl::Status(parsed.status().code(),
                        absl::StrCat(o.model, ": ", parsed.status().message()));
  }
  v1::ModelSpec spec = std::move(*parsed);
  if (o.seq != 0) spec.set_seq_length(o.seq);
  if (o.micro_batch != 0) spec.set_micro_batch_size(o.micro_batch);
  if (o.tp != 0) spec.set_tensor_parallel(o.tp);
  if (o.pp != 0) spec.set_pipeline_parallel(o.pp);
  if (o.cp != 0) spec.set_context_parallel(o.cp);
  if (o.ep != 0) spec.set_expert_parallel(o.ep);
  if (o.etp != 0) spec.set_expert_tensor_parallel(o.etp);
  if (o.capacity_factor != 0) spec.set_moe_capacity_factor(o.capacity_factor);
  if (o.routing_skew != 0) spec.set_moe_routing_skew(o.routing_skew);
  if (o.dp != 0) spec.set_data_parallel(o.dp);
  if (o.kv_cache != 0) spec.set_kv_cache_length(o.kv_cache);
  if (!o.dtype.empty()) {
    ASSIGN_OR_RETURN(DType d, ParseDType(o.dtype));
    spec.set_dtype(ToProto(d));
  }
  if (!o.attention.empty()) {
    ASSIGN_OR_RETURN(Attention a, ParseAttention(o.attention));
    spec.set_attention(ToProto(a));
  }
  if (!o.workload.empty()) {
    ASSIGN_OR_RETURN(Workload w, ParseWorkload(o.workload));
    spec.set_workload(ToProto(w));
  }
  return spec;
}

double EffectiveDeadline(const CliOptions& o) {
  if (o.deadline_s > 0) return o.deadline_s;
  const bool may_measure =
      (o.command == "recommend" || o.command == "sweep") && o.mode != "predicted";
  if (!may_measure) return kDefaultDeadlineS;
  return (o.max_gpu_seconds > 0 ? o.max_gpu_seconds : kDefaultMaxGpuSeconds) +
         kDeadlineAfterBudgetS;
}

namespace {

AdvisorClient ClientFor(const CliOptions& o) {
  return AdvisorClient(o.server, absl::Seconds(EffectiveDeadline(o)),
                       {{o.tls_cert, o.tls_key, o.tls_ca}, o.token});
}

int Fail(std::ostream& err, const absl::Status& status) {
  err << "wavecrest: " << FormatError(status) << "\n";
  // A problem with the command line itself (a violation naming a --flag) is a usage error: 2.
  const std::vector<FieldViolation> v = ViolationsOf(status);
  if (status.code() == absl::StatusCode::kInvalidArgument && !v.empty() &&
      std::all_of(v.begin(), v.end(),
                  [](const FieldViolation& f) { return absl::StartsWith(f.field, "--"); })) {
    return 2;
  }
  return ExitCodeFor(status);
}

absl::StatusOr<v1::AnalyzeResponse> DoAnalyze(const CliOptions& o) {
  v1::AnalyzeRequest request;
  ASSIGN_OR_RETURN(*request.mutable_model(), LoadSpecWithOverrides(o));
  request.set_gpu(o.gpu);
  if (!o.flop_count.empty() && o.flop_count != "full" && o.flop_count != "causal") {
    return FieldError("--flop-count",
                      absl::StrCat("\"", o.flop_count, "\" is not one of: full, causal"));
  }
  request.set_flop_count(o.flop_count);
  if (o.gpus != 0 || o.global_batch != 0 || o.interleave != 0 || o.sequence_parallel ||
      !o.recompute.empty() || o.dp_overlap != 0 || o.tp_overlap != 0 || o.no_pp_overlap ||
      o.overlap_grad_reduce || o.zero3_prefetch || o.no_reshard_after_forward || o.ep_overlap ||
      !o.network.empty() || !o.ep_dispatcher.empty() || o.fp8_param_gather || o.moe_host_ms >= 0 ||
      o.zero_stage != 0 ||
      o.plan || o.keep_degrees || o.tokens != 0 || o.offload_activations ||
      o.gradient_bytes != 0) {
    v1::RunConfig* run = request.mutable_run();
    run->set_num_gpus(o.gpus);
    run->set_global_batch(o.global_batch);
    run->set_interleave(o.interleave);
    run->set_sequence_parallel(o.sequence_parallel);
    run->set_dp_overlap(o.dp_overlap);
    run->set_tp_overlap(o.tp_overlap);
    run->set_no_pp_overlap(o.no_pp_overlap);
    run->set_overlap_grad_reduce(o.overlap_grad_reduce);
    run->set_zero3_prefetch(o.zero3_prefetch);
    run->set_no_reshard_after_forward(o.no_reshard_after_forward);
    run->set_ep_overlap(o.ep_overlap);
    run->set_network(o.network);
    run->set_ep_dispatcher(o.ep_dispatcher);
    run->set_fp8_param_gather(o.fp8_param_gather);
    if (o.moe_host_ms >= 0) run->set_moe_host_s(o.moe_host_ms / 1000);
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
    } else if (!o.recompute.empty()) {
      return FieldError("--recompute",
                        absl::StrCat("\"", o.recompute, "\" is not one of: none, selective, full"));
    }
  }
  if (o.server.empty()) return HandleAnalyze(request);
  return ClientFor(o).Analyze(request);
}

absl::Status NeedServer(const CliOptions& o) {
  if (!o.server.empty()) return absl::OkStatus();
  return FieldError("--server", absl::StrCat("required for '", o.command,
                                             "': the address of a wavecrest-server"));
}

// "8192x12288x4096" or "2048x2048x128x64" (batch last), several separated by commas.
absl::StatusOr<std::vector<v1::GemmShape>> ParseGemms(absl::string_view text) {
  std::vector<v1::GemmShape> out;
  for (absl::string_view one : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::vector<absl::string_view> parts = absl::StrSplit(one, 'x');
    std::vector<int64_t> v;
    for (absl::string_view p : parts) {
      int64_t x = 0;
      if (absl::SimpleAtoi(p, &x)) v.push_back(x);
    }
    if ((parts.size() != 3 && parts.size() != 4) || v.size() != parts.size()) {
      return FieldError("--gemm", absl::StrCat("\"", one, "\": expected MxNxK or MxNxKxBATCH"));
    }
    v1::GemmShape s;
    s.set_m(v[0]);
    s.set_n(v[1]);
    s.set_k(v[2]);
    s.set_batch(v.size() == 4 ? v[3] : 1);
    out.push_back(s);
  }
  if (out.empty()) return FieldError("--gemm", "required: MxNxK[xBATCH][,...] or --model");
  return out;
}

absl::StatusOr<v1::Mode> ParseMode(absl::string_view m) {
  if (m.empty() || m == "auto") return v1::MODE_AUTO;
  if (m == "measured") return v1::MODE_MEASURED;
  if (m == "predicted") return v1::MODE_PREDICTED;
  return FieldError("--mode", absl::StrCat("\"", m, "\"; allowed: auto, measured, predicted"));
}

// A one-line progress bar on stderr, only when stderr is a terminal.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled && isatty(STDERR_FILENO)) {}
  ~ProgressBar() { Clear(); }
  void Update(const v1::Progress& p) {
    if (!enabled_ || p.total() <= 0) return;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * p.done() / p.total());
    std::fprintf(stderr, "\r[%s%s] %lld/%lld %-30.30s", std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, ' ').c_str(), static_cast<long long>(p.done()),
                 static_cast<long long>(p.total()), ForTerminal(p.message()).c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  void Clear() {
    if (shown_) std::fprintf(stderr, "\r%80s\r", "");
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
};

// `recommend --export N|best`: one candidate's model alone, as a Hugging Face config.json or a
// wavecrest spec. N is the rank the table shows (the baseline has one too; 0 also names it);
// best is the first candidate that beats the baseline. A Hugging Face --model is the base of the
// export: only the shape fields the candidate changed are rewritten (listed on stderr).
int ExportCandidate(const v1::RecommendResponse& r, const CliOptions& o, std::ostream& out,
                    std::ostream& err) {
  if (o.export_format != "hf" && o.export_format != "wavecrest") {
    return Fail(err, FieldError("--export-format", absl::StrCat("unknown \"", o.export_format,
                                                                "\"; allowed: hf, wavecrest")));
  }
  const v1::Candidate* pick = nullptr;
  int rank = -1;
  if (o.export_pick == "best") {
    for (const v1::Candidate& c : r.candidates()) {
      if (pick == nullptr && c.beats_baseline()) pick = &c;
    }
    if (pick == nullptr) {
      return Fail(err, FieldError("--export", absl::StrCat("best: no candidate beats the baseline (",
                                                           VerdictName(r.verdict()), ": ",
                                                           r.verdict_reason(), ")")));
    }
  } else if (!absl::SimpleAtoi(o.export_pick, &rank) || rank < 0) {
    return Fail(err, FieldError("--export", absl::StrCat("\"", o.export_pick,
                                                         "\": a rank of the table or best")));
  } else {
    for (const v1::Candidate& c : r.candidates()) {
      if (rank == 0 ? c.baseline() : c.rank() == rank) pick = &c;
    }
  }
  if (pick == nullptr) {
    return Fail(err, FieldError("--export", absl::StrCat("no candidate ranked ", rank, " among the ",
                                                         r.candidates_size(),
                                                         " shown (--top shows more)")));
  }
  std::string base;
  if (o.export_format == "hf") {
    absl::StatusOr<std::string> text = ReadFile(o.model, kMaxSpecFileBytes);
    if (text.ok() && LooksLikeHfConfig(*text)) base = *std::move(text);
  }
  std::vector<std::string> changed;
  absl::StatusOr<std::string> text = ExportModel(pick->model(), o.export_format, base, &changed);
  if (!text.ok()) return Fail(err, FieldError("--export-format", text.status().message()));
  out << *text;
  if (!base.empty()) {
    // The config's keys, and what they say of the shape (a key such as Llama 4's
    // intermediate_size carries the shared expert's width too).
    std::string shape;
    for (const v1::Candidate& c : r.candidates()) {
      if (c.baseline()) shape = ShapeChanges(c.model(), pick->model());
    }
    err << "exported #" << pick->rank() << " over " << o.model << ": "
        << (changed.empty() ? std::string("no field changed")
                            : absl::StrCat("changed ", absl::StrJoin(changed, ", ")))
        << (shape.empty() ? "" : absl::StrCat(" (", shape, ")")) << "\n";
  }
  return 0;
}

int DoRecommend(const CliOptions& o, std::ostream& out, std::ostream& err) {
  v1::RecommendRequest request;
  absl::StatusOr<v1::ModelSpec> spec = LoadSpecWithOverrides(o);
  if (!spec.ok()) return Fail(err, spec.status());
  *request.mutable_model() = *spec;
  request.set_gpu(o.gpu);
  absl::StatusOr<v1::Mode> mode = ParseMode(o.mode);
  if (!mode.ok()) return Fail(err, mode.status());
  request.set_mode(*mode);
  request.set_param_tolerance(o.param_tolerance);
  for (absl::string_view k : absl::StrSplit(o.vary, ',', absl::SkipWhitespace())) {
    absl::StatusOr<Knob> knob = ParseKnob(k);
    if (!knob.ok()) return Fail(err, FieldError("--vary", knob.status().message()));
    request.add_vary(ToProto(*knob));
  }
  for (absl::string_view d : absl::StrSplit(o.allowed_head_dims, ',', absl::SkipWhitespace())) {
    int64_t x = 0;
    if (!absl::SimpleAtoi(d, &x)) {
      return Fail(err, FieldError("--allowed-head-dims", absl::StrCat("not a number: ", d)));
    }
    request.add_allowed_head_dims(x);
  }
  for (absl::string_view t : absl::StrSplit(o.tp_options, ',', absl::SkipWhitespace())) {
    int64_t x = 0;
    if (!absl::SimpleAtoi(t, &x)) {
      return Fail(err, FieldError("--tp-options", absl::StrCat("not a number: ", t)));
    }
    request.add_tensor_parallel_options(x);
  }
  request.set_min_heads(o.min_heads);
  request.set_max_heads(o.max_heads);
  request.set_keep_layers(o.keep_layers);
  request.set_kv_heads_divisible_by_tp(o.kv_divisible);
  request.set_head_dim_multiple(o.head_dim_multiple);
  request.set_max_candidates(o.max_candidates);
  request.set_top(o.top);
  request.set_measure_top_k(o.measure_top_k);
  request.set_max_gpu_seconds(o.max_gpu_seconds);

  const bool json = o.format == "json";
  ProgressBar bar(!json);
  absl::StatusOr<v1::RecommendResponse> result;
  if (o.server.empty()) {
    if (*mode == v1::MODE_MEASURED) {
      return Fail(err,
                  FieldError("--mode", "measured needs --server (a server with a GPU worker)"));
    }
    CallContext ctx;
    ctx.progress = [&](const v1::Progress& p) { bar.Update(p); };
    ctx.no_measure_reason = "offline (no --server)";
    result = RunRecommend(request, ctx);
  } else {
    v1::RecommendResponse final;
    absl::Status st = ClientFor(o).Recommend(request, [&](const v1::RecommendResponse& m) {
      if (m.done()) {
        final = m;
      } else {
        bar.Update(m.progress());
      }
    });
    if (st.ok()) {
      result = final;
    } else {
      result = st;
    }
  }
  bar.Clear();
  if (!result.ok()) return Fail(err, result.status());
  result->clear_progress();
  if (!o.export_pick.empty()) return ExportCandidate(*result, o, out, err);
  out << (json ? FormatJson(*result) + "\n" : FormatRecommendation(*result));
  return 0;
}

int DoSweep(const CliOptions& o, std::ostream& out, std::ostream& err) {
  v1::SweepRequest request;
  absl::StatusOr<v1::SweepDimension> dim = ParseSweepDimension(o.vary);
  if (!dim.ok()) return Fail(err, FieldError("--vary", dim.status().message()));
  request.set_vary(*dim);
  request.set_from(o.from);
  request.set_to(o.to);
  request.set_step(o.step);
  request.set_gpu(o.gpu);
  request.set_max_gpu_seconds(o.max_gpu_seconds);
  const bool gemm_sweep = *dim == v1::SWEEP_DIMENSION_GEMM_M ||
                          *dim == v1::SWEEP_DIMENSION_GEMM_N || *dim == v1::SWEEP_DIMENSION_GEMM_K;
  if (gemm_sweep) {
    if (o.gemm.empty()) {
      return Fail(err, FieldError("--gemm", "required to sweep m, n or k: MxNxK[xBATCH]"));
    }
    absl::StatusOr<std::vector<v1::GemmShape>> shapes = ParseGemms(o.gemm);
    if (!shapes.ok()) return Fail(err, shapes.status());
    if (shapes->size() != 1) return Fail(err, FieldError("--gemm", "give one GEMM to sweep"));
    *request.mutable_gemm() = (*shapes)[0];
    if (!o.layout.empty()) {
      absl::StatusOr<Layout> l = ParseLayout(o.layout);
      if (!l.ok()) return Fail(err, FieldError("--layout", l.status().message()));
      request.set_layout(ToProto(*l));
    }
    if (!o.dtype.empty()) {
      absl::StatusOr<DType> d = ParseDType(o.dtype);
      if (!d.ok()) return Fail(err, FieldError("--dtype", d.status().message()));
      request.set_dtype(ToProto(*d));
    }
  } else {
    absl::StatusOr<v1::ModelSpec> spec = LoadSpecWithOverrides(o);
    if (!spec.ok()) return Fail(err, spec.status());
    *request.mutable_model() = *spec;
  }
  absl::StatusOr<v1::Mode> mode = o.mode.empty() ? v1::MODE_PREDICTED : ParseMode(o.mode);
  if (!mode.ok()) return Fail(err, mode.status());
  request.set_mode(*mode);

  const bool json = o.format == "json";
  ProgressBar bar(!json);
  absl::StatusOr<v1::SweepResponse> result;
  if (o.server.empty()) {
    if (*mode != v1::MODE_PREDICTED) {
      return Fail(err, FieldError("--mode", "auto and measured need --server (a GPU worker)"));
    }
    CallContext ctx;
    ctx.progress = [&](const v1::Progress& p) { bar.Update(p); };
    result = RunSweep(request, ctx);
  } else {
    v1::SweepResponse final;
    absl::Status st = ClientFor(o).Sweep(request, [&](const v1::SweepResponse& m) {
      if (m.done()) {
        final = m;
      } else {
        bar.Update(m.progress());
      }
    });
    result = st.ok() ? absl::StatusOr<v1::SweepResponse>(final) : st;
  }
  bar.Clear();
  if (!result.ok()) return Fail(err, result.status());
  result->clear_progress();
  if (!o.svg.empty()) {
    const std::string title =
        gemm_sweep ? absl::StrCat("GEMM ", o.gemm, ", varying ", o.vary)
                   : absl::StrCat(request.model().name().empty() ? o.model : request.model().name(),
                                  ", varying ", o.vary);
    std::ofstream f(o.svg);
    f << SweepSvg(*result, o.vary, title);
    if (!f.good()) {
      return Fail(err, FieldError("--svg", absl::StrCat("cannot write ", o.svg)));
    }
  }
  out << (json ? FormatJson(*result) + "\n" : FormatSweep(*result, o.vary));
  return 0;
}

// Results in request order.
template <typename Timing>
void SortByIndex(std::vector<Timing>* results) {
  std::sort(results->begin(), results->end(),
            [](const Timing& a, const Timing& b) { return a.index() < b.index(); });
}

// One object, like every command's JSON: the GPU, the results under `list` (protobuf JSON
// mapping) and the notes.
template <typename Timing>
std::string TimingsEnvelope(const std::string& gpu, const char* list,
                            const std::vector<Timing>& results,
                            const std::vector<std::string>& notes) {
  nlohmann::json envelope = {{"gpu", gpu}, {list, nlohmann::json::array()}, {"notes", notes}};
  for (const Timing& r : results) envelope[list].push_back(nlohmann::json::parse(FormatJson(r)));
  return envelope.dump(1) + "\n";
}

// `time --layers`: the model's layers timed whole, beside the sum of their parts.
int DoTimeLayers(const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (o.model.empty()) {
    return Fail(err, FieldError("--model", "--layers times a model's layers: give --model FILE"));
  }
  if (!o.gemm.empty()) return Fail(err, FieldError("--gemm", "not with --layers"));
  if (o.autotune) {
    return Fail(err, FieldError("--autotune",
                                "not with --layers: a layer runs the heuristic's "
                                "algorithms, as a framework does"));
  }
  v1::TimeLayersRequest request;
  request.set_gpu(o.gpu);
  request.set_warm_l2(o.warm_l2);
  if (absl::StatusOr<MoeRouting> r = ParseRouting(o.routing, ""); !r.ok()) {
    return Fail(err, FieldError("--routing", r.status().message()));
  }
  request.set_routing(o.routing);
  absl::StatusOr<v1::Mode> mode = ParseMode(o.mode);
  if (!mode.ok()) return Fail(err, mode.status());
  request.set_mode(*mode);
  for (absl::string_view name : absl::StrSplit(o.layer_kinds, ',', absl::SkipWhitespace())) {
    absl::StatusOr<LayerKind> kind = ParseLayerKind(absl::StripAsciiWhitespace(name));
    if (!kind.ok()) return Fail(err, FieldError("--layer_kinds", kind.status().message()));
    request.add_kinds(ToProto(*kind));
  }
  absl::StatusOr<v1::ModelSpec> spec = LoadSpecWithOverrides(o);
  if (!spec.ok()) return Fail(err, spec.status());
  *request.mutable_model() = *spec;
  const bool json = o.format == "json";
  ProgressBar bar(!json);
  std::vector<v1::LayerTiming> results;
  std::vector<std::string> notes;
  absl::Status st = ClientFor(o).TimeLayers(request, [&](const v1::TimeLayersResponse& m) {
    if (m.has_progress()) bar.Update(m.progress());
    for (const std::string& n : m.notes()) notes.push_back(n);
    if (m.has_timing()) results.push_back(m.timing());
  });
  bar.Clear();
  if (!st.ok()) return Fail(err, st);
  SortByIndex(&results);
  if (json) {
    out << TimingsEnvelope(o.gpu, "layers", results, notes);
  } else {
    out << FormatLayerTimings(results);
    for (const auto& n : notes) out << "note: " << n << "\n";
  }
  return 0;
}

int DoTime(const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (absl::Status st = NeedServer(o); !st.ok()) return Fail(err, st);
  if (o.layers) return DoTimeLayers(o, out, err);
  if (!o.routing.empty()) return Fail(err, FieldError("--routing", "only with --layers"));
  if (!o.layer_kinds.empty()) {
    return Fail(err, FieldError("--layer_kinds", "only with --layers"));
  }
  v1::TimeGemmsRequest request;
  request.set_gpu(o.gpu);
  request.set_autotune(o.autotune);
  request.set_warm_l2(o.warm_l2);
  absl::StatusOr<v1::Mode> mode = ParseMode(o.mode);
  if (!mode.ok()) return Fail(err, mode.status());
  request.set_mode(*mode);
  if (!o.model.empty()) {
    absl::StatusOr<v1::ModelSpec> spec = LoadSpecWithOverrides(o);
    if (!spec.ok()) return Fail(err, spec.status());
    *request.mutable_model() = *spec;
  } else {
    absl::StatusOr<std::vector<v1::GemmShape>> gemms = ParseGemms(o.gemm);
    if (!gemms.ok()) return Fail(err, gemms.status());
    for (auto& g : *gemms) *request.add_gemms() = g;
    absl::StatusOr<DType> d = ParseDType(o.dtype.empty() ? "bf16" : o.dtype);
    if (!d.ok()) return Fail(err, d.status());
    request.set_dtype(ToProto(*d));
    absl::StatusOr<Layout> l = ParseLayout(o.layout.empty() ? "TN" : o.layout);
    if (!l.ok()) return Fail(err, l.status());
    request.set_layout(ToProto(*l));
  }
  const bool json = o.format == "json";
  ProgressBar bar(!json);
  std::vector<v1::GemmTiming> results;
  std::vector<std::string> notes;
  absl::Status st = ClientFor(o).TimeGemms(request, [&](const v1::TimeGemmsResponse& m) {
    if (m.has_progress()) {
      bar.Update(m.progress());
      if (m.progress().message().rfind("note: ", 0) == 0) {
        notes.push_back(m.progress().message());
      }
    }
    if (m.has_timing()) results.push_back(m.timing());
  });
  bar.Clear();
  if (!st.ok()) return Fail(err, st);
  SortByIndex(&results);
  if (json) {
    std::vector<std::string> bare;
    for (const auto& n : notes) bare.push_back(n.substr(6));  // without "note: "
    out << TimingsEnvelope(o.gpu, "timings", results, bare);
  } else {
    out << FormatTimingHeader();
    for (const auto& r : results) out << FormatTiming(r);
    for (const auto& n : notes) out << n << "\n";
  }
  return 0;
}

std::vector<std::string> Files(const std::string& list) {
  return absl::StrSplit(list, ',', absl::SkipWhitespace());
}

// Rows of every file in a comma-separated list; `labels` gets one line per file.
absl::StatusOr<std::vector<Measurement>> ReadAll(const std::string& list,
                                                 std::vector<std::string>* labels) {
  std::vector<Measurement> all;
  for (const std::string& f : Files(list)) {
    ASSIGN_OR_RETURN(std::vector<Measurement> rows, ReadMeasurementsFile(f));
    if (labels) labels->push_back(absl::StrCat(f, ": ", rows.size(), " rows"));
    all.insert(all.end(), rows.begin(), rows.end());
  }
  return all;
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  if (!f || !(f << text)) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write"));
  return absl::OkStatus();
}

// The rows of one source, GPU and dtype, measured over predicted.
struct EvaluationGroup {
  std::vector<double> ratios, aligned, misaligned, predicted_s;
  std::vector<Measurement> rows;
};

nlohmann::json ErrorStatsJson(const ErrorStats& e) {
  return nlohmann::json{{"rows", e.rows},
                        {"median_abs", e.median_abs},
                        {"p90_abs", e.p90_abs},
                        {"max_abs", e.max_abs},
                        {"median_signed", e.median_signed}};
}

// Pairs whose predicted ratio is within 20% of the measured one.
int PairsWithin20(const std::vector<PairCheck>& pairs) {
  int n = 0;
  for (const PairCheck& p : pairs) n += std::abs(p.predicted_ratio / p.measured_ratio - 1) <= 0.2;
  return n;
}

void WriteEvaluationJson(const std::map<std::string, EvaluationGroup>& groups,
                         const nlohmann::json& rows, std::ostream& out) {
  nlohmann::json j;
  j["model"] = std::string(kCostModelName);
  j["rows"] = rows;
  for (const auto& [name, g] : groups) {
    j["groups"][name] = ErrorStatsJson(ErrorsOf(g.ratios));
    if (g.misaligned.empty()) continue;
    j["groups"][name]["aligned"] = ErrorStatsJson(ErrorsOf(g.aligned));
    j["groups"][name]["misaligned"] = ErrorStatsJson(ErrorsOf(g.misaligned));
    nlohmann::json pairs = nlohmann::json::array();
    const std::vector<PairCheck> checks = AlignmentPairs(g.rows, g.predicted_s);
    for (const PairCheck& p : checks) {
      pairs.push_back({{"misaligned", GemmKeyString(p.misaligned)},
                       {"aligned", GemmKeyString(p.aligned)},
                       {"measured_ratio", p.measured_ratio},
                       {"predicted_ratio", p.predicted_ratio}});
    }
    j["groups"][name]["pairs"] = pairs;
    j["groups"][name]["pairs_within_20_percent"] = PairsWithin20(checks);
  }
  out << JsonText(j, 1) << "\n";
}

void WriteEvaluationTable(const std::map<std::string, EvaluationGroup>& groups, std::ostream& out) {
  out << absl::StrFormat("%-58s %6s %8s %8s %8s %8s\n",
                         "measurements (error = measured/predicted - 1)", "rows", "median", "p90",
                         "max", "signed");
  auto row = [&](const std::string& name, const std::vector<double>& ratios) {
    const ErrorStats e = ErrorsOf(ratios);
    out << absl::StrFormat("%-58s %6d %7.1f%% %7.1f%% %7.1f%% %+7.1f%%\n", name, e.rows,
                           100 * e.median_abs, 100 * e.p90_abs, 100 * e.max_abs,
                           100 * e.median_signed);
  };
  for (const auto& [name, g] : groups) {
    row(name, g.ratios);
    if (g.misaligned.empty()) continue;
    row("  aligned (every leading dimension a multiple of 16 bytes)", g.aligned);
    row("  misaligned", g.misaligned);
    const std::vector<PairCheck> pairs = AlignmentPairs(g.rows, g.predicted_s);
    std::vector<double> pair_ratios;
    for (const PairCheck& p : pairs) pair_ratios.push_back(p.predicted_ratio / p.measured_ratio);
    row("  aligned/misaligned pairs (error of the predicted ratio)", pair_ratios);
    out << absl::StrFormat("    %d of %d pairs within 20%% of the measured ratio\n",
                           PairsWithin20(pairs), pairs.size());
  }
}

// `wavecrest calibrate --evaluate FILE[,FILE]`: the current calibration's errors on measurements,
// by source, GPU and dtype, split by alignment where some rows are misaligned, with the
// aligned/misaligned pairs' ratios (core/calibration.h, AlignmentPairs).
int DoEvaluate(const CliOptions& o, std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::vector<Measurement>> rows = ReadAll(o.evaluate, nullptr);
  if (!rows.ok()) return Fail(err, rows.status());
  std::map<std::string, EvaluationGroup> groups;
  nlohmann::json json_rows = nlohmann::json::array();
  for (const Measurement& m : *rows) {
    absl::StatusOr<const GpuSpec*> gpu = FindGpu(m.gpu);
    if (!gpu.ok()) return Fail(err, gpu.status());
    if (!(*gpu)->Supports(m.key.dtype)) continue;
    // What the row's method reports, as the model predicts it (XLA's table: the median of the
    // kernels it traced; core/calibration.h PredictAsMeasured), beside the GEMM's own time.
    const double predicted = PredictAsMeasured(**gpu, m);
    EvaluationGroup& g = groups[absl::StrCat(m.source, " ", m.gpu, " ", DTypeName(m.key.dtype))];
    g.ratios.push_back(m.median_s / predicted);
    (AlignedGemm(m.key) ? g.aligned : g.misaligned).push_back(m.median_s / predicted);
    g.predicted_s.push_back(predicted);
    g.rows.push_back(m);
    json_rows.push_back({{"source", m.source},
                         {"gpu", m.gpu},
                         {"gemm", GemmKeyString(m.key)},
                         {"aligned", AlignedGemm(m.key)},
                         {"measured_s", m.median_s},
                         {"predicted_s", predicted},
                         {"predicted_gemm_s", PredictGemmTime(**gpu, m.key)},
                         {"error", m.median_s / predicted - 1}});
  }
  if (o.format == "json") {
    WriteEvaluationJson(groups, json_rows, out);
  } else {
    WriteEvaluationTable(groups, out);
  }
  return 0;
}

// The fused-attention rows of every file in `files` (a comma list), appended to `rows`.
absl::Status ReadAttentionFiles(const std::string& files, const char* flag,
                                std::vector<AttentionMeasurement>& rows) {
  for (const std::string& f : Files(files)) {
    absl::StatusOr<std::vector<AttentionMeasurement>> r = ReadAttentionFile(f);
    if (!r.ok()) return FieldError(flag, r.status().message());
    rows.insert(rows.end(), r->begin(), r->end());
  }
  return absl::OkStatus();
}

// The GEMM rows (fit, anchors, checks) and time ratios of a calibration, with their labels.
absl::Status ReadGemmInputs(const CliOptions& o, CalibrateInputs& in) {
  absl::StatusOr<std::vector<Measurement>> fit = ReadAll(o.fit, &in.dataset_labels);
  if (!fit.ok()) return fit.status();
  in.fit_rows = std::move(*fit);
  absl::StatusOr<std::vector<Measurement>> anchors = ReadAll(o.anchor, &in.dataset_labels);
  if (!anchors.ok()) return anchors.status();
  in.anchor_rows = std::move(*anchors);
  absl::StatusOr<std::vector<Measurement>> checks = ReadAll(o.check, &in.dataset_labels);
  if (!checks.ok()) return checks.status();
  in.check_rows = std::move(*checks);
  for (const std::string& f : Files(o.ratios)) {
    std::ifstream file(f);
    std::stringstream text;
    text << file.rdbuf();
    if (!file) return absl::NotFoundError(absl::StrCat(f, ": cannot open"));
    absl::StatusOr<std::vector<TimeRatio>> r = ParseRatiosCsv(text.str(), f);
    if (!r.ok()) return r.status();
    in.dataset_labels.push_back(absl::StrCat(f, ": ", r->size(), " ratios"));
    in.ratios.insert(in.ratios.end(), r->begin(), r->end());
  }
  return absl::OkStatus();
}

// `wavecrest calibrate`: fit, cross-validate, report; with --out, write the calibration file.
int DoCalibrate(const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.evaluate.empty()) return DoEvaluate(o, out, err);
  if (o.folds < 2 || o.folds > 50) {
    return Fail(err, FieldError("--folds", absl::StrCat("must be in [2, 50]; got ", o.folds)));
  }
  // The fused-attention model's data: fitted, and held out.
  std::vector<AttentionMeasurement> attention, attention_checks;
  if (absl::Status st = ReadAttentionFiles(o.attention_data, "--attention_data", attention);
      !st.ok()) {
    return Fail(err, st);
  }
  if (absl::Status st =
          ReadAttentionFiles(o.attention_check, "--attention_check", attention_checks);
      !st.ok()) {
    return Fail(err, st);
  }
  if (o.fit.empty()) {
    // The attention report alone (nothing written to a calibration file).
    if (attention.empty()) {
      return Fail(err, FieldError("--fit", "nothing to calibrate: give --fit or --attention_data"));
    }
    const std::string report = absl::StrCat(
        "# wavecrest calibrate --fit= --attention_data ", o.attention_data, " --attention_check ",
        o.attention_check, "\n",
        CalibrateAttention(GpuCatalog(), attention, attention_checks, FitOptions()).report);
    if (!o.report.empty()) {
      if (absl::Status st = WriteFile(o.report, report); !st.ok()) return Fail(err, st);
    }
    out << report;
    return 0;
  }
  CalibrateInputs in;
  if (absl::Status st = ReadGemmInputs(o, in); !st.ok()) return Fail(err, st);
  in.attention_rows = std::move(attention);
  in.attention_checks = std::move(attention_checks);
  for (const std::string& f : Files(o.attention_data)) {
    in.dataset_labels.push_back(absl::StrCat(f, ": fused attention"));
  }
  for (const std::string& f : Files(o.attention_check)) {
    in.dataset_labels.push_back(absl::StrCat(f, ": fused attention, held out"));
  }
  FitOptions options;
  options.folds = o.folds;
  // Offline, the fit may take a minute: more starts and evaluations than the server's
  // self-calibration, so that the cross-validation folds land in the same minimum (with 3 x 1500
  // the H100 and H200 BF16 folds scattered: 150 and 153 of 168 pairs within 20%, 156 and 156
  // with 6 x 4000).
  options.max_evaluations = 4000;
  options.starts = 6;
  ProgressBar bar(true);
  CalibrateOutput result = Calibrate(in, options, [&](const std::string& what) {
    v1::Progress p;
    p.set_message(what);
    p.set_total(1);
    bar.Update(p);
  });
  bar.Clear();
  result.file.command =
      absl::StrCat("wavecrest calibrate --fit ", o.fit, " --anchor ", o.anchor, " --check ",
                   o.check, " --ratios ", o.ratios, " --attention_data ", o.attention_data,
                   " --attention_check ", o.attention_check, " --folds ", o.folds);
  if (!o.out.empty()) {
    if (absl::Status st = WriteFile(o.out, SerializeCalibration(result.file)); !st.ok()) {
      return Fail(err, st);
    }
  }
  if (!o.report.empty()) {
    if (absl::Status st = WriteFile(o.report, result.report); !st.ok()) return Fail(err, st);
  }
  out << result.report;
  return 0;
}

}  // namespace

namespace {

// --calibration FILE applied to the catalog (offline commands); 0, or the exit code.
int ApplyCalibrationFlag(const CliOptions& o, std::ostream& err) {
  if (o.calibration.empty()) return 0;
  std::ifstream file(o.calibration);
  std::stringstream text;
  text << file.rdbuf();
  absl::StatusOr<CalibrationFile> cal =
      file ? ParseCalibration(text.str())
           : absl::NotFoundError(absl::StrCat(o.calibration, ": cannot open"));
  std::vector<GpuSpec> catalog = GpuCatalog();
  absl::Status st = cal.ok() ? ApplyCalibration(*cal, catalog) : cal.status();
  if (!st.ok()) return Fail(err, FieldError("--calibration", st.message()));
  PublishCatalog(std::move(catalog));
  return 0;
}

// The flags every command shares: --server, --deadline, --format; 0, or the exit code.
int CheckCommonFlags(const CliOptions& o, std::ostream& err) {
  if (absl::StrContains(o.server, "://")) {
    return Fail(err, FieldError("--server",
                                absl::StrCat("host:port, without a scheme; got \"",
                                             o.server.substr(0, 80), "\" (for TLS add --tls_ca)")));
  }
  if (!(o.deadline_s >= 0) || o.deadline_s > 86400 * 7) {
    return Fail(err, FieldError("--deadline", absl::StrCat("seconds in [0, 604800] (0: derived "
                                                           "from the measuring budget); got ",
                                                           o.deadline_s)));
  }
  if (o.format != "table" && o.format != "json") {
    err << "wavecrest: --format: must be table or json; got \"" << o.format << "\"\n";
    return 2;
  }
  return 0;
}

int DoDevices(const CliOptions& o, bool json, std::ostream& out, std::ostream& err) {
  if (absl::Status st = NeedServer(o); !st.ok()) return Fail(err, st);
  absl::StatusOr<v1::ListDevicesResponse> r = ClientFor(o).ListDevices(o.internal);
  if (!r.ok()) return Fail(err, r.status());
  out << (json ? FormatJson(*r) + "\n" : FormatDevices(*r));
  return 0;
}

int DoHealth(const CliOptions& o, bool json, std::ostream& out, std::ostream& err) {
  if (absl::Status st = NeedServer(o); !st.ok()) return Fail(err, st);
  AdvisorClient client = ClientFor(o);
  const int not_serving = 10 + static_cast<int>(absl::StatusCode::kUnavailable);
  if (o.health_service_given) {  // one service: a probe's question (containers, workers)
    absl::StatusOr<std::string> h = client.Health(o.health_service);
    if (!h.ok()) return Fail(err, h.status());
    if (json) {
      out << nlohmann::json{{"service", o.health_service}, {"status", *h}}.dump() << "\n";
    } else {
      out << (o.health_service.empty() ? "(overall)" : o.health_service) << ": " << *h << "\n";
    }
    return *h == "SERVING" ? 0 : not_serving;
  }
  // Exit 0 only when all three are SERVING (answering and measuring); a load balancer's
  // question ("can it answer?") is --service=wavecrest.v1.Advisor.
  bool all_serving = true;
  nlohmann::json j;
  const std::pair<const char*, const char*> services[] = {
      {"", "overall"},
      {"wavecrest.v1.Advisor", "advisor"},
      {"wavecrest.v1.Advisor/measure", "measure"}};
  for (const auto& [service, key] : services) {
    absl::StatusOr<std::string> h = client.Health(service);
    if (!h.ok()) return Fail(err, h.status());
    j[key] = *h;
    if (!json) out << (*service ? service : "(overall)") << ": " << *h << "\n";
    all_serving &= *h == "SERVING";
  }
  if (json) out << j.dump() << "\n";
  return all_serving ? 0 : not_serving;
}

int DoExportMeasurements(const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (absl::Status st = NeedServer(o); !st.ok()) return Fail(err, st);
  v1::ExportMeasurementsRequest request;
  if (o.gpu_given) request.set_gpu(o.gpu);
  absl::StatusOr<std::string> csv = ClientFor(o).ExportMeasurements(request);
  if (!csv.ok()) return Fail(err, csv.status());
  if (o.out.empty()) {
    out << *csv;
  } else if (absl::Status st = WriteFile(o.out, *csv); !st.ok()) {
    return Fail(err, st);
  }
  return 0;
}

int DoRecalibrate(const CliOptions& o, bool json, std::ostream& out, std::ostream& err) {
  if (absl::Status st = NeedServer(o); !st.ok()) return Fail(err, st);
  v1::RecalibrateRequest request;
  if (o.gpu_given) request.set_gpu(o.gpu);
  request.set_min_rows(o.min_rows);
  absl::StatusOr<v1::RecalibrateResponse> r = ClientFor(o).Recalibrate(request);
  if (!r.ok()) return Fail(err, r.status());
  if (json) {
    out << FormatJson(*r) << "\n";
    return 0;
  }
  if (r->results().empty()) out << "no GPU measurements in the server's measurement store\n";
  for (const v1::RecalibrationResult& x : r->results()) {
    out << x.gpu() << " " << DTypeName(*FromProto(x.dtype())) << ": " << x.rows()
        << " measurements; "
        << (x.applied() ? absl::StrFormat("refitted, CV median error %.1f%%, p90 %.1f%%",
                                          100 * x.cv_median_error(), 100 * x.cv_p90_error())
                        : "not refitted (" + x.reason() + ")")
        << "\n";
  }
  return 0;
}

int RunCommand(const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (const int rc = ApplyCalibrationFlag(o, err); rc != 0) return rc;
  if (const int rc = CheckCommonFlags(o, err); rc != 0) return rc;
  const bool json = o.format == "json";
  if (o.command == "analyze") {
    absl::StatusOr<v1::AnalyzeResponse> r = DoAnalyze(o);
    if (!r.ok()) return Fail(err, r.status());
    out << (json ? FormatJson(*r) + "\n" : FormatAnalysis(*r));
    return 0;
  }
  if (o.command == "devices") return DoDevices(o, json, out, err);
  if (o.command == "health") return DoHealth(o, json, out, err);
  if (o.command == "time") return DoTime(o, out, err);
  if (o.command == "calibrate") return DoCalibrate(o, out, err);
  if (o.command == "export-measurements") return DoExportMeasurements(o, out, err);
  if (o.command == "recalibrate") return DoRecalibrate(o, json, out, err);
  if (o.command == "recommend") return DoRecommend(o, out, err);
  if (o.command == "sweep") return DoSweep(o, out, err);
  err << "wavecrest: unknown command \"" << o.command << "\" (try --help)\n";
  return 2;
}

}  // namespace

// Names, notes and messages come from the server or from a spec file, and either may hold escape
// sequences (a model named "\x1b]0;...\a" retitles the terminal). What a person reads passes
// through ForTerminal; JSON output stays JSON (its encoders escape every control character).
int RunCli(const CliOptions& o, std::ostream& out, std::ostream& err) {
  std::ostringstream command_out, command_err;
  const int rc = RunCommand(o, command_out, command_err);
  out << (o.format == "json" ? command_out.str() : ForTerminal(command_out.str()));
  err << ForTerminal(command_err.str());
  return rc;
}

}  // namespace wavecrest
