#include "server/request_gate.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/slice.h"
#include "service/errors.h"

namespace wavecrest {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

constexpr const char* kSmallRequests[] = {"ListDevices", "ListModels", "ClearQuarantine",
                                          "Recalibrate", "ExportMeasurements"};

// Walks one message's fields (a group's when `group`), counting into `values`. Returns false at
// a limit (with `*why`); malformed bytes end the walk quietly, for the parser to refuse.
class WireWalker {
 public:
  WireWalker(absl::string_view bytes, const WireLimits& limits)
      : in_(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size())),
        limits_(limits) {
    in_.SetRecursionLimit(limits.max_depth + 1);
  }

  absl::Status Walk(const Descriptor* type, int depth) {
    if (depth > limits_.max_depth) {
      return absl::InvalidArgumentError(absl::StrCat(
          "messages nest deeper than ", limits_.max_depth, " levels; a request needs 4"));
    }
    while (true) {
      const uint32_t tag = in_.ReadTag();
      if (tag == 0) return absl::OkStatus();  // the end, or bytes the parser refuses
      const auto wire = WireFormatLite::GetTagWireType(tag);
      if (wire == WireFormatLite::WIRETYPE_END_GROUP) return absl::OkStatus();
      RETURN_IF_ERROR(Count(1));
      const FieldDescriptor* field =
          type == nullptr ? nullptr
                          : type->FindFieldByNumber(WireFormatLite::GetTagFieldNumber(tag));
      bool ok = true;
      switch (wire) {
        case WireFormatLite::WIRETYPE_VARINT: {
          uint64_t v;
          ok = in_.ReadVarint64(&v);
          break;
        }
        case WireFormatLite::WIRETYPE_FIXED64:
          ok = in_.Skip(8);
          break;
        case WireFormatLite::WIRETYPE_FIXED32:
          ok = in_.Skip(4);
          break;
        case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
          absl::Status st = LengthDelimited(field, depth, &ok);
          if (!st.ok()) return st;
          break;
        }
        case WireFormatLite::WIRETYPE_START_GROUP: {
          const Descriptor* inner = field != nullptr && field->type() == FieldDescriptor::TYPE_GROUP
                                        ? field->message_type()
                                        : nullptr;
          RETURN_IF_ERROR(Walk(inner, depth + 1));
          break;
        }
        default:
          ok = false;
      }
      if (!ok) return absl::OkStatus();
    }
  }

 private:
  absl::Status Count(int64_t n) {
    values_ += n;
    if (values_ > limits_.max_values) {
      return absl::InvalidArgumentError(
          absl::StrCat("the message has more than ", limits_.max_values, " values"));
    }
    return absl::OkStatus();
  }

  // A submessage is walked; a packed field counts an element per byte (at most; a varint is at
  // least one); strings, bytes and unknown fields are skipped.
  absl::Status LengthDelimited(const FieldDescriptor* field, int depth, bool* ok) {
    uint32_t length = 0;
    if (!in_.ReadVarint32(&length)) {
      *ok = false;
      return absl::OkStatus();
    }
    if (field != nullptr && field->type() == FieldDescriptor::TYPE_MESSAGE) {
      const CodedInputStream::Limit limit = in_.PushLimit(static_cast<int>(length));
      RETURN_IF_ERROR(Walk(field->message_type(), depth + 1));
      *ok = in_.BytesUntilLimit() == 0;
      in_.PopLimit(limit);
      return absl::OkStatus();
    }
    if (field != nullptr && field->is_repeated() && field->is_packable()) {
      RETURN_IF_ERROR(Count(length));
    }
    *ok = in_.Skip(static_cast<int>(length));
    return absl::OkStatus();
  }

  CodedInputStream in_;
  const WireLimits& limits_;
  int64_t values_ = 0;
};

}  // namespace

WireLimits RequestLimitsFor(absl::string_view method, int64_t max_request_bytes) {
  WireLimits l;
  l.max_bytes = max_request_bytes;
  for (const char* small : kSmallRequests) {
    if (method == small) l.max_bytes = std::min<int64_t>(max_request_bytes, 64 << 10);
  }
  return l;
}

absl::Status CheckWireLimits(absl::string_view bytes, const Descriptor& type,
                             const WireLimits& limits) {
  if (static_cast<int64_t>(bytes.size()) > limits.max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the message has ", bytes.size(), " bytes; this method takes at most ", limits.max_bytes));
  }
  return WireWalker(bytes, limits).Walk(&type, 0);
}

absl::Status ParseRequest(const grpc::ByteBuffer& in, absl::string_view method,
                          const WireLimits& limits, google::protobuf::Message* out) {
  const std::string name = absl::StrCat("/wavecrest.v1.Advisor/", method);
  if (static_cast<int64_t>(in.Length()) > limits.max_bytes) {
    return FieldError("request",
                      absl::StrCat(name, ": the message has ", in.Length(),
                                   " bytes; this method takes at most ", limits.max_bytes));
  }
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (in.Valid() && in.Dump(&slices).ok()) {
    bytes.reserve(in.Length());
    for (const grpc::Slice& s : slices) {
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  slices.clear();
  if (absl::Status st = CheckWireLimits(bytes, *out->GetDescriptor(), limits); !st.ok()) {
    return FieldError("request", absl::StrCat(name, ": ", st.message()));
  }
  if (!out->ParseFromString(bytes)) {
    return FieldError("request", absl::StrCat("the body does not parse as the request message of ",
                                              name, " (truncated, or another message's bytes)"));
  }
  return absl::OkStatus();
}

absl::Status SerializeResponse(const google::protobuf::Message& message, grpc::ByteBuffer* out) {
  bool own_buffer = false;
  out->Clear();
  const grpc::Status st =
      grpc::SerializationTraits<google::protobuf::Message>::Serialize(message, out, &own_buffer);
  if (st.ok()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(
      "could not serialize a ", message.GetDescriptor()->full_name(), ": ", st.error_message()));
}

}  // namespace wavecrest
