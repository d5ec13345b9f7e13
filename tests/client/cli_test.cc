// The CLI's commands run in-process (no server): output, JSON mapping and exit codes.
#include "client/cli.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/format.h"
#include "core/hf_import.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "service/advisor_logic.h"
#include "service/errors.h"
#include "tests/test_paths.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::SourcePath;

struct CliRun {
  int code;
  std::string out, err;
};

CliRun Cli(CliOptions o) {
  std::ostringstream out, err;
  int code = RunCli(o, out, err);
  return {code, out.str(), err.str()};
}

TEST(CliTest, AnalyzeTableShowsGemmsTotalsAndRules) {
  CliOptions o;
  o.command = "analyze";
  o.model = SourcePath("examples/models/pythia-2.8b.json");
  o.gpu = "a100-sxm-80gb";
  o.attention = "unfused";
  CliRun r = Cli(o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("attn_score"));
  EXPECT_THAT(r.out, HasSubstr("wgrad"));
  EXPECT_THAT(r.out, HasSubstr("2.78B total (2775208960)"));
  EXPECT_THAT(r.out, HasSubstr("h/a = 80: largest power-of-two factor 16 < 64"));
  EXPECT_THAT(r.out, HasSubstr("; hurts attn_score"));
  EXPECT_THAT(r.out, HasSubstr("PREDICTED"));
}

// analyze with a run: the step's components in a table, and a run the model cannot have named by
// its field; JSON carries the same breakdown.
TEST(CliTest, AnalyzeWithARunBreaksTheStepDown) {
  CliOptions o;
  o.command = "analyze";
  o.model = SourcePath("examples/models/llama-3-70b.json");
  o.gpu = "h100-sxm";
  o.tp = 8;
  o.pp = 4;
  o.gpus = 64;
  o.global_batch = 1024;
  o.recompute = "selective";
  CliRun r = Cli(o);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part : {"training step on 64 GPUs (8 nodes): t=8 p=4 d=2", "TP communication",
                           "pipeline bubble", "DP communication", "optimizer", "assumes:",
                           "512 micro-batches per data-parallel rank", ", micro-batch 1;"}) {
    EXPECT_THAT(r.out, HasSubstr(part));
  }
  // The model file gives its micro-batch; --micro-batch 2 halves the micro-batches and says so.
  o.micro_batch = 2;
  r = Cli(o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("256 micro-batches per data-parallel rank"));
  EXPECT_THAT(r.out, HasSubstr(", micro-batch 2;"));
  o.micro_batch = 0;
  o.format = "json";
  r = Cli(o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"pp_bubble_s\""));
  o.format = "table";
  o.gpus = 60;
  r = Cli(o);
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("run.num_gpus"));
  o.gpus = 64;
  o.recompute = "some";
  r = Cli(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--recompute"));
  // Context parallelism and activation offload: their components, the host memory, and the GPUs
  // t·p·c·d.
  o.recompute = "";
  o.seq = 32768;
  o.cp = 2;
  o.gpus = 128;
  o.global_batch = 64;
  o.offload_activations = true;
  r = Cli(o);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part : {"t=8 c=2", "training step on 128 GPUs (16 nodes): t=8 p=4 c=2 d=2",
                           "CP communication", "activation offload", "activations offloaded",
                           "on the host", "context parallelism over 2 ranks"}) {
    EXPECT_THAT(r.out, HasSubstr(part));
  }
  o.gpus = 96;  // not a multiple of t·p·c = 64
  r = Cli(o);
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("context_parallel (64)"));
}

