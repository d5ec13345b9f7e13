// Errors as values (service/errors.h): field violations and retry delays survive the trip through
// a gRPC status and back.
#include "service/errors.h"

#include "gtest/gtest.h"

namespace wavecrest {
namespace {

TEST(ErrorsTest, RoundTripThroughGrpcStatus) {
  absl::Status st = InvalidArgumentWithViolations({{"a", "bad"}, {"b", "worse"}}, "x.");
  st = WithRetryDelay(st, absl::Milliseconds(250), "TEST");
  absl::Status back = FromGrpcStatus(ToGrpcStatus(st));
  EXPECT_EQ(back.code(), absl::StatusCode::kInvalidArgument);
  ASSERT_EQ(ViolationsOf(back).size(), 2u);
  EXPECT_EQ(ViolationsOf(back)[1].field, "x.b");
  EXPECT_EQ(RetryDelayOf(back), absl::Milliseconds(250));
}

TEST(ErrorsTest, StatusCodeNamesAreAbseilsAndUnknownForOthers) {
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::OK), "OK");
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::UNAUTHENTICATED), "UNAUTHENTICATED");
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::DO_NOT_USE), "UNKNOWN");  // -1: no code Abseil names
}

}  // namespace
}  // namespace wavecrest
