// Request handling of the unary RPCs (service/advisor_logic.h): what a bad request is told.
#include "service/advisor_logic.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/errors.h"

namespace wavecrest {
namespace {

TEST(AdvisorLogicTest, EveryBadFieldIsAViolation) {
  v1::AnalyzeRequest req;
  req.mutable_model()->set_hidden_size(-1);
  req.mutable_model()->set_num_layers(100000);
  req.mutable_model()->set_dtype(static_cast<v1::Dtype>(77));
  auto r = HandleAnalyze(req);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  auto v = ViolationsOf(r.status());
  std::vector<std::string> fields;
  for (auto& f : v) fields.push_back(f.field);
  EXPECT_THAT(fields, ::testing::IsSupersetOf({"model.hidden_size", "model.num_layers",
                                               "model.dtype", "model.vocab_size", "gpu"}));
}

}  // namespace
}  // namespace wavecrest