// Expert parallelism from the command line: Mixtral with its experts over 8 ranks of 64 GPUs, the
// all-to-alls in the step, whole experts under tensor parallelism, and a split the run cannot have.
TEST(CliTest, AnalyzeSplitsExpertsOverExpertParallelRanks) {
  CliOptions o;
  o.command = "analyze";
  o.model = SourcePath("examples/models/hf/mixtral-8x7b.json");
  o.gpu = "h100-sxm";
  o.seq = 4096;
  o.ep = 8;
  o.gpus = 64;
  CliRun r = Cli(o);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part : {"e=8", "training step on 64 GPUs (8 nodes): t=1 p=1 d=64 (e=8 of them)",
                           "EP all-to-all", "expert parallelism over 8 ranks: 1 of 8 experts"}) {
    EXPECT_THAT(r.out, HasSubstr(part));
  }
  o.tp = 2;
  o.etp = 1;
  r = Cli(o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("whole experts"));
  o.etp = 0;
  o.gpus = 8;  // d = 4: 8 expert-parallel ranks cannot split over the 4 data-parallel ones
  r = Cli(o);
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("expert_parallel: must divide"));
}

// `calibrate --fit=` with attention data: the attention report alone (the fit, its
// cross-validation, the catalog's constants beside it); a bad file is named with its field.
TEST(CliTest, CalibrateReportsTheAttentionFitAlone) {
  CliOptions o;
  o.command = "calibrate";
  o.fit = "";
  o.attention_data = SourcePath("data/measurements/fa3-h100-cudnn-attention.csv");
  o.attention_check = SourcePath("data/measurements/cudnn-fe-h200-prefill.csv");
  CliRun r = Cli(o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("h100-sxm bf16: 48 rows (fa3-paper-cudnn)"));
  EXPECT_THAT(r.out, HasSubstr("each length left out"));
  EXPECT_THAT(r.out, HasSubstr("flash_block_overhead"));
  EXPECT_THAT(r.out, HasSubstr("forward causal d128"));
  EXPECT_THAT(r.out, HasSubstr("Held-out checks"));       // the default --attention_check file
  o.attention_data = SourcePath("data/measurements/mamf.csv");  // a GEMM file: the wrong header
  r = Cli(o);
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("--attention_data"));
  EXPECT_THAT(r.err, HasSubstr("header"));
  o.attention_data = "";
  r = Cli(o);
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("nothing to calibrate"));
}

