// Inside the CLI's rendering: the short names and parts that more than one format_*.cc file uses
// (format.cc, format_analysis.cc, format_step.cc).
#ifndef WAVECREST_CLIENT_FORMAT_INTERNAL_H_
#define WAVECREST_CLIENT_FORMAT_INTERNAL_H_

#include <string>

#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {

// "TN", "NN", "NT" ("?" for an unset layout).
std::string LayoutShort(v1::Layout l);
// "bf16", "fp16", "fp32", "tf32", "fp8" ("?" for an unset dtype).
std::string DtypeShort(v1::Dtype d);

// "memory per GPU 47.6 GiB of 80 (estimate): weights 4.2, gradients 8.5, optimizer 12.7,
// activations 22.2", with the gathered ZeRO-3 unit, the host's share and the KV cache when there.
std::string MemoryParts(const v1::MemoryEstimate& m);
// Whether the estimate fits, in words: "fits"; past the share of the GPU the plan leaves to the
// model but within the GPU, where published layouts that ran reach ("past the 90% ..."); or
// "does NOT fit" beyond the GPU.
std::string FitWords(const v1::MemoryEstimate& m);
// Past that share but within the GPU.
bool PastMarginWithinGpu(const v1::MemoryEstimate& m);

// The run's answer line: the step when it fits; a run as given that does not fit is not an
// answer, and the plan that fits (layouts[0]) is said instead; a layout search's table after.
std::string RunAnswer(const v1::AnalyzeResponse& r);

}  // namespace wavecrest

#endif  // WAVECREST_CLIENT_FORMAT_INTERNAL_H_
