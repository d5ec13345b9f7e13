// End-to-end tests of the real wavecrest-server binary on loopback ports chosen at run time.
#include <atomic>
#include <cmath>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/advisor_client.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "gtest/gtest.h"
#include "service/errors.h"
#include "service/spec_io.h"
#include "tests/integration/process.h"

namespace wavecrest {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using testing::ServerUnderTest;
using testing::Shell;
using testing::Metrics;

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.WaitReady()) << server_.Log(); }
  ServerUnderTest server_;
};

v1::ModelSpec Pythia() {
  v1::ModelSpec m;
  m.set_hidden_size(2560);
  m.set_num_attention_heads(32);
  m.set_num_layers(32);
  m.set_vocab_size(50304);
  return m;
}

// A TimeGemms request of `count` shapes (m = 64·i, n, k): enough work to keep a job busy.
v1::TimeGemmsRequest HeavyTimeRequest(int count, int64_t n, int64_t k) {
  v1::TimeGemmsRequest req;
  req.set_gpu("h100-sxm");
  for (int i = 1; i <= count; ++i) {
    auto* g = req.add_gemms();
    g->set_m(64 * i);
    g->set_n(n);
    g->set_k(k);
  }
  return req;
}

TEST_F(ServerTest, HealthSeparatesAnsweringFromMeasuring) {
  AdvisorClient c(server_.address());
  EXPECT_EQ(*c.Health(""), "SERVING");
  EXPECT_EQ(*c.Health("wavecrest.v1.Advisor"), "SERVING");
  // No GPU worker: the service answers (from the model) but cannot measure.
  EXPECT_EQ(*c.Health("wavecrest.v1.Advisor/measure"), "NOT_SERVING");
}

TEST_F(ServerTest, ReflectionListsTheAdvisor) {
  AdvisorClient c(server_.address());
  auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(c.channel());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = stub->ServerReflectionInfo(&ctx);
  grpc::reflection::v1alpha::ServerReflectionRequest req;
  req.set_list_services("");
  ASSERT_TRUE(stream->Write(req));
  stream->WritesDone();
  grpc::reflection::v1alpha::ServerReflectionResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  std::vector<std::string> names;
  for (const auto& s : resp.list_services_response().service()) names.push_back(s.name());
  EXPECT_THAT(names, Contains("wavecrest.v1.Advisor"));
  EXPECT_THAT(names, Contains("grpc.health.v1.Health"));
  while (stream->Read(&resp)) {
  }
  EXPECT_TRUE(stream->Finish().ok());
}

// A Hugging Face config sent as text is imported by the server with the CLI's code; fields set in
// `model` override it; what is not an HF config is refused on the field.
TEST_F(ServerTest, HfConfigJsonIsImportedByTheServerWithOverrides) {
  AdvisorClient c(server_.address());
  auto text = ReadFile(testing::SourcePath("examples/models/hf/llama-3-8b.json"), 1 << 20);
  ASSERT_TRUE(text.ok());
  v1::AnalyzeRequest req;
  req.set_hf_config_json(*text);
  req.mutable_model()->set_seq_length(4096);
  req.set_gpu("h100-sxm");
  auto r = c.Analyze(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model().hidden_size(), 4096);
  EXPECT_EQ(r->model().num_kv_heads(), 8);
  EXPECT_EQ(r->model().ffn_hidden_size(), 14336);
  EXPECT_EQ(r->model().vocab_size(), 128256);
  EXPECT_EQ(r->model().seq_length(), 4096);  // the override
  // The same as the CLI's import of the same file.
  auto cli = LoadModelFile(testing::SourcePath("examples/models/hf/llama-3-8b.json"));
  ASSERT_TRUE(cli.ok());
  v1::AnalyzeRequest same;
  *same.mutable_model() = *cli;
  EXPECT_EQ(same.model().name(), "llama-3-8b");  // the CLI names it after the file...
  same.mutable_model()->clear_name();             // ... which the server's import never sees
  same.mutable_model()->set_seq_length(4096);
  same.set_gpu("h100-sxm");
  auto r2 = c.Analyze(same);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->model().DebugString(), r->model().DebugString());
  EXPECT_DOUBLE_EQ(r2->step_time_s(), r->step_time_s());

  // Streaming RPCs take it too.
  v1::RecommendRequest rec;
  rec.set_hf_config_json(*text);
  rec.set_gpu("h100-sxm");
  rec.set_mode(v1::MODE_PREDICTED);
  rec.set_top(2);
  v1::RecommendResponse final_message;
  absl::Status st = c.Recommend(rec, [&](const v1::RecommendResponse& m) {
    if (m.done()) final_message = m;
  });
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_GT(final_message.candidates_size(), 0);
  EXPECT_GT(final_message.gemms_predicted(), 0);  // predicted mode: every GEMM was predicted
  EXPECT_EQ(final_message.gemms_measured(), 0);

  // A wavecrest spec is not an HF config; a broken config names what is missing.
  v1::AnalyzeRequest bad;
  bad.set_hf_config_json(R"({"hidden_size": 4096, "num_attention_heads": 32})");
  bad.set_gpu("h100-sxm");
  auto e = c.Analyze(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ViolationsOf(e.status()),
              Contains(::testing::Field(&FieldViolation::field, "hf_config_json")));
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("a wavecrest spec goes in `model`"));
  bad.set_hf_config_json(R"({"model_type": "llama", "hidden_size": 4096})");
  e = c.Analyze(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("hf_config_json"));
}

