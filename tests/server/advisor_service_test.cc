// Every Advisor RPC through the transport, in one process (issue 37, item 3): the real
// AdvisorService, TimingService and JobQueue over an in-process gRPC channel, with fake GPU
// workers (the analytic model, answering as a GPU would) and a SQLite store in a temporary
// directory. No process is spawned and nothing sleeps; what needs real processes (worker
// supervision, signals, the HTTP socket, PostgreSQL) stays in tests/integration/.
#include <sqlite3.h>

#include <atomic>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/cost_model.h"
#include "core/gpu_catalog.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/advisor_service.h"
#include "server/auth.h"
#include "server/job_queue.h"
#include "server/metrics.h"
#include "server/self_calibration.h"
#include "server/sqlite_store.h"
#include "server/timing_service.h"
#include "service/clock.h"
#include "service/convert.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_workers.h"
#include "wavecrest/v1/advisor.grpc.pb.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

constexpr const char* kKind = FakeWorkers::kKind;
constexpr char kClientToken[] = "client-token-0123456789";
constexpr char kAdminToken[] = "admin-token-0123456789";

// The tokens file the server reads (--auth_tokens_file): one client and one admin token.
Auth TestAuth(const std::filesystem::path& dir) {
  const std::string path = (dir / "tokens").string();
  std::ofstream(path) << kClientToken << " client\n" << kAdminToken << " admin\n";
  chmod(path.c_str(), 0600);
  return *Auth::FromTokensFile(path);
}

// The server's parts, wired as RunServer wires them, behind an in-process channel.
class InProcessServer {
 public:
  explicit InProcessServer(const std::filesystem::path& dir)
      : auth_(TestAuth(dir)),
        workers_(&clock_),
        store_(*SqliteStore::Open((dir / "store.db").string())),
        timing_(&workers_, store_.get(), &metrics_, &clock_),
        jobs_(1, 16),  // one job thread: a job left running would hold up the next call
        calibration_(store_.get(), SelfCalibrationOptions()),
        service_(&timing_, &jobs_, &metrics_, &workers_, &calibration_, store_.get(), &auth_,
                 &clock_) {
    service_.SetModelsDir(std::string(WAVECREST_SOURCE_DIR) + "/examples/models");
    grpc::ServerBuilder builder;
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    stub_ = v1::Advisor::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
  }
  ~InProcessServer() { server_->Shutdown(); }

  v1::Advisor::Stub& stub() { return *stub_; }
  FakeWorkers& workers() { return workers_; }
  MeasurementStore& store() { return *store_; }

 private:
  Metrics metrics_;
  Auth auth_;
  FakeClock clock_;
  FakeWorkers workers_;
  std::unique_ptr<SqliteStore> store_;
  TimingService timing_;
  JobQueue jobs_;
  SelfCalibration calibration_;
  AdvisorService service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Advisor::Stub> stub_;
};

// A small GPT-style model: few GEMMs, so that every call is quick.
v1::ModelSpec SmallModel() {
  v1::ModelSpec m;
  m.set_name("small");
  m.set_hidden_size(1024);
  m.set_num_attention_heads(16);
  m.set_num_layers(4);
  m.set_ffn_hidden_size(4096);
  m.set_vocab_size(50257);
  m.set_seq_length(1024);
  return m;
}

// A call's context with a token (the client's unless `token` says otherwise; empty: none).
std::unique_ptr<grpc::ClientContext> Context(const std::string& token = kClientToken) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  return ctx;
}

// Every message of a server stream, and its status.
template <typename Response, typename Request, typename Call>
std::pair<std::vector<Response>, grpc::Status> ReadAll(Call call, const Request& request) {
  auto ctx = Context();
  auto reader = call(ctx.get(), request);
  std::vector<Response> out;
  for (Response r; reader->Read(&r);) out.push_back(r);
  return {out, reader->Finish()};
}

