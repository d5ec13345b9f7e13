// Named inter-node networks (`--network`): what one GPU's NIC moves across nodes, and whether the
// switches reduce in the network (SHARP). A run without one uses its GPU's reference system
// (GpuSpec::link, gpu_catalog.cc).
#ifndef WAVECREST_CORE_NETWORK_H_
#define WAVECREST_CORE_NETWORK_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace wavecrest {

struct NetworkProfile {
  std::string name;             // "ndr-ib"
  double gbits_per_gpu = 0;     // one direction, one NIC per GPU
  bool in_network_reduction = false;  // SHARP: all-reduces across nodes reduced by the switches
  std::string source;           // the datasheet the rate comes from
};

// Every profile, in the order `--help` and the dashboard list them.
const std::vector<NetworkProfile>& NetworkProfiles();

// The profile of that name; InvalidArgument naming the field and the allowed names otherwise.
absl::StatusOr<const NetworkProfile*> FindNetwork(absl::string_view name);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_NETWORK_H_
