// A sweep as an SVG line plot (the paper's figures): throughput against the varied dimension,
// legal points joined, each point marked filled when it breaks none of the paper's rules and
// hollow when it breaks some, the predicted band shaded. Self-contained, no scripts.
#ifndef WAVECREST_CLIENT_SVG_H_
#define WAVECREST_CLIENT_SVG_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {

std::string SweepSvg(const v1::SweepResponse& r, absl::string_view dimension,
                     absl::string_view title);

// Tick values for an axis over [lo, hi]: about `target` round numbers (1, 2, 5 × 10^k steps).
std::vector<double> NiceTicks(double lo, double hi, int target);

}  // namespace wavecrest

#endif  // WAVECREST_CLIENT_SVG_H_
