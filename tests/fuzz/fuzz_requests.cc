// libFuzzer target: protobuf request bytes of each RPC -> the wire limits (server/request_gate.h),
// then validation and conversion to the core, as the server runs them (no network). The first
// byte picks the RPC.
#include <cstddef>
#include <cstdint>

#include "server/advisor_service.h"
#include "server/request_gate.h"
#include "server/timing_service.h"
#include "service/advisor_logic.h"
#include "service/recommend_logic.h"
#include "service/timing_logic.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t which = data[0] % 3;
  ++data;
  --size;
  const int n = static_cast<int>(size);
  // What the service parses only after the wire walk let it through.
  auto within = [&](const google::protobuf::Message& m) {
    return wavecrest::CheckWireLimits(
               absl::string_view(reinterpret_cast<const char*>(data), size), *m.GetDescriptor(),
               wavecrest::WireLimits{})
        .ok();
  };
  switch (which) {
    case 0: {
      wavecrest::v1::AnalyzeRequest r;
      if (!within(r) || !r.ParseFromArray(data, n)) return 0;
      (void)wavecrest::HandleAnalyze(r);
      break;
    }
    case 1: {
      wavecrest::v1::TimeGemmsRequest r;
      if (!within(r) || !r.ParseFromArray(data, n)) return 0;
      static wavecrest::TimingService timing(nullptr, nullptr, nullptr);
      (void)wavecrest::AcceptTimeGemms(r, timing);
      break;
    }
    case 2: {
      wavecrest::v1::RecommendRequest r;
      if (!within(r) || !r.ParseFromArray(data, n)) return 0;
      (void)wavecrest::ConstraintsFromRequest(r);
      (void)wavecrest::SpecFromRequest(r.model(), "model.");
      break;
    }
  }
  return 0;
}