// `calibrate --evaluate`: how a held-back sweep is scored. Errors by source, GPU and dtype, split
// by alignment, the pairs and how many are within 20%; XLA's FP8 NN rows on Hopper are predicted as
// the table times them (the median of the transpose and GEMM kernels); JSON has each row.
TEST(CliTest, CalibrateEvaluateScoresAHeldBackFile) {
  const std::string dir = ::testing::TempDir() + "/evaluate_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string sweep = dir + "/sweep.csv";
  {
    std::ifstream in(SourcePath("data/measurements/h100-torch-gemm-sweep.csv"));
    std::ofstream out(sweep);
    std::string line;
    // The comment (device, method), the header, and the TN 8192 x n x 4096 rows.
    for (int i = 0; std::getline(in, line); ++i) {
      if (i < 2 || line.find(",8192,40") != std::string::npos) out << line << "\n";
    }
  }
  CliOptions o;
  o.command = "calibrate";
  o.evaluate = sweep;
  CliRun r = Cli(o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("torch-gemm-sweep h100-sxm bf16"));
  EXPECT_THAT(r.out, HasSubstr("  misaligned"));
  EXPECT_THAT(r.out, HasSubstr("aligned/misaligned pairs (error of the predicted ratio)"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("[0-9]+ of [0-9]+ pairs within 20% of the measured "
                                               "ratio"));
  o.format = "json";
  r = Cli(o);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& g = j["groups"]["torch-gemm-sweep h100-sxm bf16"];
  ASSERT_TRUE(g.contains("pairs_within_20_percent"));
  EXPECT_LE(g["pairs_within_20_percent"].get<int>(), static_cast<int>(g["pairs"].size()));
  EXPECT_GT(g["pairs"].size(), 5u);

  // An XLA FP8 row on H100 (NN: a transpose and the GEMM): the figure is their mean.
  const std::string xla = dir + "/xla.csv";
  {
    std::ifstream in(SourcePath("data/measurements/xla-gemm-perf-table.csv"));
    std::ofstream out(xla);
    std::string line;
    for (int i = 0; std::getline(in, line); ++i) {
      if (i < 2 || (line.find(",h100-sxm,fp8_e4m3,") != std::string::npos &&
                    line.find(",NN,4096,4096,4096,1,") != std::string::npos)) {
        out << line << "\n";
      }
    }
  }
  o.evaluate = xla;
  r = Cli(o);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json x = nlohmann::json::parse(r.out);
  ASSERT_FALSE(x["rows"].empty());
  for (const nlohmann::json& row : x["rows"]) {
    EXPECT_LT(row["predicted_s"].get<double>(), row["predicted_gemm_s"].get<double>());
    EXPECT_LT(std::abs(row["error"].get<double>()), 0.5) << row.dump();
  }
  std::filesystem::remove_all(dir);
}

TEST(CliTest, AnalyzeJsonIsTheProtoMappingWithOverrides) {
  CliOptions o;
  o.command = "analyze";
  o.model = SourcePath("examples/models/hf/llama-2-7b.json");
  o.gpu = "h100-sxm";
  o.seq = 4096;
  o.micro_batch = 2;
  o.tp = 2;
  o.format = "json";
  CliRun r = Cli(o);
  ASSERT_EQ(r.code, 0) << r.err;
  v1::AnalyzeResponse resp;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &resp).ok()) << r.out;
  EXPECT_EQ(resp.model().seq_length(), 4096);
  EXPECT_EQ(resp.model().micro_batch_size(), 2);
  EXPECT_EQ(resp.model().tensor_parallel(), 2);
  EXPECT_EQ(resp.params().total_params(), 6'738'415'616);
  ASSERT_GT(resp.gemms_size(), 0);
  EXPECT_EQ(resp.gemms(0).gemm().name(), "qkv");
  EXPECT_EQ(resp.gemms(0).gemm().shape().m(), 8192);      // b·s
  EXPECT_EQ(resp.gemms(0).gemm().shape().n(), 3 * 2048);  // 3h/t
  EXPECT_EQ(resp.provenance().source(), v1::SOURCE_PREDICTED);
  // Field names as the issue asks: m, n, k, batch; params named *_params.
  EXPECT_THAT(r.out, HasSubstr("\"m\": \"8192\""));
  EXPECT_THAT(r.out, HasSubstr("\"total_params\""));
}

TEST(CliTest, BadInputGivesOneLineAndExitCode) {
  CliOptions o;
  o.command = "analyze";
  o.model = SourcePath("examples/models/pythia-2.8b.json");
  o.tp = 3;
  CliRun r = Cli(o);
  EXPECT_EQ(r.code, 10 + 3);  // INVALID_ARGUMENT
  EXPECT_THAT(r.err, HasSubstr("model.tensor_parallel: must divide num_attention_heads (32)"));

  o.tp = 0;
  o.gpu = "tpu";
  r = Cli(o);
  EXPECT_EQ(r.code, 10 + 5);  // NOT_FOUND
  EXPECT_THAT(r.err, HasSubstr("known: v100-sxm2"));

  o.gpu = "v100-sxm2";  // bf16 is not a V100 tensor-core type
  r = Cli(o);
  EXPECT_EQ(r.code, 10 + 9);  // FAILED_PRECONDITION

  o.gpu = "h100-sxm";
  o.dtype = "int3";
  r = Cli(o);
  EXPECT_EQ(r.code, 13);
  EXPECT_THAT(r.err, HasSubstr("dtype"));

  o.dtype = "";
  o.model = "/nonexistent.json";
  r = Cli(o);
  EXPECT_EQ(r.code, 2);  // a --model that cannot be read is a command-line problem
  EXPECT_THAT(r.err, HasSubstr("--model: /nonexistent.json"));

  o.model = "";
  r = Cli(o);
  EXPECT_THAT(r.err, HasSubstr("--model"));

  o.model = SourcePath("examples/models/pythia-2.8b.json");
  o.format = "yaml";
  EXPECT_EQ(Cli(o).code, 2);
  o.format = "table";
  o.command = "frobnicate";
  EXPECT_EQ(Cli(o).code, 2);
}

