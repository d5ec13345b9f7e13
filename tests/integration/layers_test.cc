// `wavecrest time --model M --layers` end to end for every example family: a real wavecrest-server
// with one emulating wavecrest-worker (the analytic backend, so it runs anywhere), asked through
// the CLI. Every family answers with its attention and its whole layer: timed whole as the layer
// program the GPU engine runs (emulated here), or its predicted sum of parts saying why.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/hf_import.h"
#include "core/model_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/process.h"

namespace wavecrest {
namespace {

using testing::BinaryPath;
using ::testing::HasSubstr;
using testing::ServerUnderTest;
using testing::Shell;
using testing::TempDir;

class LayersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    server_ = new ServerUnderTest({"--workers=1", "--worker_backend=analytic",
                                   "--worker_socket_dir=" + dir_->File("sockets")});
    ASSERT_TRUE(server_->WaitReady()) << server_->Log();
    ASSERT_TRUE(server_->WaitHealth("wavecrest.v1.Advisor/measure", "SERVING"));
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  static std::string Time(const std::string& model, const std::string& flags) {
    return absl::StrCat(BinaryPath("client/wavecrest"), " time --server ", server_->address(),
                        " --gpu h100-sxm --layers --model ", model, " ", flags, " 2>&1");
  }
  static TempDir* dir_;
  static ServerUnderTest* server_;
};
TempDir* LayersTest::dir_ = nullptr;
ServerUnderTest* LayersTest::server_ = nullptr;

std::vector<std::string> ExampleConfigs() {
  std::vector<std::string> files;
  for (const auto& f : std::filesystem::directory_iterator(
           std::string(WAVECREST_SOURCE_DIR) + "/examples/models/hf")) {
    if (f.path().extension() == ".json") files.push_back(f.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

int64_t Int(const nlohmann::json& j) {  // proto3 JSON writes int64 as a string
  return j.is_string() ? std::stoll(j.get<std::string>()) : j.get<int64_t>();
}

// Every transformer family: its attention and its whole layer; a hybrid: its attention layers.
TEST_F(LayersTest, EveryExampleFamilyAnswersWithItsAttentionAndItsWholeLayer) {
  const std::vector<std::string> files = ExampleConfigs();
  ASSERT_GE(files.size(), 25u);
  int whole = 0, summed = 0, hybrids = 0;
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<ModelSpec> spec = ImportHfConfig(text.str());
    ASSERT_TRUE(spec.ok()) << spec.status();
    auto [code, out] = Shell(Time(file, "--format json"));
    ASSERT_EQ(code, 0) << out;
    const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << out;
    ASSERT_FALSE(j["layers"].empty()) << out;
    int attention = 0, layers = 0;
    int64_t model_layers = 0;
    for (const nlohmann::json& l : j["layers"]) {
      const std::string kind = l["shape"]["kind"];
      const bool is_layer = kind == "LAYER_KIND_TRANSFORMER";
      attention += is_layer ? 0 : 1;
      layers += is_layer ? 1 : 0;
      if (is_layer) model_layers += Int(l["model_layers"]);
      EXPECT_GT(l["time_s"].get<double>(), 0) << l["key"];
      EXPECT_GT(l["predicted_sum_s"].get<double>(), 0) << l["key"];
      EXPECT_EQ(l["provenance"]["source"], "SOURCE_PREDICTED");
      // Timed whole as its program (the emulating worker's price), or the sum of parts with why.
      const std::string why = l["sum_of_parts_reason"];
      if (why.empty()) {
        ++whole;
        EXPECT_DOUBLE_EQ(l["time_s"].get<double>(), l["predicted_program_s"].get<double>());
        EXPECT_THAT(l["provenance"]["method"].get<std::string>(),
                    HasSubstr("emulated layer program"));
      } else {
        ++summed;
        EXPECT_DOUBLE_EQ(l["time_s"].get<double>(), l["predicted_sum_s"].get<double>());
      }
    }
    EXPECT_GE(attention, 1);
    if (!spec->hybrid_pattern.empty()) {
      // A hybrid's attention layers are timed; its Mamba-2 and MoE blocks are not, and the
      // answer says so.
      EXPECT_EQ(layers, 0);
      EXPECT_THAT(j["notes"].dump(), HasSubstr("the whole layer is not timed: a hybrid model"));
      ++hybrids;
      continue;
    }
    EXPECT_GE(layers, 1);
    // The whole layers stand for every layer of the model.
    EXPECT_EQ(model_layers, spec->num_layers);
  }
  EXPECT_EQ(hybrids, 1);  // Nemotron 3 Nano
  // The emulating worker times the programs whole; only what exceeds its memory is summed.
  EXPECT_GT(whole, 4 * summed);
}

TEST_F(LayersTest, LocalGlobalStackAndMoeRoutingInWords) {
  const std::string hf = std::string(WAVECREST_SOURCE_DIR) + "/examples/models/hf/";
  auto [code, out] = Shell(Time(hf + "gemma-3-27b.json", ""));
  ASSERT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("window1024"));
  EXPECT_THAT(out, HasSubstr(" local "));
  EXPECT_THAT(out, HasSubstr(" global "));
  EXPECT_THAT(out, HasSubstr("stack: the model's 62 layers = 52 × #2 + 10 × #3"));
  auto [code2, moe] = Shell(Time(hf + "mixtral-8x7b.json", "--routing zipf:1.2"));
  ASSERT_EQ(code2, 0) << moe;
  EXPECT_THAT(moe, HasSubstr("moe8x2 zipf1.2"));
  // The planner's price of the MoE layer against its program, as a number.
  EXPECT_THAT(moe, HasSubstr("planner gap #1 (MoE layer): the planner prices it"));
  auto [code3, bad] = Shell(Time(hf + "mixtral-8x7b.json", "--routing counts:1,2"));
  EXPECT_NE(code3, 0);
  EXPECT_THAT(bad, HasSubstr("2 counts for a layer of 8 experts"));
}

}  // namespace
}  // namespace wavecrest
