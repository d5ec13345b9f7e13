// The CLI's rendering of a Recommend answer: the verdict, the header (the legality the rows bear
// out, what was assumed and held), the candidates' table and their reasons.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/format.h"
#include "client/table.h"

namespace wavecrest {

absl::string_view VerdictName(v1::Verdict v) {
  switch (v) {
    case v1::VERDICT_KEEP:
      return "KEEP";
    case v1::VERDICT_CHANGE:
      return "CHANGE";
    case v1::VERDICT_NO_CANDIDATES:
      return "NO CANDIDATES";
    default:
      return "UNKNOWN";
  }
}

namespace {
// Layers with local attention: sliding_window_layers, 0 meaning all of them when there is a
// window.
int64_t LocalLayers(const v1::ModelSpec& m) {
  if (m.sliding_window() == 0) return 0;
  return m.sliding_window_layers() > 0 ? m.sliding_window_layers() : m.num_layers();
}
}  // namespace

std::string ShapeChanges(const v1::ModelSpec& from, const v1::ModelSpec& to) {
  std::vector<std::string> out;
  auto arrow = [&](absl::string_view what, int64_t a, int64_t b) {
    if (a != b) out.push_back(absl::StrCat(what, " ", a, " → ", b));
  };
  const bool moe = to.num_experts() > 0;
  arrow("h", from.hidden_size(), to.hidden_size());
  arrow("heads", from.num_attention_heads(), to.num_attention_heads());
  arrow("kv heads", from.num_kv_heads(), to.num_kv_heads());
  arrow("head dim", from.head_dim(), to.head_dim());
  arrow(moe ? "expert width f" : "f", from.ffn_hidden_size(), to.ffn_hidden_size());
  arrow("shared expert width", from.shared_expert_ffn_hidden_size(),
        to.shared_expert_ffn_hidden_size());
  arrow("dense MLP width", from.dense_ffn_hidden_size(), to.dense_ffn_hidden_size());
  arrow("experts", from.num_experts(), to.num_experts());
  arrow("top-k", from.experts_per_token(), to.experts_per_token());
  arrow("v", from.vocab_size(), to.vocab_size());
  arrow("L", from.num_layers(), to.num_layers());
  arrow("local-attention layers", LocalLayers(from), LocalLayers(to));
  arrow("first dense layers", from.first_dense_layers(), to.first_dense_layers());
  return absl::StrJoin(out, ", ");
}

namespace {

// The tensor-parallel degrees a row meets, as the table's TP column says them ("1,2,4,8"; "-" none).
std::string LegalColumn(const v1::Candidate& c) {
  return c.tensor_parallel_legal().empty() ? "-" : absl::StrJoin(c.tensor_parallel_legal(), ",");
}

// The candidates' table: the shape, the architecture's own columns when a candidate has them
// (experts and top-k, the shared experts' width, the layers with local attention: each moves with
// f or L), the figures.
std::string CandidateTable(const v1::RecommendResponse& r) {
  bool decode = false, experts = false, shared = false, local = false;
  for (const v1::Candidate& c : r.candidates()) {
    decode |= c.time_per_output_token_s() > 0;
    experts |= c.model().num_experts() > 0;
    shared |= c.model().shared_expert_ffn_hidden_size() > 0;
    local |= c.model().sliding_window() > 0;
  }
  std::vector<std::string> header = {"rank", "", "h", "a", "a_kv", "d", "f", "v", "L"};
  if (experts) header.push_back("E/k");
  if (shared) header.push_back("shared");
  if (local) header.push_back("local");
  header.insert(header.end(), {"params", "Δparams", "step", "tok/s/GPU"});
  if (decode) header.insert(header.end(), {"TPOT", "MBU"});
  header.insert(header.end(), {"speedup", "MFU", "TP", "source"});
  Table t(header);
  for (const v1::Candidate& c : r.candidates()) {
    const v1::ModelSpec& m = c.model();
    std::vector<std::string> row = {absl::StrCat(c.rank()),
                                    c.baseline() ? "base" : (c.beats_baseline() ? "beats" : ""),
                                    absl::StrCat(m.hidden_size()),
                                    absl::StrCat(m.num_attention_heads()),
                                    absl::StrCat(m.num_kv_heads()),
                                    absl::StrCat(m.head_dim()),
                                    absl::StrCat(m.ffn_hidden_size()),
                                    absl::StrCat(m.vocab_size()),
                                    absl::StrCat(m.num_layers())};
    if (experts) row.push_back(absl::StrCat(m.num_experts(), "/", m.experts_per_token()));
    if (shared) row.push_back(absl::StrCat(m.shared_expert_ffn_hidden_size()));
    if (local) row.push_back(absl::StrCat(LocalLayers(m)));
    row.insert(row.end(), {HumanCount(c.params().total_params()),
                           absl::StrFormat("%+.2f%%", 100 * c.param_change()),
                           HumanSeconds(c.step_time_s()),
                           HumanCount(c.tokens_per_second_per_gpu())});
    if (decode) {
      row.push_back(HumanSeconds(c.time_per_output_token_s()));
      row.push_back(absl::StrFormat("%.1f%%", 100 * c.memory_bandwidth_utilization()));
    }
    row.insert(row.end(),
               {c.speedup_uncertainty() > 0
                    ? absl::StrFormat("%.3fx±%.3f", c.speedup(), c.speedup_uncertainty())
                    : absl::StrFormat("%.3fx", c.speedup()),
                absl::StrFormat("%.1f%%", 100 * c.mfu()), LegalColumn(c),
                // A row the measuring budget reached only in part says how much was measured.
                c.source() == v1::SOURCE_PREDICTED && c.measured_share() > 0
                    ? absl::StrFormat("%.0f%% measured", 100 * c.measured_share())
                    : std::string(SourceName(c.source()))});
    t.Add(std::move(row));
  }
  return t.Render();
}

// What every candidate held of the baseline (the same model) and what --vary released, as two
// lines, or none for an answer without them (an older server).
std::string HeldLines(const v1::RecommendResponse& r) {
  std::vector<std::string> held, released;
  for (const v1::HeldProperty& h : r.held()) {
    (h.released() ? released : held).push_back(absl::StrCat(h.name(), " (", h.description(), ")"));
  }
  std::string out;
  if (!held.empty()) {
    absl::StrAppend(&out, "held (the same model; --vary NAME releases one): ",
                    absl::StrJoin(held, "; "), "\n");
  }
  if (!released.empty()) {
    absl::StrAppend(&out, "released by --vary: ", absl::StrJoin(released, "; "), "\n");
  }
  return out;
}

// The header's claim of legality, as the rows bear it out: ", each legal for tensor parallelism 1,
// 2 (why)"; where the baseline breaks degrees the request named, which rows meet which.
std::string LegalityClaim(const v1::RecommendResponse& r) {
  if (r.tensor_parallel_degrees().empty()) return "";
  const std::string degrees = absl::StrJoin(r.tensor_parallel_degrees(), ", ");
  const std::string why =
      r.tensor_parallel_source().empty() ? "" : absl::StrCat(" (", r.tensor_parallel_source(), ")");
  std::vector<std::string> short_rows;
  bool rows_known = false;  // an older server leaves tensor_parallel_legal empty
  for (const v1::Candidate& c : r.candidates()) {
    rows_known |= !c.tensor_parallel_legal().empty();
    if (c.tensor_parallel_legal_size() < r.tensor_parallel_degrees_size()) {
      short_rows.push_back(absl::StrCat("#", c.rank(), c.baseline() ? " (the baseline)" : "",
                                        " only for ", LegalColumn(c)));
    }
  }
  if (!rows_known || short_rows.empty()) {
    return absl::StrCat(", each legal for tensor parallelism ", degrees, why);
  }
  return absl::StrCat(", legal for tensor parallelism ", degrees, why, " except ",
                      absl::StrJoin(short_rows, ", "), " (the TP column)");
}

}  // namespace

std::string FormatRecommendation(const v1::RecommendResponse& r) {
  std::string out;
  if (r.verdict() != v1::VERDICT_UNSPECIFIED) {
    absl::StrAppend(&out, "verdict: ", VerdictName(r.verdict()), ": ", r.verdict_reason(), "\n");
  }
  absl::StrAppendFormat(&out, "%d candidates considered on %s", r.candidates_considered(), r.gpu());
  if (r.shapes_examined() > r.candidates_considered()) {
    absl::StrAppendFormat(&out, " (the closest in parameters of %d shapes examined)",
                          r.shapes_examined());
  }
  absl::StrAppend(&out, LegalityClaim(r), "\n");
  if (r.has_assumed()) {
    absl::StrAppend(&out, "assumes: ", r.assumed().summary(),
                    "; each row is one rank's kernels\n");
  }
  if (!r.speedup_basis().empty()) absl::StrAppend(&out, "speed-up compares ", r.speedup_basis(), "\n");
  absl::StrAppend(&out, HeldLines(r));
  absl::StrAppend(&out, "\n");
  absl::StrAppend(&out, CandidateTable(r), "\nwhy:\n");
  for (const v1::Candidate& c : r.candidates()) {
    if (c.reasons().empty()) continue;
    absl::StrAppend(&out, "  #", c.rank(), c.baseline() ? " (baseline)" : "", ": ",
                    absl::StrJoin(c.reasons(), "; "), "\n");
  }
  if (!r.refusals().empty()) {
    absl::StrAppend(&out, "refused while generating candidates:\n");
    for (const v1::Refusal& x : r.refusals()) {
      absl::StrAppend(&out, "  ", x.count(), " ", x.unit(), ": ", x.description(), " (loosen with ",
                      x.loosen_with(), ")\n");
    }
  }
  for (const auto& n : r.notes()) absl::StrAppend(&out, "note: ", n, "\n");
  return out;
}

}  // namespace wavecrest