TEST(CliTest, DecodeWorkloadFromFlag) {
  CliOptions o;
  o.command = "analyze";
  o.model = SourcePath("examples/models/llama-3-8b.json");
  o.workload = "decode";
  o.micro_batch = 8;
  o.format = "json";
  CliRun r = Cli(o);
  ASSERT_EQ(r.code, 0) << r.err;
  v1::AnalyzeResponse resp;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &resp).ok());
  for (const auto& g : resp.gemms()) EXPECT_EQ(g.gemm().pass(), v1::PASS_FORWARD);
  EXPECT_EQ(resp.gemms(0).gemm().shape().m(), 8);
}

}  // namespace
}  // namespace wavecrest

namespace wavecrest {
namespace {

// Hostile files as --model: each is a one-line error (exit 2 for a path that cannot be read as a
// spec file, 13 for content that is not a spec), never a crash or a hang.
TEST(CliTest, HostileModelFilesAreClearErrorsNotCrashesOrHangs) {
  const std::string dir = ::testing::TempDir() + "/wavecrest-cli-hostile";
  std::filesystem::create_directories(dir);
  // An HF config whose hidden_size nests 100000 arrays (a stack overflow in the error message's
  // JSON dump before).
  {
    std::ofstream f(dir + "/deep.json");
    f << "{\"model_type\": \"llama\", \"hidden_size\": " << std::string(100000, '[')
      << std::string(100000, ']') << "}";
  }
  mkfifo((dir + "/fifo.json").c_str(), 0600);
  struct Case {
    std::string path, text;
    int code;
  } cases[] = {
      {dir + "/deep.json", "deeper than 32 levels", 13}, {dir, "is a directory", 2},
      {dir + "/fifo.json", "not a regular file", 2},     {"/dev/zero", "not a regular file", 2},
      {dir + "/missing.json", "No such file", 2},
  };
  for (const Case& c : cases) {
    CliOptions o;
    o.command = "analyze";
    o.model = c.path;
    CliRun r = Cli(o);
    EXPECT_EQ(r.code, c.code) << c.path << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.text)) << c.path;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  std::filesystem::remove_all(dir);
}

// Escape sequences in a model's name (from a file or a server) reach the terminal escaped: a raw
// ESC could retitle the terminal, move the cursor or rewrite what was printed before.
TEST(CliTest, ControlCharactersInNamesAreEscapedNotPrinted) {
  const std::string path = ::testing::TempDir() + "/wavecrest-cli-escape.json";
  std::ofstream(path) << R"({"name": "\u001b]0;pwned\u0007\u001b[2Jevil\u009b1m", "hidden_size": 2560,
                               "num_attention_heads": 32, "num_layers": 32, "vocab_size": 50304})";
  CliOptions o;
  o.command = "analyze";
  o.model = path;
  o.gpu = "h100-sxm";
  CliRun r = Cli(o);
  std::string both = r.out + r.err;
  // A name with control characters is refused, and the refusal does not print them.
  EXPECT_EQ(r.code, 13) << both;
  EXPECT_THAT(both, HasSubstr("no control characters"));
  EXPECT_EQ(both.find('\x1b'), std::string::npos) << both.substr(0, 300);
  EXPECT_EQ(both.find('\x07'), std::string::npos);
  std::filesystem::remove(path);
  // What the service echoes back (an unknown GPU name) is escaped, not printed raw.
  o.model = SourcePath("examples/models/pythia-2.8b.json");
  o.gpu = "\x1b]0;pwned\x07\x1b[2Jevil\xc2\x9b" "1m";
  r = Cli(o);
  both = r.out + r.err;
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(both.find('\x1b'), std::string::npos) << both.substr(0, 300);
  EXPECT_EQ(both.find('\x07'), std::string::npos);
  EXPECT_EQ(both.find("\xc2\x9b"), std::string::npos);  // C1 CSI
  EXPECT_THAT(both, HasSubstr("\\x1b]0;pwned\\x07"));
}

