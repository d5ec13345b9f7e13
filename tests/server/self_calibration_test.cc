// Self-calibration from the store's measurements (server/self_calibration.h), with a SQLite store
// in a temporary directory and a fake clock: a (kind, dtype) with too few rows is not refitted and
// says how many it needs; one with enough is refitted, stored as a calibration version dated by
// the clock, and another replica adopts it.
#include "server/self_calibration.h"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/cost_model.h"
#include "core/gpu_catalog.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/sqlite_store.h"
#include "service/convert.h"
#include "tests/fakes/fake_clock.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

constexpr char kRefitKind[] = "h100-sxm";

// A fresh directory for one test's store, removed with it.
class StoreDir {
 public:
  explicit StoreDir(const std::string& name)
      : path_(std::filesystem::path(::testing::TempDir()) /
              (name + "-" + std::to_string(getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~StoreDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// `n` distinct BF16 GEMMs measured on an H100 10% slower than the model says, as a worker stores
// them (the cuBLASLt heuristic method).
void StoreMeasurements(MeasurementStore& store, int n) {
  const GpuSpec& gpu = **FindGpu(kRefitKind);
  for (int i = 0; i < n; ++i) {
    GemmKey key;
    key.shape = {256 * (1 + i % 8), 512 * (1 + i / 8), 1024 + 256 * (i % 5), 1};
    v1::GemmTiming t = TimingOf(key);
    t.set_time_s(PredictGemmTime(gpu, key) * 1.1);
    v1::Provenance* p = t.mutable_provenance();
    p->set_source(v1::SOURCE_MEASURED);
    p->set_method(TimingMethod("cublaslt", /*autotune=*/false, /*warm_l2=*/false));
    p->mutable_device()->set_name("NVIDIA H100 80GB HBM3");
    p->set_samples(20);
    store.Store(kRefitKind, t);
  }
}

// Puts the built-in catalog back after a refit published its own.
class CatalogGuard {
 public:
  CatalogGuard() : saved_(GpuCatalog()) {}
  ~CatalogGuard() { PublishCatalog(saved_); }

 private:
  std::vector<GpuSpec> saved_;
};

TEST(SelfCalibrationTest, TooFewRowsAreNotRefittedAndSaySo) {
  StoreDir dir("self-calibration-few");
  auto store = *SqliteStore::Open(dir.File("store.db"));
  StoreMeasurements(*store, 5);
  FakeClock clock;
  SelfCalibration calibration(store.get(), SelfCalibrationOptions(), "test:1", &clock);
  const v1::RecalibrateResponse r = calibration.Run("", /*min_rows=*/64);
  ASSERT_EQ(r.results_size(), 1);
  EXPECT_FALSE(r.results(0).applied());
  EXPECT_EQ(r.results(0).rows(), 5);
  EXPECT_THAT(r.results(0).reason(), HasSubstr("needs at least 64"));
  EXPECT_EQ(r.calibration_version(), 0);
  EXPECT_FALSE(store->LatestCalibration().has_value());
  EXPECT_FALSE(calibration.Adopt()) << "nothing stored to adopt";
}

TEST(SelfCalibrationTest, ARefitIsStoredDatedByTheClockAndAnotherReplicaAdoptsIt) {
  CatalogGuard guard;
  StoreDir dir("self-calibration-refit");
  auto store = *SqliteStore::Open(dir.File("store.db"));
  StoreMeasurements(*store, 40);
  FakeClock clock(absl::FromCivil(absl::CivilSecond(2026, 3, 14, 15, 9, 26), absl::UTCTimeZone()));
  SelfCalibration refitter(store.get(), SelfCalibrationOptions(), "replica-a:1", &clock);
  const v1::RecalibrateResponse r = refitter.Run(kRefitKind, /*min_rows=*/16);
  ASSERT_EQ(r.results_size(), 1);
  EXPECT_TRUE(r.results(0).applied()) << r.results(0).reason();
  EXPECT_GT(r.calibration_version(), 0);
  EXPECT_EQ(refitter.AppliedVersion(), r.calibration_version());
  const std::optional<StoredCalibration> stored = store->LatestCalibration();
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->version, r.calibration_version());
  EXPECT_THAT(stored->file_json, HasSubstr("2026-03-14T15:09:26Z"));
  EXPECT_THAT(stored->file_json, HasSubstr("self-calibration by replica-a:1"));

  SelfCalibration other(store.get(), SelfCalibrationOptions(), "replica-b:2", &clock);
  EXPECT_TRUE(other.Adopt());
  EXPECT_EQ(other.AppliedVersion(), r.calibration_version());
  EXPECT_FALSE(other.Adopt()) << "already applied";
}

}  // namespace
}  // namespace wavecrest