// Issue 22: bytes that do not parse as the method's request message (a truncated varint, a
// field of the wrong wire type) get INVALID_ARGUMENT naming the method, on unary and streaming
// methods alike; a well-formed body still works; the server stays up.
TEST_F(ServerTest, MalformedProtobufBodiesAreInvalidArgumentNamingTheMethod) {
  auto channel = grpc::CreateChannel(server_.address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  auto call = [&](const std::string& method, const std::string& bytes) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    std::promise<grpc::Status> done;
    stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response,
                   [&](grpc::Status st) { done.set_value(st); });
    return done.get_future().get();
  };
  for (const char* method : {"/wavecrest.v1.Advisor/Analyze", "/wavecrest.v1.Advisor/Recommend",
                             "/wavecrest.v1.Advisor/ListDevices"}) {
    // 0x0a: field 1, length-delimited, then a length far past the end.
    for (const std::string& bytes : {std::string("\x0a\xff\xff\xff\x0f", 5),
                                    std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11)}) {
      const grpc::Status st = call(method, bytes);
      EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method << ": "
                                                                      << st.error_message();
      EXPECT_THAT(st.error_message(), HasSubstr(method)) << method;
    }
  }
  // A method that does not exist is still UNIMPLEMENTED, and a valid call still answers.
  EXPECT_EQ(call("/wavecrest.v1.Advisor/Nope", "").error_code(), grpc::StatusCode::UNIMPLEMENTED);
  AdvisorClient c(server_.address());
  EXPECT_TRUE(c.ListDevices().ok());
}

TEST_F(ServerTest, AnalyzeRoundTrip) {
  AdvisorClient c(server_.address());
  v1::AnalyzeRequest req;
  *req.mutable_model() = Pythia();
  req.mutable_model()->set_attention(v1::ATTENTION_UNFUSED);
  req.set_gpu("a100-sxm-80gb");
  auto r = c.Analyze(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->gpu(), "a100-sxm-80gb");
  EXPECT_EQ(r->gemms_size(), 21);
  EXPECT_EQ(r->provenance().source(), v1::SOURCE_PREDICTED);
  ASSERT_GT(r->rules_size(), 0);
  EXPECT_EQ(r->rules(0).id(), "head_dim_pow2");
}

// The CLI's conventions, on the binary: usage errors exit 2 naming the flag; --help per command
// lists only that command's flags and exits 0; --version names the version, commit and build.
TEST(CliConventionsTest, UsageErrorsExitTwoHelpIsPerCommandVersionIsComplete) {
  const std::string cli = testing::BinaryPath("client/wavecrest");
  const std::string model = testing::SourcePath("examples/models/llama-2-7b.json");
  struct Case {
    std::string args;
    std::string says;
  };
  const std::vector<Case> usage_errors = {
      {"analyze --modle " + model, "--modle: unknown flag; did you mean --model?"},
      {"recommend --model " + model + " --top abc", "--top: \"abc\" is not a valid value"},
      {"analyze", "--model: required"},
      {"analyze --model " + model + " --vary heads", "--vary: does not apply to analyze"},
      {"analyze --model " + model + " --autotune", "--autotune: does not apply to analyze"},
      {"analyze --model", "--model: needs a value"},
      {"frobnicate", "unknown command \"frobnicate\"; the commands: analyze"},
      {"analyze --model " + model + " --format yaml", "--format"},
      // Messages that say what to do.
      {"devices --server http://127.0.0.1:50051", "--server: host:port, without a scheme"},
      {"devices --server 127.0.0.1:1 --deadline -1", "--deadline: seconds in [0, 604800] (0: derived"},
      {"analyze --model " + testing::SourcePath("examples/models"),
       "--model: " + testing::SourcePath("examples/models") + ": is a directory; give a spec file"},
  };
  for (const Case& c : usage_errors) {
    auto [code, out] = Shell(absl::StrCat(cli, " ", c.args));
    EXPECT_EQ(code, 2) << c.args << "\n" << out;
    EXPECT_THAT(out, HasSubstr(c.says)) << c.args;
  }
  auto [hcode, help] = Shell(absl::StrCat(cli, " analyze --help"));
  EXPECT_EQ(hcode, 0) << help;
  EXPECT_THAT(help, HasSubstr("usage: wavecrest analyze"));
  EXPECT_THAT(help, HasSubstr("--model"));
  EXPECT_THAT(help, ::testing::Not(HasSubstr("--vary")));  // recommend's, not analyze's
  EXPECT_THAT(help, ::testing::Not(HasSubstr("wavecrest: wavecrest")));
  EXPECT_THAT(help, ::testing::Not(HasSubstr("/work/")));  // no build paths
  auto [gcode, global] = Shell(absl::StrCat(cli, " --help"));
  EXPECT_EQ(gcode, 0);
  EXPECT_THAT(global, HasSubstr("export-measurements"));
  auto [vcode, version] = Shell(absl::StrCat(cli, " --version"));
  EXPECT_EQ(vcode, 0);
  EXPECT_THAT(version, ::testing::MatchesRegex("wavecrest [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit "
                                               "[0-9a-f]+.*, [A-Za-z]+ build, .*\\)\n"));
  EXPECT_THAT(version, ::testing::Not(HasSubstr("NDEBUG")));
  // A bad enum in a spec lists the allowed values (invalid input: exit 13, not a usage error).
  testing::TempDir tmp;
  const std::string bad = tmp.path() + "/swiglu.json";
  std::ofstream(bad) << R"({"hidden_size": 4096, "num_attention_heads": 32, "num_layers": 2,
                           "vocab_size": 32000, "mlp": "swiglu"})";
  auto [ecode, eout] = Shell(absl::StrCat(cli, " analyze --model ", bad));
  EXPECT_EQ(ecode, 13) << eout;
  EXPECT_THAT(eout, HasSubstr(R"(mlp: invalid value "swiglu"; allowed: MLP_GELU, MLP_SWIGLU)"));
  // Both spellings, and --noflag / --no-flag for booleans.
  auto [ncode, nout] = Shell(absl::StrCat(cli, " recommend --model ", model,
                                          " --no-keep-layers --mode=predicted --micro-batch 1 "
                                          "--top 1 --format json"));
  EXPECT_EQ(ncode, 0) << nout;
}