// `recommend --export N`: the candidate alone, as a config.json that imports back as that shape,
// or as a wavecrest spec; a rank not shown names the flag.
TEST(CliTest, RecommendExportsACandidateAsAConfigOrASpec) {
  CliOptions o;
  o.command = "recommend";
  o.model = SourcePath("examples/models/hf/gpt2.json");
  o.gpu = "h100-sxm";
  o.format = "json";
  CliRun all = Cli(o);
  ASSERT_EQ(all.code, 0) << all.err;
  const nlohmann::json ranked = nlohmann::json::parse(all.out);
  nlohmann::json first;
  for (const auto& c : ranked["candidates"]) {
    if (!c.value("baseline", false) && c["rank"] == 1) first = c["model"];
  }
  ASSERT_FALSE(first.is_null());
  o.format = "table";
  o.export_pick = "1";
  CliRun hf = Cli(o);
  ASSERT_EQ(hf.code, 0) << hf.err;
  absl::StatusOr<ModelSpec> back = ImportHfConfig(hf.out);
  ASSERT_TRUE(back.ok()) << back.status() << hf.out;
  EXPECT_EQ(std::to_string(back->vocab_size), first["vocab_size"].get<std::string>());
  EXPECT_EQ(std::to_string(back->num_attention_heads),
            first["num_attention_heads"].get<std::string>());
  o.export_format = "wavecrest";
  CliRun spec = Cli(o);
  ASSERT_EQ(spec.code, 0) << spec.err;
  EXPECT_EQ(nlohmann::json::parse(spec.out)["vocab_size"], first["vocab_size"]);
  o.export_pick = "0";  // the baseline
  EXPECT_THAT(Cli(o).out, HasSubstr("\"vocab_size\": \"50257\""));
  o.export_pick = "999";
  CliRun none = Cli(o);
  EXPECT_NE(none.code, 0);
  EXPECT_THAT(none.err, HasSubstr("--export"));
  o.export_pick = "best";  // GPT-2: the first that beats the baseline pads the vocabulary only
  o.export_format = "hf";
  CliRun best = Cli(o);
  ASSERT_EQ(best.code, 0) << best.err;
  const nlohmann::json best_config = nlohmann::json::parse(best.out);
  EXPECT_EQ(best_config["vocab_size"], 50304);
  EXPECT_EQ(best_config["n_head"], 12);
  EXPECT_THAT(best.err, HasSubstr("changed vocab_size"));
  o.export_pick = "1";
  o.export_format = "onnx";
  EXPECT_THAT(Cli(o).err, HasSubstr("--export-format"));
}

// Llama 4's shared expert is as wide as a routed one: a candidate that moves the expert width
// moves it too, and the table (its "shared" column), the reasons and the export's summary line
// each say so.
TEST(CliTest, RecommendNamesTheSharedExpertWidthItMoves) {
  CliOptions o;
  o.command = "recommend";
  o.model = SourcePath("examples/models/hf/llama-4-maverick.json");
  o.gpu = "h100-sxm";
  o.top = 20;
  o.format = "json";
  CliRun all = Cli(o);
  ASSERT_EQ(all.code, 0) << all.err;
  const nlohmann::json ranked = nlohmann::json::parse(all.out);
  std::string base_ffn;
  for (const auto& c : ranked["candidates"]) {
    if (c.value("baseline", false)) base_ffn = c["model"]["ffn_hidden_size"].get<std::string>();
  }
  int moved = -1;
  for (const auto& c : ranked["candidates"]) {
    if (moved < 0 && c["model"]["ffn_hidden_size"].get<std::string>() != base_ffn) {
      moved = c["rank"].get<int>();
      bool named = false;
      for (const auto& why : c["reasons"]) {
        named |= absl::StrContains(why.get<std::string>(), "shared expert width " + base_ffn);
      }
      EXPECT_TRUE(named) << c.dump();
    }
  }
  ASSERT_GT(moved, 0) << "no candidate moves the expert width";
  o.format = "table";
  EXPECT_THAT(Cli(o).out, HasSubstr("shared"));
  o.export_pick = std::to_string(moved);
  CliRun exported = Cli(o);
  ASSERT_EQ(exported.code, 0) << exported.err;
  EXPECT_THAT(exported.err, HasSubstr("changed "));
  EXPECT_THAT(exported.err, HasSubstr("shared expert width " + base_ffn + " → "));
}

