// What a gRPC request may cost before the service knows who sent it.
//
// The Advisor's methods are registered raw (server/advisor_service.h): gRPC hands the service the
// request's bytes, and the service checks the caller's token (server/auth.h) before it parses
// them. gRPC's own handlers parse first: 160 unauthenticated 4 MiB messages of empty repeated
// submessages took a server to 2.4 GiB before one token was read. Parsing is bounded too, for
// callers with a token: a method's request has a size limit of its own, and its wire form is
// walked (without building anything) for how many values it holds and how deep its messages
// nest before protobuf builds it, as core/json_limits.h does for JSON.
#ifndef WAVECREST_SERVER_REQUEST_GATE_H_
#define WAVECREST_SERVER_REQUEST_GATE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "grpcpp/support/byte_buffer.h"

namespace wavecrest {

struct WireLimits {
  int64_t max_bytes = int64_t{4} << 20;
  int max_depth = 32;  // messages inside messages (a request needs 4)
  // Fields in the whole message, a packed element or an empty submessage each counting one; the
  // largest request (4096 GEMMs of 7 fields) has about 33k.
  int64_t max_values = 100'000;
};

// The limits of `method`'s request ("Analyze", "ListDevices"): requests that carry no model or
// list (ListDevices, ListModels, ClearQuarantine, Recalibrate, ExportMeasurements) take 64 KiB,
// the rest up to `max_request_bytes` (--max_request_bytes, which gRPC enforces on every call).
WireLimits RequestLimitsFor(absl::string_view method, int64_t max_request_bytes);

// OK when the wire form of a `type` message in `bytes` keeps within `limits`; INVALID_ARGUMENT
// naming the limit otherwise. Malformed bytes are left to the parser. Linear in the bytes.
absl::Status CheckWireLimits(absl::string_view bytes, const google::protobuf::Descriptor& type,
                             const WireLimits& limits);

// The request of `method` ("Analyze") from its bytes: the limits checked, then parsed.
// INVALID_ARGUMENT naming the method ("/wavecrest.v1.Advisor/Analyze") when it is over a limit or
// is not that message.
absl::Status ParseRequest(const grpc::ByteBuffer& in, absl::string_view method,
                          const WireLimits& limits, google::protobuf::Message* out);

// A response's bytes.
absl::Status SerializeResponse(const google::protobuf::Message& message, grpc::ByteBuffer* out);

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_REQUEST_GATE_H_