// Flags from WAVECREST_<FLAG>, the command line winning; a bad value or level exits 2 naming it.
TEST(ServerFlagsTest, EnvironmentSetsFlagsAndBadValuesExitTwo) {
  const std::string server = testing::BinaryPath("server/wavecrest-server");
  auto [code, out] = Shell(absl::StrCat("WAVECREST_QUEUE_CAPACITY=abc ", server,
                                        " --listen=127.0.0.1:0 --metrics_listen="));
  EXPECT_EQ(code, 2) << out;
  EXPECT_THAT(out, HasSubstr("WAVECREST_QUEUE_CAPACITY (--queue_capacity): \"abc\""));
  std::tie(code, out) = Shell(absl::StrCat(server, " --log_level=loud"));
  EXPECT_EQ(code, 2) << out;
  EXPECT_THAT(out, HasSubstr("allowed: debug, info, warning, error"));
  // A good value is applied and logged; --log_level=warning drops the info lines.
  setenv("WAVECREST_QUEUE_CAPACITY", "7", 1);  // the child inherits it
  ServerUnderTest s({"--log_level=warning"});
  unsetenv("WAVECREST_QUEUE_CAPACITY");
  ASSERT_TRUE(s.WaitReady()) << s.Log();
  const std::string metrics = Metrics(s.metrics_port());
  EXPECT_THAT(metrics, HasSubstr("wavecrest_queue_capacity 7"));
  EXPECT_THAT(s.Log(), ::testing::Not(HasSubstr(R"("level":"info")")));
  // A metrics port already taken: the message says so (not civetweb's "null context").
  std::tie(code, out) = Shell(
      absl::StrCat(server, " --listen=127.0.0.1:0 --metrics_listen=127.0.0.1:", s.metrics_port()));
  EXPECT_NE(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("cannot listen (is another process on that port?"));
}

TEST_F(ServerTest, CliAgainstServer) {
  const std::string cli = testing::BinaryPath("client/wavecrest");
  auto [code, out] = Shell(absl::StrCat(cli, " analyze --server ", server_.address(), " --model ",
                                        testing::SourcePath("examples/models/llama-2-7b.json"),
                                        " --gpu h100-sxm"));
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("6.74B total (6738415616)"));
  std::tie(code, out) = Shell(absl::StrCat(cli, " time --server ", server_.address(),
                                           " --gpu h100-sxm --gemm 8192x12288x4096 --dtype bf16"));
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("8192x12288x4096"));
  EXPECT_THAT(out, HasSubstr("PREDICTED"));
  std::tie(code, out) = Shell(absl::StrCat(cli, " devices --server ", server_.address()));
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("h100-sxm"));
  // This server has no GPU worker: it answers but cannot measure, so `health` (all three) exits
  // 24 and says which; `--service=wavecrest.v1.Advisor` (can it answer?) exits 0.
  std::tie(code, out) = Shell(absl::StrCat(cli, " health --server ", server_.address()));
  EXPECT_EQ(code, 24) << out;
  EXPECT_THAT(out, HasSubstr("wavecrest.v1.Advisor: SERVING"));
  EXPECT_THAT(out, HasSubstr("wavecrest.v1.Advisor/measure: NOT_SERVING"));
  std::tie(code, out) = Shell(
      absl::StrCat(cli, " health --server ", server_.address(), " --service=wavecrest.v1.Advisor"));
  EXPECT_EQ(code, 0) << out;
  // JSON: one object per command, the notes kept.
  std::tie(code, out) =
      Shell(absl::StrCat(cli, " health --format json --server ", server_.address()));
  EXPECT_EQ(code, 24) << out;
  EXPECT_THAT(out,
              HasSubstr(R"({"advisor":"SERVING","measure":"NOT_SERVING","overall":"SERVING"})"));
  std::tie(code, out) =
      Shell(absl::StrCat(cli, " time --format json --server ", server_.address(),
                         " --gpu h100-sxm --gemm 1024x1024x1024 --mode predicted"));
  EXPECT_EQ(code, 0) << out;
  const nlohmann::json timed = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(timed.is_object()) << out;
  EXPECT_EQ(timed["gpu"], "h100-sxm");
  EXPECT_EQ(timed["timings"].size(), 1u);
  EXPECT_TRUE(timed["notes"].is_array());
  // One service, as a container or Kubernetes probe asks: the exit code is the answer. This
  // server has no worker, so measuring is NOT_SERVING (exit 10 + UNAVAILABLE).
  std::tie(code, out) =
      Shell(absl::StrCat(cli, " health --server ", server_.address(), " --service="));
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("(overall): SERVING"));
  std::tie(code, out) = Shell(absl::StrCat(cli, " health --server ", server_.address(),
                                           " --service=wavecrest.v1.Advisor/measure"));
  EXPECT_EQ(code, 24) << out;
  EXPECT_THAT(out, HasSubstr("wavecrest.v1.Advisor/measure: NOT_SERVING"));
  // Measured mode on a server with no worker configured: retrying cannot help, so
  // FAILED_PRECONDITION (9) -> exit 19, saying what to do (no retry hint).
  std::tie(code, out) = Shell(absl::StrCat(cli, " time --server ", server_.address(),
                                           " --gpu h100-sxm --gemm 64x64x64 --mode measured"));
  EXPECT_EQ(code, 19) << out;
  EXPECT_THAT(out, HasSubstr("no h100-sxm worker configured"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("retry after")));
  // A field violation shows field and range on one line; exit 13.
  std::tie(code, out) =
      Shell(absl::StrCat(cli, " analyze --server ", server_.address(), " --model ",
                         testing::SourcePath("examples/models/llama-2-7b.json"), " --tp 3"));
  EXPECT_EQ(code, 13) << out;
  EXPECT_THAT(out, HasSubstr("model.tensor_parallel: must divide num_attention_heads (32)"));
}

TEST_F(ServerTest, TimeGemmsStreamsProgressThenResults) {
  AdvisorClient c(server_.address());
  v1::TimeGemmsRequest req;
  req.set_gpu("h100-sxm");
  for (int n : {4096, 4095, 1536}) {
    auto* g = req.add_gemms();
    g->set_m(8192);
    g->set_n(n);
    g->set_k(4096);
  }
  std::vector<v1::GemmTiming> results;
  int progress = 0;
  absl::Status st = c.TimeGemms(req, [&](const v1::TimeGemmsResponse& m) {
    if (m.has_progress()) ++progress;
    if (m.has_timing()) results.push_back(m.timing());
  });
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_EQ(results.size(), 3u);
  EXPECT_GE(progress, 3);
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].index(), static_cast<int>(i));
    EXPECT_EQ(results[i].provenance().source(), v1::SOURCE_PREDICTED);
    EXPECT_GT(results[i].time_s(), 0);
  }
  EXPECT_LT(results[0].time_s(), results[1].time_s());  // aligned 4096 beats 4095
}