// The table's header says which degrees were required and why, what every candidate held of the
// model, and what --vary released (in either spelling).
TEST(CliTest, RecommendSaysWhatWasHeldAndReleased) {
  CliOptions o;
  o.command = "recommend";
  o.model = SourcePath("examples/models/hf/qwen2-7b.json");
  o.gpu = "h100-sxm";
  o.mode = "predicted";
  CliRun held = Cli(o);
  ASSERT_EQ(held.code, 0) << held.err;
  EXPECT_THAT(held.out, HasSubstr("held (the same model; --vary NAME releases one): kv_group (7 "
                                  "query heads per KV head); kv_cache (KV cache"));
  EXPECT_THAT(held.out, HasSubstr("TP 1 is the smallest"));
  EXPECT_THAT(held.out, ::testing::Not(HasSubstr("released by --vary")));
  o.vary = "kv-group,head_dim";
  CliRun released = Cli(o);
  ASSERT_EQ(released.code, 0) << released.err;
  EXPECT_THAT(released.out, HasSubstr("released by --vary: kv_group (7 query heads per KV head); "
                                      "head_dim (head dim at least 64)"));
  o.vary = "kv_groups";
  CliRun bad = Cli(o);
  EXPECT_NE(bad.code, 0);
  EXPECT_THAT(bad.err, HasSubstr("kv_group, kv_cache, head_dim, total_params"));
}

TEST(CliTest, HfConfigWithoutItsMarksSaysWhatToAdd) {
  const std::string path = ::testing::TempDir() + "/wavecrest-unmarked.json";
  std::ofstream(path) << R"({"hidden_size": 4096, "num_attention_heads": 32,
    "num_hidden_layers": 32, "intermediate_size": 11008, "vocab_size": 32000})";
  CliOptions o;
  o.command = "analyze";
  o.model = path;
  CliRun r = Cli(o);
  EXPECT_EQ(r.code, 13);
  EXPECT_THAT(r.err, HasSubstr("add \"architectures\": [\"LlamaForCausalLM\"]"));
}

// The paper's sawtooth (issue 11): Pythia-2.8B's hidden size from 2048 to 4096 by 64 at a = 32 on
// an A100. Every point is legal; where h/a is a multiple of 64 (h = 2048, 4096) no rule breaks,
// and the model's throughput at those points beats the points on either side of them.
TEST(CliTest, SweepOfHiddenSizeShowsTheSawtoothAndWritesThePlot) {
  const std::string svg =
      (std::filesystem::temp_directory_path() / "wavecrest-sweep-test.svg").string();
  CliOptions o;
  o.command = "sweep";
  o.model = SourcePath("examples/models/pythia-2.8b.json");
  o.gpu = "a100-sxm-80gb";
  o.vary = "hidden";
  o.from = 2048;
  o.to = 4096;
  o.step = 64;
  o.svg = svg;
  o.format = "json";
  CliRun r = Cli(o);
  ASSERT_EQ(r.code, 0) << r.err;
  v1::SweepResponse s;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &s).ok()) << r.out;
  ASSERT_EQ(s.points_size(), 33);
  for (const v1::SweepPoint& p : s.points()) {
    EXPECT_TRUE(p.valid()) << p.value();
    EXPECT_EQ(p.source(), v1::SOURCE_PREDICTED);
    EXPECT_LT(p.error_band_p10(), 0);
    EXPECT_GT(p.error_band_p90(), 0);
    const bool aligned = (p.value() / 32) % 64 == 0;
    EXPECT_EQ(p.rules_broken().empty(), aligned) << p.value();
  }
  EXPECT_GT(s.points(32).tflops(), s.points(31).tflops());  // 4096 beats 4032
  EXPECT_GT(s.points(0).tflops(), s.points(1).tflops());    // 2048 beats 2112
  // A wave-quantization drop the model predicts, as the paper measures: throughput falls past
  // 2560 (and 3456) though the model grows.
  EXPECT_LT(s.points(9).tflops(), s.points(8).tflops());
  std::ifstream in(svg);
  std::stringstream text;
  text << in.rdbuf();
  const std::string plot = text.str();
  EXPECT_THAT(plot, HasSubstr("<svg"));
  EXPECT_EQ(std::count(plot.begin(), plot.end(), '\n') > 30, true);
  size_t circles = 0, hold = 0;
  for (size_t at = plot.find("<circle"); at != std::string::npos;
       at = plot.find("<circle", at + 1)) {
    ++circles;
    hold += plot.compare(at, 26, "<circle class=\"rules-hold\"") == 0;
  }
  EXPECT_EQ(circles, 33u);
  EXPECT_EQ(hold, 2u);
  std::filesystem::remove(svg);
}

