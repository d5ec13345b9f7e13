// The standard process_* metrics (as Prometheus client libraries export them: CPU seconds,
// resident and virtual memory, open and maximum file descriptors, start time), read from /proc
// at each scrape. prometheus-cpp does not provide them.
#ifndef WAVECREST_SERVER_PROCESS_METRICS_H_
#define WAVECREST_SERVER_PROCESS_METRICS_H_

#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace wavecrest {

class ProcessMetrics : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_PROCESS_METRICS_H_