TEST_F(ServerTest, TimeGemmsOfAModelDedupesAndNamesUsers) {
  AdvisorClient c(server_.address());
  v1::TimeGemmsRequest req;
  req.set_gpu("h100-sxm");
  *req.mutable_model() = Pythia();
  req.mutable_model()->set_attention(v1::ATTENTION_UNFUSED);
  std::vector<v1::GemmTiming> results;
  ASSERT_TRUE(c.TimeGemms(req, [&](const v1::TimeGemmsResponse& m) {
                 if (m.has_timing()) results.push_back(m.timing());
               }).ok());
  // 21 GEMM entries; three pairs are identical GEMMs: S = Q·Kᵀ and dP = dO·Vᵀ (s×s×d, TN),
  // dQ = dS·K and O = P·V (s×d×s, NN), dK and dV (s×d×s, NT): 18 distinct, each timed once.
  EXPECT_EQ(results.size(), 18u);
  bool shared = false;
  for (const auto& r : results) {
    std::vector<std::string> users(r.used_by().begin(), r.used_by().end());
    if (r.used_by_size() == 2) {
      EXPECT_THAT(
          users, ::testing::AnyOf(
                     ::testing::UnorderedElementsAre("attn_score forward", "attn_over_value dgrad"),
                     ::testing::UnorderedElementsAre("attn_score dgrad", "attn_over_value forward"),
                     ::testing::UnorderedElementsAre("attn_score wgrad", "attn_over_value wgrad")));
      shared = true;
    } else {
      EXPECT_EQ(r.used_by_size(), 1);
    }
  }
  EXPECT_TRUE(shared);
}

struct Bad {
  std::string name;
  std::function<absl::Status(AdvisorClient&)> call;
  absl::StatusCode code;
  std::string field_or_text;  // a violation's field, or text in the message
};

absl::Status AnalyzeWith(AdvisorClient& c, std::function<void(v1::AnalyzeRequest&)> edit) {
  v1::AnalyzeRequest req;
  *req.mutable_model() = Pythia();
  req.set_gpu("h100-sxm");
  edit(req);
  return c.Analyze(req).status();
}

absl::Status TimeWith(AdvisorClient& c, std::function<void(v1::TimeGemmsRequest&)> edit) {
  v1::TimeGemmsRequest req;
  req.set_gpu("h100-sxm");
  auto* g = req.add_gemms();
  g->set_m(1024);
  g->set_n(1024);
  g->set_k(1024);
  edit(req);
  return c.TimeGemms(req, [](const v1::TimeGemmsResponse&) {});
}