TEST(CliTest, SweepMarksIllegalPointsAndSweepsGemms) {
  CliOptions o;
  o.command = "sweep";
  o.model = SourcePath("examples/models/pythia-2.8b.json");
  o.vary = "heads";
  o.from = 30;
  o.to = 34;
  CliRun r = Cli(o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("5 points (1 legal)"));  // only 32 divides 2560
  EXPECT_THAT(r.out, HasSubstr("not legal"));
  EXPECT_THAT(r.out, HasSubstr("num_attention_heads"));

  CliOptions g;
  g.command = "sweep";
  g.gemm = "4096x4096x4096";
  g.vary = "k";
  g.from = 4032;
  g.to = 4160;
  g.step = 8;
  g.format = "json";
  CliRun gr = Cli(g);
  ASSERT_EQ(gr.code, 0) << gr.err;
  v1::SweepResponse s;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(gr.out, &s).ok());
  ASSERT_EQ(s.points_size(), 17);
  // K = 4096 (a multiple of 64 BF16 = 128 bytes) meets the alignment rule; 4104 does not.
  EXPECT_TRUE(s.points(8).rules_broken().empty());
  EXPECT_THAT(s.points(9).rules_broken(), ::testing::Contains("k_alignment"));
  EXPECT_GT(s.points(8).tflops(), s.points(9).tflops());
}

