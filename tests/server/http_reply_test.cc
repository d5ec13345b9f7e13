// The HTTP gateway's replies (server/http_reply.h): the HTTP status each gRPC code becomes, the
// JSON error body (valid JSON whatever the status holds), and the protobuf JSON mapping.
#include "server/http_reply.h"

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "service/errors.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

TEST(HttpReplyTest, StatusCodesMapAsGrpcGatewayMapsThem) {
  using C = absl::StatusCode;
  EXPECT_EQ(HttpStatusFor(C::kOk), 200);
  EXPECT_EQ(HttpStatusFor(C::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusFor(C::kFailedPrecondition), 400);
  EXPECT_EQ(HttpStatusFor(C::kOutOfRange), 400);
  EXPECT_EQ(HttpStatusFor(C::kUnauthenticated), 401);
  EXPECT_EQ(HttpStatusFor(C::kPermissionDenied), 403);
  EXPECT_EQ(HttpStatusFor(C::kNotFound), 404);
  EXPECT_EQ(HttpStatusFor(C::kAlreadyExists), 409);
  EXPECT_EQ(HttpStatusFor(C::kAborted), 409);
  EXPECT_EQ(HttpStatusFor(C::kResourceExhausted), 429);
  EXPECT_EQ(HttpStatusFor(C::kCancelled), 499);
  EXPECT_EQ(HttpStatusFor(C::kUnimplemented), 501);
  EXPECT_EQ(HttpStatusFor(C::kUnavailable), 503);
  EXPECT_EQ(HttpStatusFor(C::kDeadlineExceeded), 504);
  EXPECT_EQ(HttpStatusFor(C::kInternal), 500);
  EXPECT_EQ(HttpStatusFor(C::kDataLoss), 500);
  EXPECT_EQ(HttpStatusFor(C::kUnknown), 500);
}

TEST(HttpReplyTest, AnErrorBodyCarriesTheCodeMessageViolationsAndRetry) {
  absl::Status st = InvalidArgumentWithViolations(
      {{"hidden_size", "must be positive"}, {"gpu", "unknown"}}, "model.");
  nlohmann::json body = nlohmann::json::parse(ErrorBody(st));
  const nlohmann::json& e = body.at("error");
  EXPECT_EQ(e.at("code"), "INVALID_ARGUMENT");
  ASSERT_EQ(e.at("field_violations").size(), 2u);
  EXPECT_EQ(e["field_violations"][0]["field"], "model.hidden_size");
  EXPECT_EQ(e["field_violations"][1]["description"], "unknown");
  EXPECT_FALSE(e.contains("retry_after_s"));

  st = WithRetryDelay(absl::UnavailableError("queue full"), absl::Milliseconds(1500), "TEST");
  body = nlohmann::json::parse(ErrorBody(st));
  EXPECT_EQ(body["error"]["code"], "UNAVAILABLE");
  EXPECT_EQ(body["error"]["message"], "queue full");
  EXPECT_DOUBLE_EQ(body["error"]["retry_after_s"].get<double>(), 1.5);
  EXPECT_FALSE(body["error"].contains("field_violations"));
}

TEST(HttpReplyTest, AnErrorBodyIsValidJsonWhateverBytesTheMessageHolds) {
  const std::string hostile = std::string("bad \xff\xfe byte, \"quote\", \x01 and \n newline");
  const std::string text = ErrorBody(absl::InvalidArgumentError(hostile));
  nlohmann::json body;
  ASSERT_NO_THROW(body = nlohmann::json::parse(text)) << text;
  EXPECT_THAT(body["error"]["message"].get<std::string>(), HasSubstr("quote"));
  EXPECT_EQ(text.find('\n'), std::string::npos) << "one line: " << text;
}

TEST(HttpReplyTest, JsonKeepsTheProtoFieldNamesBothWays) {
  v1::AnalyzeRequest q;
  q.set_gpu("h100-sxm");
  q.mutable_model()->set_hidden_size(4096);
  const std::string text = ToJson(q);
  EXPECT_THAT(text, HasSubstr("\"hidden_size\""));  // not hiddenSize
  v1::AnalyzeRequest back;
  ASSERT_TRUE(FromJson(text, &back).ok());
  EXPECT_EQ(back.gpu(), "h100-sxm");
  EXPECT_EQ(back.model().hidden_size(), 4096);
}

TEST(HttpReplyTest, AnEmptyBodyIsTheDefaultMessageAndAnUnknownFieldAnError) {
  v1::AnalyzeRequest q;
  q.set_gpu("set before");
  EXPECT_TRUE(FromJson("  \n", &q).ok());
  EXPECT_EQ(q.gpu(), "set before");  // nothing parsed, nothing changed

  const absl::Status st = FromJson(R"({"gpu": "a", "no_such_field": 1})", &q);
  ASSERT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  const std::vector<FieldViolation> why = ViolationsOf(st);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_EQ(why[0].field, "body");
  EXPECT_THAT(why[0].description, HasSubstr("AnalyzeRequest"));
}

}  // namespace
}  // namespace wavecrest