TEST_F(ServerTest, MalformedRequestsGetTheRightCodeAndField) {
  using C = absl::StatusCode;
  constexpr int64_t kHuge = 1'000'000'000'000'000;  // 10^15
  std::vector<Bad> cases = {
      {"empty", [](auto& c) { return c.Analyze(v1::AnalyzeRequest()).status(); },
       C::kInvalidArgument, "model.hidden_size"},
      {"no gpu", [](auto& c) { return AnalyzeWith(c, [](auto& r) { r.clear_gpu(); }); },
       C::kInvalidArgument, "gpu"},
      {"hidden 0",
       [](auto& c) {
         return AnalyzeWith(c, [](auto& r) { r.mutable_model()->set_hidden_size(0); });
       },
       C::kInvalidArgument, "model.hidden_size"},
      {"hidden negative",
       [](auto& c) {
         return AnalyzeWith(c, [](auto& r) { r.mutable_model()->set_hidden_size(-4096); });
       },
       C::kInvalidArgument, "model.hidden_size"},
      {"hidden 1e15",
       [&](auto& c) {
         return AnalyzeWith(c, [&](auto& r) { r.mutable_model()->set_hidden_size(kHuge); });
       },
       C::kInvalidArgument, "model.hidden_size"},
      {"heads do not divide hidden",
       [](auto& c) {
         return AnalyzeWith(c, [](auto& r) { r.mutable_model()->set_num_attention_heads(48); });
       },
       C::kInvalidArgument, "model.num_attention_heads"},
      {"tp does not divide heads",
       [](auto& c) {
         return AnalyzeWith(c, [](auto& r) { r.mutable_model()->set_tensor_parallel(3); });
       },
       C::kInvalidArgument, "model.tensor_parallel"},
      {"kv heads do not divide heads",
       [](auto& c) {
         return AnalyzeWith(c, [](auto& r) { r.mutable_model()->set_num_kv_heads(5); });
       },
       C::kInvalidArgument, "model.num_kv_heads"},
      {"layers 1e15",
       [&](auto& c) {
         return AnalyzeWith(c, [&](auto& r) { r.mutable_model()->set_num_layers(kHuge); });
       },
       C::kInvalidArgument, "model.num_layers"},
      {"vocab negative",
       [](auto& c) {
         return AnalyzeWith(c, [](auto& r) { r.mutable_model()->set_vocab_size(-1); });
       },
       C::kInvalidArgument, "model.vocab_size"},
      {"seq 1e15",
       [&](auto& c) {
         return AnalyzeWith(c, [&](auto& r) { r.mutable_model()->set_seq_length(kHuge); });
       },
       C::kInvalidArgument, "model.seq_length"},
      {"b·s overflow",
       [](auto& c) {
         return AnalyzeWith(c, [](auto& r) {
           r.mutable_model()->set_seq_length(1'048'576);
           r.mutable_model()->set_micro_batch_size(65'536);
         });
       },
       C::kInvalidArgument, "model.micro_batch_size"},
      {"dtype enum 99",
       [](auto& c) {
         return AnalyzeWith(
             c, [](auto& r) { r.mutable_model()->set_dtype(static_cast<v1::Dtype>(99)); });
       },
       C::kInvalidArgument, "model.dtype"},
      {"mlp enum 42",
       [](auto& c) {
         return AnalyzeWith(c,
                            [](auto& r) { r.mutable_model()->set_mlp(static_cast<v1::Mlp>(42)); });
       },
       C::kInvalidArgument, "model.mlp"},
      {"unknown gpu", [](auto& c) { return AnalyzeWith(c, [](auto& r) { r.set_gpu("tpu-v4"); }); },
       C::kNotFound, "h100-sxm"},
      {"bf16 on v100",
       [](auto& c) { return AnalyzeWith(c, [](auto& r) { r.set_gpu("v100-sxm2"); }); },
       C::kFailedPrecondition, "cannot run bf16"},
      {"time: neither gemms nor model",
       [](auto& c) { return TimeWith(c, [](auto& r) { r.clear_gemms(); }); }, C::kInvalidArgument,
       "gemms"},
      {"time: both gemms and model",
       [](auto& c) { return TimeWith(c, [](auto& r) { *r.mutable_model() = Pythia(); }); },
       C::kInvalidArgument, "gemms"},
      {"time: m = 0",
       [](auto& c) { return TimeWith(c, [](auto& r) { r.mutable_gemms(0)->set_m(0); }); },
       C::kInvalidArgument, "gemms[0].m"},
      {"time: k = 1e15",
       [&](auto& c) { return TimeWith(c, [&](auto& r) { r.mutable_gemms(0)->set_k(kHuge); }); },
       C::kInvalidArgument, "gemms[0].k"},
      {"time: M·N·K overflow",
       [](auto& c) {
         return TimeWith(c, [](auto& r) {
           r.mutable_gemms(0)->set_m(2'000'000'000);
           r.mutable_gemms(0)->set_n(2'000'000'000);
           r.mutable_gemms(0)->set_k(2'000'000'000);
         });
       },
       C::kInvalidArgument, "gemms[0]"},
      {"time: 5000 gemms",
       [](auto& c) {
         return TimeWith(c, [](auto& r) {
           for (int i = 0; i < 4999; ++i) *r.add_gemms() = r.gemms(0);
         });
       },
       C::kInvalidArgument, "gemms"},
      {"time: layout 9",
       [](auto& c) {
         return TimeWith(c, [](auto& r) { r.set_layout(static_cast<v1::Layout>(9)); });
       },
       C::kInvalidArgument, "layout"},
      {"time: mode 7",
       [](auto& c) { return TimeWith(c, [](auto& r) { r.set_mode(static_cast<v1::Mode>(7)); }); },
       C::kInvalidArgument, "mode"},
      {"time: fp8 on a100",
       [](auto& c) {
         return TimeWith(c, [](auto& r) {
           r.set_gpu("a100-sxm-80gb");
           r.set_dtype(v1::DTYPE_FP8_E4M3);
         });
       },
       C::kFailedPrecondition, "cannot run fp8"},
      {"time: no gpu", [](auto& c) { return TimeWith(c, [](auto& r) { r.clear_gpu(); }); },
       C::kInvalidArgument, "gpu"},
  };
  ASSERT_GE(cases.size(), 20u);
  AdvisorClient c(server_.address(), absl::Seconds(20));
  for (const Bad& b : cases) {
    absl::Status st = b.call(c);
    EXPECT_EQ(st.code(), b.code) << b.name << ": " << st;
    std::vector<std::string> fields;
    for (const auto& v : ViolationsOf(st)) fields.push_back(v.field);
    if (b.code == absl::StatusCode::kInvalidArgument) {
      EXPECT_THAT(fields, Contains(b.field_or_text)) << b.name << ": " << st;
    } else {
      EXPECT_THAT(std::string(st.message()), HasSubstr(b.field_or_text)) << b.name;
    }
  }
  EXPECT_EQ(*c.Health("wavecrest.v1.Advisor"), "SERVING");
  // And it still answers a good request.
  EXPECT_TRUE(AnalyzeWith(c, [](auto&) {}).ok());
}

// The hardening issue's hostile inputs: each is refused with a code that says whether retrying
// can help, field violations that name the field, and an error small enough for the trailers.
TEST_F(ServerTest, HostileInputsAreRefusedWithSmallErrorsThatNameTheField) {
  AdvisorClient c(server_.address(), absl::Seconds(30));
  // A 3 MiB model name: refused, named, not copied into an 815 MB answer.
  absl::Status st =
      AnalyzeWith(c, [](auto& r) { r.mutable_model()->set_name(std::string(3 << 20, 'x')); });
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st.message().substr(0, 200);
  EXPECT_THAT(ViolationsOf(st), Contains(::testing::Field(&FieldViolation::field, "model.name")));
  // 200 invalid shapes: INVALID_ARGUMENT with at most 20 violations and a count of the rest (it
  // used to overflow the metadata limit and reach the client as RESOURCE_EXHAUSTED).
  st = TimeWith(c, [](auto& r) {
    r.mutable_gemms(0)->set_m(0);
    for (int i = 0; i < 199; ++i) *r.add_gemms() = r.gemms(0);
  });
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LE(ViolationsOf(st).size(), 21u);
  EXPECT_THAT(std::string(st.message()), HasSubstr("more violations not listed"));
  // An 8 KB GPU name: NOT_FOUND, echoed in part only.
  st = AnalyzeWith(c, [](auto& r) { r.set_gpu(std::string(8192, 'g')); });
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_LT(st.message().size(), 600u);
  // 1000 bad allowed_head_dims: INVALID_ARGUMENT naming the limit.
  v1::RecommendRequest rec;
  *rec.mutable_model() = Pythia();
  rec.set_gpu("h100-sxm");
  rec.set_mode(v1::MODE_PREDICTED);
  for (int i = 0; i < 1000; ++i) rec.add_allowed_head_dims(3);
  st = c.Recommend(rec, [](const v1::RecommendResponse&) {});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("at most 256 entries"));
  // max_gpu_seconds = NaN no longer passes (it disabled the GPU budget).
  rec.clear_allowed_head_dims();
  rec.set_max_gpu_seconds(std::nan(""));
  st = c.Recommend(rec, [](const v1::RecommendResponse&) {});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ViolationsOf(st),
              Contains(::testing::Field(&FieldViolation::field, "max_gpu_seconds")));
  // A search space too large for one request: refused up front, fast, naming what to narrow (it
  // used to run past the deadline to 4.3 GiB and bad_alloc).
  rec.set_max_gpu_seconds(0);
  rec.mutable_model()->set_hidden_size(65536);
  rec.mutable_model()->set_num_attention_heads(512);
  rec.mutable_model()->set_mlp(v1::MLP_SWIGLU);
  rec.mutable_model()->set_ffn_hidden_size(0);
  rec.set_param_tolerance(0.5);
  for (auto k :
       {v1::KNOB_HEADS, v1::KNOB_KV_HEADS, v1::KNOB_HIDDEN, v1::KNOB_FFN, v1::KNOB_VOCAB}) {
    rec.add_vary(k);
  }
  for (int d = 8; d <= 1024; d += 8) rec.add_allowed_head_dims(d);
  rec.set_max_candidates(100000);
  const absl::Time t0 = absl::Now();
  st = c.Recommend(rec, [](const v1::RecommendResponse&) {});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(ViolationsOf(st), Contains(::testing::Field(&FieldViolation::field, "vary")));
  EXPECT_THAT(std::string(st.message()), HasSubstr("narrow it"));
  EXPECT_EQ(RetryDelayOf(st), absl::ZeroDuration());  // retrying the same request cannot help
  EXPECT_LT(absl::Now() - t0, absl::Seconds(10));
  // A model whose GEMMs pass the per-GEMM FLOP cap, through TimeGemms' model path.
  v1::TimeGemmsRequest time;
  time.set_gpu("h100-sxm");
  time.set_mode(v1::MODE_PREDICTED);
  *time.mutable_model() = Pythia();
  time.mutable_model()->set_hidden_size(262144);
  time.mutable_model()->set_num_attention_heads(2048);
  time.mutable_model()->set_seq_length(262144);
  time.mutable_model()->set_micro_batch_size(256);
  st = c.TimeGemms(time, [](const v1::TimeGemmsResponse&) {});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("FLOPs; at most"));
  EXPECT_EQ(*c.Health("wavecrest.v1.Advisor"), "SERVING");
}

TEST_F(ServerTest, HundredMegabyteRequestIsRefusedNotFatal) {
  AdvisorClient c(server_.address(), absl::Seconds(60));
  v1::AnalyzeRequest req;
  *req.mutable_model() = Pythia();
  req.mutable_model()->set_name(std::string(100 << 20, 'x'));
  req.set_gpu("h100-sxm");
  absl::Status st = c.Analyze(req).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_EQ(*c.Health(""), "SERVING");
}

TEST_F(ServerTest, GarbageSpecFileIsAClearCliError) {
  testing::TempDir tmp;
  const std::string bad = tmp.File("bad.json");
  std::ofstream(bad) << "{\"hidden_size\": 4096, \"num_attention_heads\": [";
  auto [code, out] = Shell(absl::StrCat(testing::BinaryPath("client/wavecrest"),
                                        " analyze --server ", server_.address(), " --model ", bad));
  EXPECT_EQ(code, 13) << out;
  EXPECT_THAT(out, HasSubstr("bad.json"));
}

// A deadline that passes mid-work (DEADLINE_EXCEEDED, the work freed) is tested in process on a
// clock the test advances: tests/server/advisor_service_test.cc, ADeadlineEndsTheMeasuringAndFreesTheWork.

TEST_F(ServerTest, MetricsPassPromtoolAndCountRequests) {
  AdvisorClient c(server_.address());
  ASSERT_TRUE(AnalyzeWith(c, [](auto&) {}).ok());
  EXPECT_FALSE(AnalyzeWith(c, [](auto& r) { r.set_gpu("nope"); }).ok());
  const std::string m = Metrics(server_.metrics_port());
  EXPECT_THAT(m, HasSubstr("wavecrest_requests_total{code=\"OK\",method=\"Analyze\"} 1"));
  EXPECT_THAT(m, HasSubstr("wavecrest_requests_total{code=\"NOT_FOUND\",method=\"Analyze\"} 1"));
  EXPECT_THAT(m, HasSubstr("wavecrest_request_duration_seconds_bucket{method=\"Analyze\""));
  EXPECT_THAT(m, HasSubstr("wavecrest_queue_capacity 64"));
  EXPECT_THAT(m, HasSubstr("wavecrest_build_info{"));
  // The standard process metrics, read from /proc at the scrape.
  for (const char* name :
       {"process_cpu_seconds_total ", "process_resident_memory_bytes ", "process_open_fds ",
        "process_max_fds ", "process_start_time_seconds "}) {
    EXPECT_THAT(m, HasSubstr(name));
  }
  // The access log: one JSON line per call, with typed values.
  const std::string log = server_.Log();
  EXPECT_THAT(log, HasSubstr(R"("msg":"rpc","method":"Analyze","peer":"ipv4:127.0.0.1:)"));
  EXPECT_THAT(log, ::testing::ContainsRegex(
                       R"(\{"ts":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z","level":"info",)"));
  EXPECT_THAT(log, HasSubstr(R"("code":"NOT_FOUND")"));
  EXPECT_THAT(log, ::testing::ContainsRegex(R"("latency_ms":[0-9.]+[,}])"));
  EXPECT_THAT(log, ::testing::ContainsRegex(R"("grpc_port":[0-9]+,)"));  // a number, not text
  // Calls that time GEMMs log how many were measured, cached and predicted.
  // (the client above)
  v1::TimeGemmsRequest timed;
  timed.set_gpu("h100-sxm");
  timed.set_mode(v1::MODE_PREDICTED);
  auto* g = timed.add_gemms();
  g->set_m(512);
  g->set_n(512);
  g->set_k(512);
  ASSERT_TRUE(c.TimeGemms(timed, [](const v1::TimeGemmsResponse&) {}).ok());
  for (int i = 0; i < 100 && server_.Log().find(R"("method":"TimeGemms")") == std::string::npos;
       ++i) {
    absl::SleepFor(absl::Milliseconds(20));  // the line is written when the stream is done
  }
  EXPECT_THAT(server_.Log(), ::testing::ContainsRegex(
                                 R"("level":"info","component":"server","msg":"rpc",)"
                                 R"("method":"TimeGemms".*"latency_ms":[0-9.]+,)"
                                 R"("gemms_measured":0,"gemms_cached":0,"gemms_predicted":1\})"));
  testing::TempDir tmp;
  std::ofstream(tmp.File("m.txt")) << m;
  auto [code, out] = Shell("promtool check metrics < " + tmp.File("m.txt"));
  EXPECT_EQ(code, 0) << out;
}

TEST_F(ServerTest, RecommendPredictedEndToEnd) {
  AdvisorClient c(server_.address());
  v1::RecommendRequest req;
  *req.mutable_model() = Pythia();
  req.mutable_model()->set_attention(v1::ATTENTION_UNFUSED);
  req.set_gpu("h100-sxm");
  req.set_mode(v1::MODE_PREDICTED);
  req.set_top(5);
  int progress = 0;
  v1::RecommendResponse final;
  ASSERT_TRUE(c.Recommend(req, [&](const v1::RecommendResponse& m) {
                 if (m.done()) {
                   final = m;
                 } else {
                   ++progress;
                 }
               }).ok());
  EXPECT_GT(progress, 0);
  ASSERT_GE(final.candidates_size(), 2);
  EXPECT_EQ(final.candidates(0).rank(), 1);
  EXPECT_GT(final.candidates(0).speedup(), 1.0);
  EXPECT_EQ(final.candidates(0).source(), v1::SOURCE_PREDICTED);
  bool baseline = false;
  for (const auto& cand : final.candidates()) baseline |= cand.baseline();
  EXPECT_TRUE(baseline);
  EXPECT_FALSE(final.candidates(0).reasons().empty());
}

TEST_F(ServerTest, RecommendMeasuredWithoutWorkerIsRefusedAndAutoSaysSo) {
  AdvisorClient c(server_.address());
  v1::RecommendRequest req;
  *req.mutable_model() = Pythia();
  req.set_gpu("h100-sxm");
  req.set_mode(v1::MODE_MEASURED);
  absl::Status st = c.Recommend(req, [](const v1::RecommendResponse&) {});
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("no h100-sxm worker configured"));
  EXPECT_EQ(RetryDelayOf(st), absl::ZeroDuration());
  req.set_mode(v1::MODE_AUTO);
  v1::RecommendResponse final;
  ASSERT_TRUE(c.Recommend(req, [&](const v1::RecommendResponse& m) {
                 if (m.done()) final = m;
               }).ok());
  ASSERT_GT(final.notes_size(), 0);
  EXPECT_THAT(final.notes(0), HasSubstr("PREDICTED"));
  for (const auto& cand : final.candidates()) EXPECT_EQ(cand.source(), v1::SOURCE_PREDICTED);
}

TEST_F(ServerTest, RecommendBadConstraintsNameTheFields) {
  AdvisorClient c(server_.address());
  v1::RecommendRequest req;
  *req.mutable_model() = Pythia();
  req.set_gpu("h100-sxm");
  req.set_param_tolerance(3);
  req.add_allowed_head_dims(-8);
  req.set_top(5000);
  req.add_vary(static_cast<v1::Knob>(42));
  absl::Status st = c.Recommend(req, [](const v1::RecommendResponse&) {});
  ASSERT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  std::vector<std::string> fields;
  for (const auto& v : ViolationsOf(st)) fields.push_back(v.field);
  EXPECT_THAT(fields, ::testing::IsSupersetOf(
                          {"param_tolerance", "allowed_head_dims[0]", "top", "vary[0]"}));
}

// A client that cancels a Recommend once the search reports progress gets CANCELLED, and the
// server, free again, counts the call as cancelled. A search can finish before the cancel reaches
// the server (a fast build on a loaded machine: the server then rightly counts it OK), so the
// cancel is tried up to five times until one lands mid-search.
TEST_F(ServerTest, RecommendCancelledMidSearch) {
  AdvisorClient c(server_.address());
  auto stub = v1::Advisor::NewStub(c.channel());
  v1::RecommendRequest req;
  auto spec = LoadModelFile(testing::SourcePath("examples/models/llama-2-70b.json"));
  ASSERT_TRUE(spec.ok());
  *req.mutable_model() = *spec;
  req.set_gpu("h100-sxm");
  req.set_mode(v1::MODE_PREDICTED);
  req.set_param_tolerance(0.5);
  req.set_max_candidates(100000);
  for (v1::Knob k : {v1::KNOB_HEADS, v1::KNOB_KV_HEADS, v1::KNOB_FFN, v1::KNOB_HIDDEN,
                     v1::KNOB_VOCAB, v1::KNOB_LAYERS}) {
    req.add_vary(k);
  }
  const std::string cancelled_once =
      "wavecrest_requests_total{code=\"CANCELLED\",method=\"Recommend\"} 1";
  std::string metrics;
  for (int attempt = 0; attempt < 5 && metrics.find(cancelled_once) == std::string::npos;
       ++attempt) {
    grpc::ClientContext ctx;
    auto reader = stub->Recommend(&ctx, req);
    v1::RecommendResponse m;
    bool cancelled_mid_search = false;
    while (reader->Read(&m)) {
      if (m.has_progress() && m.progress().total() > 0 && !m.done()) {
        ctx.TryCancel();
        cancelled_mid_search = true;
        break;
      }
    }
    while (reader->Read(&m)) {
    }
    grpc::Status st = reader->Finish();
    ASSERT_TRUE(cancelled_mid_search);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::CANCELLED);
    // The server is free again: nothing in flight.
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      metrics = Metrics(server_.metrics_port());
      if (metrics.find("wavecrest_requests_in_flight{method=\"Recommend\"} 0") !=
          std::string::npos) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_THAT(metrics, HasSubstr("wavecrest_requests_in_flight{method=\"Recommend\"} 0"));
  }
  EXPECT_THAT(metrics, HasSubstr(cancelled_once));
}

TEST_F(ServerTest, CliRecommendOfflineAndThroughServerAgree) {
  const std::string cli = testing::BinaryPath("client/wavecrest");
  const std::string args =
      absl::StrCat(" recommend --model ", testing::SourcePath("examples/models/pythia-2.8b.json"),
                   " --gpu h100-sxm --attention unfused --mode predicted"
                   " --top 3 --format json");
  auto [c1, offline] = Shell(cli + args);
  auto [c2, online] = Shell(cli + args + " --server " + server_.address());
  ASSERT_EQ(c1, 0) << offline;
  ASSERT_EQ(c2, 0) << online;
  EXPECT_EQ(offline, online);  // same inputs, same ranking, in-process or over RPC
  EXPECT_THAT(offline, HasSubstr("\"candidates\""));
  EXPECT_THAT(offline, HasSubstr("\"baseline\": true"));
  auto [c3, table] = Shell(absl::StrCat(cli, " recommend --model ",
                                        testing::SourcePath("examples/models/gpt2-small.json"),
                                        " --gpu a100-sxm-80gb --mode predicted"));
  EXPECT_EQ(c3, 0) << table;
  EXPECT_THAT(table, HasSubstr("v 50257 → 50304"));
  auto [c4, err] = Shell(absl::StrCat(cli, " recommend --model ",
                                      testing::SourcePath("examples/models/gpt2-small.json"),
                                      " --mode measured"));
  EXPECT_EQ(c4, 2) << err;  // a flag that cannot work without another: a usage error
  EXPECT_THAT(err, HasSubstr("--mode"));
}

TEST_F(ServerTest, AReaderThatPausesGetsEveryResultAndTheLatestProgress) {
  // The server produces the 4096 predictions while the client reads nothing: each result, and
  // progress after each, waits in the stream's buffer. The client then reads on and must get
  // every result once, in any order, with progress that only moves forward and ends complete.
  AdvisorClient c(server_.address(), absl::Seconds(60));
  std::set<int32_t> indices;
  int64_t last_done = -1, last_total = 0;
  bool backwards = false, paused = false;
  absl::Status st =
      c.TimeGemms(HeavyTimeRequest(4096, 1024, 1024), [&](const v1::TimeGemmsResponse& m) {
        if (!paused) {
          paused = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        }
        if (m.has_timing()) indices.insert(m.timing().index());
        if (m.has_progress() && m.progress().total() > 0) {
          backwards |= m.progress().done() < last_done;
          last_done = m.progress().done();
          last_total = m.progress().total();
        }
      });
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(indices.size(), 4096u);
  EXPECT_FALSE(backwards);
  EXPECT_EQ(last_total, 4096);
  EXPECT_EQ(last_done, 4096);
}

TEST(ServerQueueTest, FullQueueIsResourceExhaustedWithRetryHint) {
  ServerUnderTest server({"--threads=1", "--queue_capacity=1"});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  constexpr int kCalls = 16;
  std::atomic<int> ok{0}, exhausted{0}, other{0};
  std::mutex mu;
  std::vector<std::string> without_hint;  // RESOURCE_EXHAUSTED that says nothing of retrying
  std::vector<std::thread> threads;
  for (int t = 0; t < kCalls; ++t) {
    threads.emplace_back([&] {
      AdvisorClient c(server.address(), absl::Seconds(60));
      absl::Status st =
          c.TimeGemms(HeavyTimeRequest(4096, 4096, 4096), [](const v1::TimeGemmsResponse&) {});
      if (st.ok()) {
        ok.fetch_add(1);
      } else if (st.code() == absl::StatusCode::kResourceExhausted) {
        exhausted.fetch_add(1);
        if (RetryDelayOf(st) != absl::Seconds(1)) {
          std::lock_guard<std::mutex> lock(mu);
          without_hint.push_back(st.ToString());
        }
      } else {
        other.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_GE(exhausted.load(), 1);  // 16 calls of ~4096 GEMMs each cannot all fit 1 + 1 slots
  EXPECT_GE(ok.load(), 1);
  EXPECT_EQ(other.load(), 0);
  // Every refusal is the queue's, with its 1 s hint. (A reader slower than the producer, as 16
  // clients on 2 cores are, once overflowed the stream's buffer with one progress message per
  // result: RESOURCE_EXHAUSTED without a hint. Progress now supersedes progress.)
  EXPECT_THAT(without_hint, ::testing::IsEmpty());
  AdvisorClient c(server.address());
  EXPECT_EQ(*c.Health("wavecrest.v1.Advisor"), "SERVING");
}

TEST(ServerShutdownTest, SigtermLosesNoInFlightRequestAndExitsZero) {
  ServerUnderTest server;
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  constexpr int kCalls = 8;
  std::atomic<int> ok{0}, retryable{0}, other{0};
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kCalls; ++t) {
    threads.emplace_back([&] {
      AdvisorClient c(server.address(), absl::Seconds(60));
      bool first = true;
      absl::Status st =
          c.TimeGemms(HeavyTimeRequest(2048, 8192, 8192), [&](const v1::TimeGemmsResponse&) {
            if (first) started.fetch_add(1);
            first = false;
          });
      if (st.ok()) {
        ok.fetch_add(1);
      } else if (st.code() == absl::StatusCode::kUnavailable ||
                 st.code() == absl::StatusCode::kResourceExhausted) {
        retryable.fetch_add(1);
      } else {
        other.fetch_add(1);
        ADD_FAILURE() << "not retryable (started: " << !first << "): " << st;
      }
    });
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (started.load() == 0 && absl::Now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  server.process().Signal(SIGTERM);
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load() + retryable.load(), kCalls) << "other failures: " << other.load();
  EXPECT_EQ(other.load(), 0);
  EXPECT_GE(ok.load(), 1);  // the call already streaming when SIGTERM came finished normally
  EXPECT_EQ(server.process().Wait(absl::Seconds(30)), 0) << server.Log();
  EXPECT_THAT(server.Log(), HasSubstr("shutting down"));
}

}  // namespace
}  // namespace wavecrest