class RpcTest : public ::testing::Test {
 protected:
  RpcTest()
      : dir_(std::filesystem::temp_directory_path() /
             ("wavecrest-rpc-test-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())),
        server_((std::filesystem::create_directories(dir_), dir_)) {}
  ~RpcTest() override { std::filesystem::remove_all(dir_); }

  std::pair<std::vector<v1::TimeGemmsResponse>, grpc::Status> TimeGemms(v1::Mode mode) {
    v1::TimeGemmsRequest r;
    r.set_gpu(kKind);
    *r.mutable_model() = SmallModel();
    r.set_mode(mode);
    return ReadAll<v1::TimeGemmsResponse>(
        [&](grpc::ClientContext* c, const v1::TimeGemmsRequest& q) {
          return server_.stub().TimeGemms(c, q);
        },
        r);
  }

  std::filesystem::path dir_;
  InProcessServer server_;
};

TEST_F(RpcTest, AnalyzePricesTheModelsGemms) {
  v1::AnalyzeRequest r;
  *r.mutable_model() = SmallModel();
  r.set_gpu(kKind);
  v1::AnalyzeResponse a;
  const grpc::Status st = server_.stub().Analyze(Context().get(), r, &a);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_GT(a.gemms_size(), 5);
  EXPECT_GT(a.step_time_s(), 0);
  EXPECT_EQ(a.gpu(), kKind);
}

TEST_F(RpcTest, TimeGemmsMeasuresOnTheWorkersThenAnswersFromTheStore) {
  auto [first, st] = TimeGemms(v1::MODE_MEASURED);
  ASSERT_TRUE(st.ok()) << st.error_message();
  int measured = 0;
  for (const auto& m : first) measured += m.has_timing() && m.timing().provenance().source() ==
                                                                v1::SOURCE_MEASURED;
  EXPECT_GT(measured, 0);
  EXPECT_EQ(server_.workers().measured(), measured);
  EXPECT_EQ(server_.store().Count(), measured);
  auto [second, st2] = TimeGemms(v1::MODE_MEASURED);
  ASSERT_TRUE(st2.ok()) << st2.error_message();
  int cached = 0;
  for (const auto& m : second) {
    cached += m.has_timing() && m.timing().provenance().source() == v1::SOURCE_CACHED;
  }
  EXPECT_EQ(cached, measured);
  EXPECT_EQ(server_.workers().measured(), measured) << "the second call measured again";
}

// Each freshly measured result says what became of it in the store as it is sent, not only in
// the notes at the end of a call that might never end normally: STORED while the store takes
// it, NOT_STORED when its writes fail (a trigger that fails them as a full disk would). Cached
// answers say nothing.
TEST_F(RpcTest, EachFreshResultSaysWhetherItWasStoredAsItIsSent) {
  auto fates = [](const std::vector<v1::TimeGemmsResponse>& messages) {
    std::map<v1::StorageFate, int> out;
    for (const auto& m : messages) {
      if (m.has_timing()) ++out[m.timing().provenance().storage()];
    }
    return out;
  };
  auto [first, st] = TimeGemms(v1::MODE_MEASURED);
  ASSERT_TRUE(st.ok()) << st.error_message();
  const int measured = static_cast<int>(server_.workers().measured());
  ASSERT_GT(measured, 0);
  EXPECT_EQ(fates(first), (std::map<v1::StorageFate, int>{{v1::STORAGE_FATE_STORED, measured}}));
  auto [cached, st2] = TimeGemms(v1::MODE_MEASURED);
  ASSERT_TRUE(st2.ok()) << st2.error_message();
  EXPECT_EQ(fates(cached),
            (std::map<v1::StorageFate, int>{{v1::STORAGE_FATE_UNSPECIFIED, measured}}));

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "store.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TRIGGER full_disk BEFORE INSERT ON results BEGIN "
                         "SELECT RAISE(FAIL, 'database or disk is full'); END;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  v1::TimeGemmsRequest r;
  r.set_gpu(kKind);
  r.set_mode(v1::MODE_MEASURED);
  for (int i = 1; i <= 3; ++i) {
    v1::GemmShape* g = r.add_gemms();
    g->set_m(128 * i);
    g->set_n(2048);
    g->set_k(2048);
  }
  auto [lost, st3] = ReadAll<v1::TimeGemmsResponse>(
      [&](grpc::ClientContext* c, const v1::TimeGemmsRequest& q) {
        return server_.stub().TimeGemms(c, q);
      },
      r);
  ASSERT_TRUE(st3.ok()) << st3.error_message();
  EXPECT_EQ(fates(lost), (std::map<v1::StorageFate, int>{{v1::STORAGE_FATE_NOT_STORED, 3}}));
  std::string said;
  for (const auto& m : lost) said += m.progress().message() + "\n";
  EXPECT_THAT(said, HasSubstr("could not be stored")) << "the end notes are kept too";
}

// A call whose deadline passes while its GEMMs are measured ends DEADLINE_EXCEEDED, having
// measured only what fitted, and frees the server: nothing in flight, the next call answers. (The
// integration suite ran this on the wall clock with a 10 ms deadline, which raced the machine's
// load; here each measurement takes 2 s of the fake clock.)
TEST_F(RpcTest, ADeadlineEndsTheMeasuringAndFreesTheWork) {
  server_.workers().per_gemm = absl::Seconds(2);
  v1::TimeGemmsRequest r;
  r.set_gpu(kKind);
  *r.mutable_model() = SmallModel();
  r.set_mode(v1::MODE_MEASURED);
  auto ctx = Context();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(9));
  auto reader = server_.stub().TimeGemms(ctx.get(), r);
  int timed = 0;
  for (v1::TimeGemmsResponse m; reader->Read(&m);) timed += m.has_timing();
  const grpc::Status st = reader->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << st.error_message();
  EXPECT_LE(timed, 6);  // the timings streamed before the deadline
  EXPECT_GE(server_.workers().measured(), 4);
  EXPECT_LE(server_.workers().measured(), 6);  // 9 s of a 15-GEMM task at 2 s each
  // The one job thread is free again: the next call runs (it would wait behind a stuck job).
  server_.workers().per_gemm = absl::ZeroDuration();
  auto [again, st2] = TimeGemms(v1::MODE_MEASURED);
  EXPECT_TRUE(st2.ok()) << st2.error_message();
}

TEST_F(RpcTest, TimeLayersThatTheWorkersCannotTimeArePredictedAndSaySo) {
  v1::TimeLayersRequest r;
  r.set_gpu(kKind);
  *r.mutable_model() = SmallModel();
  r.add_kinds(v1::LAYER_KIND_TRANSFORMER);
  r.set_mode(v1::MODE_AUTO);
  auto [messages, st] = ReadAll<v1::TimeLayersResponse>(
      [&](grpc::ClientContext* c, const v1::TimeLayersRequest& q) {
        return server_.stub().TimeLayers(c, q);
      },
      r);
  ASSERT_TRUE(st.ok()) << st.error_message();
  int layers = 0;
  std::string notes;
  for (const auto& m : messages) {
    for (const std::string& n : m.notes()) notes += n + "\n";
    if (!m.has_timing()) continue;
    ++layers;
    EXPECT_EQ(m.timing().provenance().source(), v1::SOURCE_PREDICTED);
    EXPECT_GT(m.timing().time_s(), 0);
  }
  EXPECT_EQ(layers, 1);
  EXPECT_THAT(notes, HasSubstr("cannot time layers"));
  EXPECT_THAT(notes, HasSubstr("PREDICTED"));
}

TEST_F(RpcTest, RecommendMeasuredRanksCandidatesFromTheWorkers) {
  v1::RecommendRequest r;
  *r.mutable_model() = SmallModel();
  r.set_gpu(kKind);
  r.set_mode(v1::MODE_MEASURED);
  auto [messages, st] = ReadAll<v1::RecommendResponse>(
      [&](grpc::ClientContext* c, const v1::RecommendRequest& q) {
        return server_.stub().Recommend(c, q);
      },
      r);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_FALSE(messages.empty());
  const v1::RecommendResponse& last = messages.back();
  EXPECT_TRUE(last.done());
  EXPECT_GT(last.candidates_size(), 1);
  EXPECT_GT(last.gemms_measured(), 0);
  EXPECT_NE(last.verdict(), v1::VERDICT_UNSPECIFIED);
  EXPECT_EQ(server_.workers().measured(), last.gemms_measured());
}

TEST_F(RpcTest, SweepAnswersOnePointPerValue) {
  v1::SweepRequest r;
  *r.mutable_model() = SmallModel();
  r.set_gpu(kKind);
  r.set_vary(v1::SWEEP_DIMENSION_HIDDEN);
  r.set_from(960);
  r.set_to(1088);
  r.set_step(64);
  auto [messages, st] = ReadAll<v1::SweepResponse>(
      [&](grpc::ClientContext* c, const v1::SweepRequest& q) { return server_.stub().Sweep(c, q); },
      r);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_FALSE(messages.empty());
  EXPECT_TRUE(messages.back().done());
  EXPECT_EQ(messages.back().points_size(), 3);
}

TEST_F(RpcTest, ListDevicesShowsTheWorkersTheCatalogAndTheStore) {
  TimeGemms(v1::MODE_MEASURED);
  v1::ListDevicesRequest r;
  v1::ListDevicesResponse d;
  const grpc::Status st = server_.stub().ListDevices(Context().get(), r, &d);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(d.workers_size(), 1);
  EXPECT_EQ(d.workers(0).device().catalog_name(), kKind);
  EXPECT_TRUE(d.workers(0).address().empty()) << "internal fields without include_internal";
  EXPECT_GT(d.catalog_size(), 5);
  EXPECT_TRUE(d.has_cache());
  EXPECT_EQ(d.cache_entries(), server_.store().Count());
}

TEST_F(RpcTest, ExportMeasurementsWritesWhatTheWorkersMeasured) {
  auto [timed, st0] = TimeGemms(v1::MODE_MEASURED);
  ASSERT_TRUE(st0.ok());
  v1::ExportMeasurementsRequest r;
  auto ctx = Context(kAdminToken);
  auto reader = server_.stub().ExportMeasurements(ctx.get(), r);
  std::string csv;
  int64_t rows = 0;
  for (v1::ExportMeasurementsResponse m; reader->Read(&m);) {
    csv += m.csv();
    rows = std::max(rows, m.rows());
  }
  const grpc::Status st = reader->Finish();
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(rows, server_.workers().measured());
  EXPECT_THAT(csv, HasSubstr("Fake H100"));
}

TEST_F(RpcTest, RecalibrateSaysHowManyRowsARefitNeeds) {
  TimeGemms(v1::MODE_MEASURED);
  v1::RecalibrateRequest r;
  r.set_min_rows(1000);
  v1::RecalibrateResponse last;
  const grpc::Status st = server_.stub().Recalibrate(Context(kAdminToken).get(), r, &last);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(last.results_size(), 1);
  EXPECT_EQ(last.results(0).gpu(), kKind);
  EXPECT_FALSE(last.results(0).applied());
  EXPECT_THAT(last.results(0).reason(), HasSubstr("needs at least 1000"));
}

TEST_F(RpcTest, ClearQuarantineReportsWhatItCleared) {
  server_.workers().Quarantine(3);
  v1::ClearQuarantineRequest r;
  v1::ClearQuarantineResponse resp;
  const grpc::Status st = server_.stub().ClearQuarantine(Context(kAdminToken).get(), r, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.cleared(), 3);
}

TEST_F(RpcTest, AdminRpcsNeedAnAdminTokenAndEveryRpcAToken) {
  server_.workers().Quarantine(3);
  v1::ClearQuarantineResponse cleared;
  grpc::Status st = server_.stub().ClearQuarantine(Context().get(), v1::ClearQuarantineRequest(),
                                                   &cleared);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  v1::RecalibrateResponse refit;
  st = server_.stub().Recalibrate(Context().get(), v1::RecalibrateRequest(), &refit);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  v1::AnalyzeRequest analyze;
  *analyze.mutable_model() = SmallModel();
  v1::AnalyzeResponse a;
  st = server_.stub().Analyze(Context("").get(), analyze, &a);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  v1::ListModelsResponse models;
  st = server_.stub().ListModels(Context("").get(), v1::ListModelsRequest(), &models);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(server_.workers().ClearQuarantine(""), 3) << "a refused call cleared the quarantine";
}

TEST_F(RpcTest, TheModelRpcsListParseAndExport) {
  v1::ListModelsResponse models;
  grpc::Status st = server_.stub().ListModels(Context().get(), v1::ListModelsRequest(), &models);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_GT(models.models_size(), 10);
  v1::ParseModelRequest parse;
  parse.set_text(
      R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
          "num_attention_heads": 16, "num_key_value_heads": 4, "num_hidden_layers": 8,
          "intermediate_size": 5632, "vocab_size": 32000})");
  v1::ParseModelResponse parsed;
  st = server_.stub().ParseModel(Context().get(), parse, &parsed);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(parsed.model().num_kv_heads(), 4);
  v1::ExportModelRequest out;
  *out.mutable_model() = parsed.model();
  out.set_format("hf");
  v1::ExportModelResponse exported;
  st = server_.stub().ExportModel(Context().get(), out, &exported);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_THAT(exported.text(), HasSubstr("\"num_key_value_heads\": 4"));
}

TEST_F(RpcTest, AnInvalidRequestNamesTheField) {
  v1::AnalyzeRequest r;
  *r.mutable_model() = SmallModel();
  r.mutable_model()->set_num_attention_heads(15);
  r.set_gpu(kKind);
  v1::AnalyzeResponse a;
  const grpc::Status st = server_.stub().Analyze(Context().get(), r, &a);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("num_attention_heads"));
}

}  // namespace
}  // namespace wavecrest
