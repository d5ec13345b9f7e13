#include "core/network.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace wavecrest {

const std::vector<NetworkProfile>& NetworkProfiles() {
  // One NIC per GPU, as NVIDIA's reference systems and the RoCE clusters of the published runs
  // (8 x 200 Gb/s = "1600 Gbps node-node", MosaicML's A100 tables) have them.
  static const std::vector<NetworkProfile> kProfiles = {
      {"hdr-ib", 200, false,
       "InfiniBand HDR, ConnectX-6 200 Gb/s per GPU (NVIDIA DGX A100 datasheet: 8 single-port "
       "ConnectX-6)"},
      {"ndr-ib", 400, false,
       "InfiniBand NDR, ConnectX-7 400 Gb/s per GPU (NVIDIA DGX H100 datasheet: 8 ConnectX-7 "
       "ports at 400 Gb/s)"},
      {"ndr-ib-sharp", 400, true,
       "InfiniBand NDR with SHARP in-network reduction (NVIDIA Quantum-2 switches, SHARPv3)"},
      {"xdr-ib", 800, false,
       "InfiniBand XDR, ConnectX-8 SuperNIC 800 Gb/s per GPU (NVIDIA ConnectX-8 datasheet)"},
      {"roce-100g", 100, false, "RoCE, one 100 GbE port per GPU"},
      {"roce-200g", 200, false, "RoCE, one 200 GbE port per GPU (8 x 200 Gb/s per node)"},
      {"roce-400g", 400, false,
       "RoCE, one 400 GbE port per GPU (ConnectX-7 / BlueField-3, Spectrum-X)"},
      {"roce-800g", 800, false, "RoCE, one 800 GbE port per GPU (ConnectX-8, Spectrum-X)"},
  };
  return kProfiles;
}

absl::StatusOr<const NetworkProfile*> FindNetwork(absl::string_view name) {
  std::string allowed;
  for (const NetworkProfile& p : NetworkProfiles()) {
    if (p.name == name) return &p;
    absl::StrAppend(&allowed, allowed.empty() ? "" : ", ", p.name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown value \"", name, "\"; allowed: ", allowed));
}

}  // namespace wavecrest
