// `time --layers`: the model's layers timed whole, beside the planner's sum of their parts and the
// layer program's price (core/layer_emulation.h), with the model's stack of them.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/format.h"
#include "client/table.h"

namespace wavecrest {

namespace {

bool IsWholeLayer(const v1::LayerTiming& l) {
  return l.shape().kind() == v1::LAYER_KIND_TRANSFORMER;
}

std::string Source(const v1::LayerTiming& l) {
  const v1::Provenance& p = l.provenance();
  std::string source = SourceName(p.source());
  if (!l.sum_of_parts_reason().empty()) absl::StrAppend(&source, " sum of parts");
  if (p.source() == v1::SOURCE_PREDICTED && p.error_band_p90() > p.error_band_p10()) {
    absl::StrAppend(&source, absl::StrFormat(" (%+.0f%%..%+.0f%%)", 100 * p.error_band_p10(),
                                             100 * p.error_band_p90()));
  }
  absl::StrAppend(&source, StorageNote(p.storage()));
  return source;
}

std::string Ratio(double a, double b) { return b > 0 && a > 0 ? absl::StrFormat("%.3f", a / b) : "-"; }

// The model's layers, each kind times its count: the layers' share of a step, and the planner's.
std::string StackLine(const std::vector<v1::LayerTiming>& layers) {
  int64_t count = 0;
  double time = 0, sum = 0;
  std::string terms;
  for (const v1::LayerTiming& l : layers) {
    if (!IsWholeLayer(l) || l.model_layers() <= 0) continue;
    count += l.model_layers();
    time += static_cast<double>(l.model_layers()) * l.time_s();
    sum += static_cast<double>(l.model_layers()) * l.predicted_sum_s();
    absl::StrAppend(&terms, terms.empty() ? "" : " + ", l.model_layers(), " × #", l.index());
  }
  if (count == 0) return "";
  return absl::StrFormat(
      "stack: the model's %d layers = %s = %s per step on this rank (the planner's sum of parts "
      "%s: layers/sum %.3f)\n",
      count, terms, HumanSeconds(time), HumanSeconds(sum), sum > 0 ? time / sum : 0.0);
}

// The planner against the layer program where it misses most: MoE layers and long context.
std::string PlannerGaps(const std::vector<v1::LayerTiming>& layers) {
  std::string out;
  for (const v1::LayerTiming& l : layers) {
    const v1::ModelSpec& m = l.shape().layer();
    const bool moe = m.num_experts() > 0;
    const bool long_context = m.seq_length() >= 32768 || m.kv_cache_length() >= 32768;
    if (!(moe || long_context) || l.predicted_program_s() <= 0 || l.predicted_sum_s() <= 0) continue;
    const double gap = l.predicted_sum_s() / l.predicted_program_s() - 1;
    absl::StrAppendFormat(
        &out,
        "planner gap #%d (%s): the planner prices it %s, %+.1f%% against its layer program "
        "(emulated %s)%s\n",
        l.index(),
        moe            ? "MoE layer"
        : IsWholeLayer(l) ? "long-context layer"
                          : "long-context attention",
        HumanSeconds(l.predicted_sum_s()),
        100 * gap, HumanSeconds(l.predicted_program_s()),
        l.provenance().source() == v1::SOURCE_MEASURED || l.provenance().source() == v1::SOURCE_CACHED
            ? absl::StrFormat("; measured %s, %+.1f%%", HumanSeconds(l.time_s()),
                              100 * (l.predicted_sum_s() / l.time_s() - 1))
            : "");
  }
  return out;
}

}  // namespace

std::string FormatLayerTimings(const std::vector<v1::LayerTiming>& layers) {
  Table t({"#", "layers", "role", "time", "TFLOP/s", "sum of parts", "layer/sum", "program/sum",
           "samples", "spread", "source", "layer"});
  std::string reasons;
  for (const v1::LayerTiming& l : layers) {
    const v1::TimingStats& s = l.stats();
    t.Add({absl::StrCat(l.index()), l.model_layers() > 0 ? absl::StrCat(l.model_layers()) : "-",
           l.role().empty() ? "-" : l.role(), HumanSeconds(l.time_s()),
           absl::StrFormat("%.1f", l.tflops()), HumanSeconds(l.predicted_sum_s()),
           Ratio(l.time_s(), l.predicted_sum_s()),
           Ratio(l.predicted_program_s(), l.predicted_sum_s()),
           s.samples() > 0 ? absl::StrCat(s.samples()) : "-",
           s.samples() > 0 ? absl::StrFormat("%.2f%%", 100 * s.relative_spread()) : "-", Source(l),
           l.key()});
    if (!l.sum_of_parts_reason().empty()) {
      absl::StrAppend(&reasons, "#", l.index(), " is its predicted sum of parts: ",
                      l.sum_of_parts_reason(), "\n");
    }
  }
  return t.Render() + reasons + StackLine(layers) + PlannerGaps(layers) +
         "sum of parts: the planner's GEMMs, fused attention and elementwise estimate of the layer; "
         "layer/sum < 1 means the layer ran faster whole than predicted in parts; program/sum: the "
         "layer's program priced kernel by kernel (an emulating worker's time) against it\n";
}

}  // namespace wavecrest
