// Self-calibration from the fleet, end to end: a result cache holding GPU measurements (here a
// fake measurement source: the published XLA table's H100 BF16 rows, stored as a cuBLASLt worker
// would store them) makes the real server refit h100-sxm at start; its predictions then recover
// the served figures within the cross-validated error and say where their calibration comes from.
#include "core/calibration.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/convert.h"
#include "server/result_cache.h"
#include "tests/integration/process.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using testing::ServerUnderTest;
using testing::SourcePath;
using testing::TempDir;

std::vector<Measurement> TableRows(const std::string& gpu, DType dtype) {
  absl::StatusOr<std::vector<Measurement>> all =
      ReadMeasurementsFile(SourcePath("data/measurements/xla-gemm-perf-table.csv"));
  EXPECT_TRUE(all.ok()) << all.status();
  std::vector<Measurement> out;
  for (const Measurement& m : *all) {
    if (m.gpu == gpu && m.key.dtype == dtype) out.push_back(m);
  }
  return out;
}

// Stores `rows` in the cache at `path` as MEASURED results of a cuBLASLt worker.
void FillCache(const std::string& path, const std::vector<Measurement>& rows) {
  auto cache = ResultCache::Open(path);
  ASSERT_TRUE(cache.ok()) << cache.status();
  for (const Measurement& m : rows) {
    v1::GemmTiming t = TimingOf(m.key);
    t.set_time_s(m.median_s);
    t.set_tflops(GemmFlops(m.key.shape) / m.median_s / 1e12);
    v1::Provenance* p = t.mutable_provenance();
    p->set_source(v1::SOURCE_MEASURED);
    p->set_method("cublaslt-timing-v2 cold-L2 heuristic");
    p->mutable_device()->set_name("NVIDIA H100 80GB HBM3 (replayed from the XLA table)");
    p->mutable_device()->set_backend("cublaslt");
    p->mutable_device()->set_sm_count(132);
    p->mutable_measured_at()->set_seconds(1);
    (*cache)->Store("h100-sxm", t);
  }
}

TEST(SelfCalibrationTest, ServerRefitsFromItsOwnMeasurementsAndRecoversThem) {
  TempDir dir;
  const std::string cache = dir.File("cache.db");
  const std::vector<Measurement> rows = TableRows("h100-sxm", DType::kBf16);
  ASSERT_EQ(rows.size(), 225u);
  FillCache(cache, rows);

  ServerUnderTest server({"--cache=" + cache, "--self_calibrate_min_rows=100"});
  ASSERT_TRUE(server.WaitReady(absl::Seconds(120))) << server.Log();
  EXPECT_THAT(server.Log(), HasSubstr("recalibrated"));
  AdvisorClient client(server.address(), absl::Seconds(120));

  // Export: the 225 measurements, in the measurement schema.
  absl::StatusOr<std::string> csv = client.ExportMeasurements(v1::ExportMeasurementsRequest());
  ASSERT_TRUE(csv.ok()) << csv.status();
  absl::StatusOr<std::vector<Measurement>> exported = ParseMeasurementsCsv(*csv, "export");
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(exported->size(), 225u);
  EXPECT_EQ((*exported)[0].source, "wavecrest-result-cache");

  // Recalibrate on request: the same data, the same fit; its cross-validated error.
  v1::RecalibrateRequest req;
  req.set_gpu("h100-sxm");
  absl::StatusOr<v1::RecalibrateResponse> refit = client.Recalibrate(req);
  ASSERT_TRUE(refit.ok()) << refit.status();
  ASSERT_EQ(refit->results_size(), 1);
  const v1::RecalibrationResult& r = refit->results(0);
  EXPECT_TRUE(r.applied());
  EXPECT_EQ(r.rows(), 225);
  EXPECT_GT(r.cv_median_error(), 0.0);
  EXPECT_LT(r.cv_median_error(), 0.10);
  EXPECT_THAT(r.label(), HasSubstr("this deployment's own measurements"));

  // Predictions recover the served figures within the cross-validated error, and say so.
  v1::TimeGemmsRequest time;
  time.set_gpu("h100-sxm");
  time.set_mode(v1::MODE_PREDICTED);
  time.set_layout(v1::LAYOUT_NN);
  time.set_dtype(v1::DTYPE_BF16);
  for (const Measurement& m : rows) *time.add_gemms() = ToProto(m.key.shape);
  std::vector<double> ratios;
  std::string calibration;
  ASSERT_TRUE(client
                  .TimeGemms(time,
                             [&](const v1::TimeGemmsResponse& msg) {
                               if (!msg.has_timing()) return;
                               const v1::GemmTiming& t = msg.timing();
                               ratios.push_back(rows[t.index()].median_s / t.time_s());
                               calibration = t.provenance().calibration();
                             })
                  .ok());
  ASSERT_EQ(ratios.size(), rows.size());
  EXPECT_THAT(calibration, HasSubstr("this deployment's own measurements"));
  EXPECT_LE(ErrorsOf(ratios).median_abs, r.cv_median_error());

  // Not enough rows: nothing refitted, and the answer says why.
  req.set_min_rows(1000);
  refit = client.Recalibrate(req);
  ASSERT_TRUE(refit.ok());
  EXPECT_FALSE(refit->results(0).applied());
  EXPECT_THAT(refit->results(0).reason(), HasSubstr("at least 1000"));
}

TEST(SelfCalibrationTest, WithoutACacheTheCallsSayWhatIsMissing) {
  ServerUnderTest server;
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  AdvisorClient client(server.address(), absl::Seconds(10));
  EXPECT_EQ(client.Recalibrate(v1::RecalibrateRequest()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  absl::Status st = client.ExportMeasurements(v1::ExportMeasurementsRequest()).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("--cache"));
}

}  // namespace
}  // namespace wavecrest
