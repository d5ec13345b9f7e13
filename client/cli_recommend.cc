// `wavecrest recommend`: the request from the model and the constraint flags, answered offline
// (predicted) or through --server, shown as the table, JSON, or one candidate exported.
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/cli_commands.h"
#include "client/format.h"
#include "core/hf_import.h"
#include "core/recommend.h"
#include "core/status_macros.h"
#include "service/convert.h"
#include "service/errors.h"
#include "service/recommend_logic.h"
#include "service/spec_io.h"

namespace wavecrest {
namespace cli {
namespace {

// --export N|best: the candidate it names among those shown, or a violation of --export.
absl::StatusOr<const v1::Candidate*> PickCandidate(const v1::RecommendResponse& r,
                                                   const std::string& which) {
  const v1::Candidate* pick = nullptr;
  int rank = -1;
  if (which == "best") {
    for (const v1::Candidate& c : r.candidates()) {
      if (pick == nullptr && c.beats_baseline()) pick = &c;
    }
    if (pick == nullptr) {
      return FieldError("--export",
                        absl::StrCat("best: no candidate beats the baseline (",
                                     VerdictName(r.verdict()), ": ", r.verdict_reason(), ")"));
    }
  } else if (!absl::SimpleAtoi(which, &rank) || rank < 0) {
    return FieldError("--export", absl::StrCat("\"", which, "\": a rank of the table or best"));
  } else {
    for (const v1::Candidate& c : r.candidates()) {
      if (rank == 0 ? c.baseline() : c.rank() == rank) pick = &c;
    }
  }
  if (pick == nullptr) {
    return FieldError("--export", absl::StrCat("no candidate ranked ", rank, " among the ",
                                               r.candidates_size(), " shown (--top shows more)"));
  }
  return pick;
}

// After an export over a Hugging Face config: the config's keys it rewrote, and what they say of
// the shape (a key such as Llama 4's intermediate_size carries the shared expert's width too).
void SayWhatChanged(const v1::RecommendResponse& r, const v1::Candidate& pick,
                    const std::string& model_path, const std::vector<std::string>& changed,
                    std::ostream& err) {
  std::string shape;
  for (const v1::Candidate& c : r.candidates()) {
    if (c.baseline()) shape = ShapeChanges(c.model(), pick.model());
  }
  err << "exported #" << pick.rank() << " over " << model_path << ": "
      << (changed.empty() ? std::string("no field changed")
                          : absl::StrCat("changed ", absl::StrJoin(changed, ", ")))
      << (shape.empty() ? "" : absl::StrCat(" (", shape, ")")) << "\n";
}

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
  absl::StatusOr<const v1::Candidate*> pick = PickCandidate(r, o.export_pick);
  if (!pick.ok()) return Fail(err, pick.status());
  std::string base;
  if (o.export_format == "hf") {
    absl::StatusOr<std::string> text = ReadFile(o.model, kMaxSpecFileBytes);
    if (text.ok() && LooksLikeHfConfig(*text)) base = *std::move(text);
  }
  std::vector<std::string> changed;
  absl::StatusOr<std::string> text = ExportModel((*pick)->model(), o.export_format, base, &changed);
  if (!text.ok()) return Fail(err, FieldError("--export-format", text.status().message()));
  out << *text;
  if (!base.empty()) SayWhatChanged(r, **pick, o.model, changed, err);
  return 0;
}

// The numbers of a comma-separated list flag appended through `add`; a violation of `flag` for
// one that is not a number.
template <typename Add>
absl::Status AddNumbers(const std::string& list, const char* flag, Add add) {
  for (absl::string_view d : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    int64_t x = 0;
    if (!absl::SimpleAtoi(d, &x)) return FieldError(flag, absl::StrCat("not a number: ", d));
    add(x);
  }
  return absl::OkStatus();
}

// The Recommend request the flags ask for (the model with its overrides, the constraints).
absl::StatusOr<v1::RecommendRequest> RecommendRequestFromFlags(const CliOptions& o) {
  v1::RecommendRequest request;
  ASSIGN_OR_RETURN(*request.mutable_model(), LoadSpecWithOverrides(o));
  request.set_gpu(o.gpu);
  ASSIGN_OR_RETURN(const v1::Mode mode, ParseMode(o.mode));
  request.set_mode(mode);
  request.set_param_tolerance(o.param_tolerance);
  for (absl::string_view k : absl::StrSplit(o.vary, ',', absl::SkipWhitespace())) {
    absl::StatusOr<Knob> knob = ParseKnob(k);
    if (!knob.ok()) return FieldError("--vary", knob.status().message());
    request.add_vary(ToProto(*knob));
  }
  RETURN_IF_ERROR(AddNumbers(o.allowed_head_dims, "--allowed-head-dims",
                             [&](int64_t x) { request.add_allowed_head_dims(x); }));
  RETURN_IF_ERROR(AddNumbers(o.tp_options, "--tp-options",
                             [&](int64_t x) { request.add_tensor_parallel_options(x); }));
  request.set_min_heads(o.min_heads);
  request.set_max_heads(o.max_heads);
  request.set_keep_layers(o.keep_layers);
  request.set_kv_heads_divisible_by_tp(o.kv_divisible);
  request.set_head_dim_multiple(o.head_dim_multiple);
  request.set_max_candidates(o.max_candidates);
  request.set_top(o.top);
  request.set_measure_top_k(o.measure_top_k);
  request.set_max_gpu_seconds(o.max_gpu_seconds);
  return request;
}

// The answer, offline (no measuring) or from --server's stream, its progress on `bar`.
absl::StatusOr<v1::RecommendResponse> Recommend(const CliOptions& o,
                                                const v1::RecommendRequest& request,
                                                ProgressBar& bar) {
  if (o.server.empty()) {
    if (request.mode() == v1::MODE_MEASURED) {
      return FieldError("--mode", "measured needs --server (a server with a GPU worker)");
    }
    CallContext ctx;
    ctx.progress = [&](const v1::Progress& p) { bar.Update(p); };
    ctx.no_measure_reason = "offline (no --server)";
    return RunRecommend(request, ctx);
  }
  v1::RecommendResponse final;
  absl::Status st = ClientFor(o).Recommend(request, [&](const v1::RecommendResponse& m) {
    if (m.done()) {
      final = m;
    } else {
      bar.Update(m.progress());
    }
  });
  if (!st.ok()) return st;
  return final;
}

}  // namespace

int DoRecommend(const CliOptions& o, std::ostream& out, std::ostream& err) {
  absl::StatusOr<v1::RecommendRequest> request = RecommendRequestFromFlags(o);
  if (!request.ok()) return Fail(err, request.status());
  const bool json = o.format == "json";
  ProgressBar bar(!json);
  absl::StatusOr<v1::RecommendResponse> result = Recommend(o, *request, bar);
  bar.Clear();
  if (!result.ok()) return Fail(err, result.status());
  result->clear_progress();
  if (!o.export_pick.empty()) return ExportCandidate(*result, o, out, err);
  out << (json ? FormatJson(*result) + "\n" : FormatRecommendation(*result));
  return 0;
}

}  // namespace cli
}  // namespace wavecrest