TEST(CliTest, SweepErrorsNameTheFlag) {
  CliOptions o;
  o.command = "sweep";
  o.model = SourcePath("examples/models/pythia-2.8b.json");
  o.vary = "width";
  o.from = 1;
  o.to = 2;
  CliRun r = Cli(o);
  EXPECT_EQ(r.code, 2);  // a bad flag value is a usage error
  EXPECT_THAT(r.err, HasSubstr("--vary"));
  EXPECT_THAT(r.err, HasSubstr("hidden, heads"));
  o.vary = "hidden";
  o.to = 100000;
  r = Cli(o);
  EXPECT_EQ(r.code, 13);
  EXPECT_THAT(r.err, HasSubstr("to: the range has 100000 points"));
  o.vary = "k";
  o.to = 10;
  r = Cli(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--gemm"));
  o.vary = "hidden";
  o.mode = "measured";
  r = Cli(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("need --server"));
}

// `time --layers` refuses what it cannot do before it connects, naming the flag.
TEST(CliTest, TimeLayersFlagErrorsNameTheFlag) {
  CliOptions o;
  o.command = "time";
  o.server = "127.0.0.1:1";  // never reached
  o.layers = true;
  CliRun r = Cli(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--model"));
  o.model = SourcePath("examples/models/llama-3-8b.json");
  o.layer_kinds = "attention";
  r = Cli(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--layer_kinds"));
  EXPECT_THAT(r.err, HasSubstr("fused_attention, unfused_attention, transformer_layer"));
  o.layer_kinds = "";
  o.autotune = true;
  r = Cli(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--autotune"));
  o.autotune = false;
  o.layers = false;
  o.layer_kinds = "transformer_layer";
  r = Cli(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("only with --layers"));
  o.layer_kinds = "";
  o.routing = "zipf:1";
  r = Cli(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--routing: only with --layers"));
  o.layers = true;
  o.routing = "skewed";
  r = Cli(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--routing"));
  EXPECT_THAT(r.err, HasSubstr("allowed: balanced, zipf:S"));
}

// The layers table: each kind with its count and role, a layer summed from its parts says why,
// the stack adds up, and the planner's price of a MoE layer against its program is a number.
TEST(CliTest, LayerTableSaysWhySumsTheStackAndGivesThePlannersGap) {
  auto row = [](int index, v1::LayerKind kind, int64_t layers, const std::string& role,
                double time, double sum, double program) {
    v1::LayerTiming t;
    t.set_index(index);
    t.mutable_shape()->set_kind(kind);
    t.set_model_layers(layers);
    t.set_role(role);
    t.set_time_s(time);
    t.set_predicted_sum_s(sum);
    t.set_predicted_program_s(program);
    t.mutable_provenance()->set_source(v1::SOURCE_PREDICTED);
    t.set_key(absl::StrCat("key", index));
    return t;
  };
  std::vector<v1::LayerTiming> rows = {
      row(0, v1::LAYER_KIND_FUSED_ATTENTION, 12, "", 1e-3, 1e-3, 1e-3),
      row(1, v1::LAYER_KIND_TRANSFORMER, 10, "MoE", 8e-3, 5e-3, 8e-3),
      row(2, v1::LAYER_KIND_TRANSFORMER, 2, "dense", 4e-3, 4e-3, 0)};
  rows[1].mutable_shape()->mutable_layer()->set_num_experts(64);
  rows[2].set_sum_of_parts_reason("FP8 layers are not timed whole yet");
  const std::string out = FormatLayerTimings(rows);
  EXPECT_THAT(out, HasSubstr("MoE"));
  EXPECT_THAT(out, HasSubstr("PREDICTED sum of parts"));
  EXPECT_THAT(out, HasSubstr("#2 is its predicted sum of parts: FP8 layers are not timed whole"));
  // 10 × 8 ms + 2 × 4 ms = 88 ms; the planner's 10 × 5 + 2 × 4 = 58 ms.
  EXPECT_THAT(out, HasSubstr("stack: the model's 12 layers = 10 × #1 + 2 × #2 = 88.000 ms"));
  EXPECT_THAT(out, HasSubstr("58.000 ms: layers/sum 1.517"));
  // 5 ms against the program's 8 ms: the planner 37.5% low.
  EXPECT_THAT(out, HasSubstr("planner gap #1 (MoE layer): the planner prices it 5.000 ms, -37.5%"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("planner gap #2")));
}

// A freshly timed result's fate in the server's store shows in `wavecrest time`'s table (after
// its source) and in its JSON (the proto's field), so that a cut stream still said it.
TEST(CliTest, ATimingSaysWhenItWasNotStored) {
  v1::GemmTiming t;
  t.mutable_shape()->set_m(4096);
  t.mutable_shape()->set_n(4096);
  t.mutable_shape()->set_k(4096);
  t.set_time_s(1e-3);
  t.mutable_provenance()->set_source(v1::SOURCE_MEASURED);
  t.mutable_provenance()->set_storage(v1::STORAGE_FATE_STORED);
  EXPECT_THAT(FormatTiming(t), Not(HasSubstr("stored")));
  EXPECT_THAT(FormatTiming(t), Not(HasSubstr("spooled")));
  t.mutable_provenance()->set_storage(v1::STORAGE_FATE_SPOOLED);
  EXPECT_THAT(FormatTiming(t), HasSubstr("MEASURED (spooled)"));
  t.mutable_provenance()->set_storage(v1::STORAGE_FATE_NOT_STORED);
  EXPECT_THAT(FormatTiming(t), HasSubstr("MEASURED (not stored)"));
  std::string json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(t, &json).ok());
  EXPECT_THAT(json, HasSubstr("\"storage\":\"STORAGE_FATE_NOT_STORED\""));
}

}  // namespace
}  // namespace wavecrest
