// The gRPC request gate (server/request_gate.h): what a message's bytes may hold before protobuf
// builds it, per method.
#include "server/request_gate.h"

#include <string>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

grpc::ByteBuffer Bytes(const std::string& s) {
  grpc::Slice slice(s);
  return grpc::ByteBuffer(&slice, 1);
}

TEST(RequestGateTest, AWellFormedRequestParsesAndCountsItsValues) {
  v1::TimeGemmsRequest q;
  q.set_gpu("h100-sxm");
  for (int i = 0; i < 100; ++i) q.add_gemms()->set_m(64 + i);
  const std::string bytes = q.SerializeAsString();
  WireLimits l;
  EXPECT_TRUE(CheckWireLimits(bytes, *q.GetDescriptor(), l).ok());
  l.max_values = 200;  // 1 + 100 GEMMs of 2 values each (the entry and its m)
  EXPECT_THAT(CheckWireLimits(bytes, *q.GetDescriptor(), l).message(),
              HasSubstr("more than 200 values"));
  l.max_values = 201;
  EXPECT_TRUE(CheckWireLimits(bytes, *q.GetDescriptor(), l).ok());
  v1::TimeGemmsRequest back;
  ASSERT_TRUE(ParseRequest(Bytes(bytes), "TimeGemms", WireLimits{}, &back).ok());
  EXPECT_EQ(back.gemms_size(), 100);
}

// 2 MB of empty repeated submessages: two bytes each on the wire, a message object each once
// parsed. Refused on the count before anything is built; so are the same bytes as an unknown
// field, and nesting past the depth.
TEST(RequestGateTest, EmptyRepeatedMessagesAndDeepNestingAreRefusedBeforeParsing) {
  v1::TimeGemmsRequest q;
  const int gemms_field = q.GetDescriptor()->FindFieldByName("gemms")->number();
  std::string empties;
  for (int i = 0; i < 1'000'000; ++i) empties += {static_cast<char>(gemms_field << 3 | 2), 0};
  v1::TimeGemmsRequest out;
  absl::Status st = ParseRequest(Bytes(empties), "TimeGemms", WireLimits{}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("/wavecrest.v1.Advisor/TimeGemms"));
  EXPECT_THAT(st.message(), HasSubstr("more than 100000 values"));
  EXPECT_EQ(out.gemms_size(), 0);
  // The same as an unknown field (1000, length-delimited: a two-byte tag), which protobuf keeps.
  std::string unknown;
  for (int i = 0; i < 1'000'000; ++i) unknown.append("\xc2\x3e\x00", 3);
  EXPECT_THAT(CheckWireLimits(unknown, *q.GetDescriptor(), WireLimits{}).message(),
              HasSubstr("more than 100000 values"));
  // Unknown groups of field 1000 inside each other, 40 deep.
  std::string groups;
  for (int i = 0; i < 40; ++i) groups += "\xc3\x3e";  // field 1000, start group
  for (int i = 0; i < 40; ++i) groups += "\xc4\x3e";  // field 1000, end group
  EXPECT_THAT(CheckWireLimits(groups, *q.GetDescriptor(), WireLimits{}).message(),
              HasSubstr("nest deeper than 32"));
}

TEST(RequestGateTest, SmallMethodsTakeSmallMessagesAndBadBytesNameTheMethod) {
  EXPECT_EQ(RequestLimitsFor("ListDevices", 4 << 20).max_bytes, 64 << 10);
  EXPECT_EQ(RequestLimitsFor("Analyze", 4 << 20).max_bytes, 4 << 20);
  v1::ListDevicesRequest d;
  absl::Status st = ParseRequest(Bytes(std::string(70 << 10, '\0')), "ListDevices",
                                 RequestLimitsFor("ListDevices", 4 << 20), &d);
  EXPECT_THAT(st.message(), HasSubstr("this method takes at most 65536"));
  v1::AnalyzeRequest a;
  st = ParseRequest(Bytes(std::string("\x0a\xff\xff\xff\x0f", 5)), "Analyze", WireLimits{}, &a);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("does not parse as the request message of "
                                      "/wavecrest.v1.Advisor/Analyze"));
}

TEST(RequestGateTest, ResponsesSerializeToTheirBytes) {
  v1::ListDevicesResponse r;
  r.set_cache_entries(7);
  grpc::ByteBuffer out;
  ASSERT_TRUE(SerializeResponse(r, &out).ok());
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(out.Dump(&slices).ok());
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  v1::ListDevicesResponse back;
  ASSERT_TRUE(back.ParseFromString(bytes));
  EXPECT_EQ(back.cache_entries(), 7);
}

}  // namespace
}  // namespace wavecrest
