// The PostgreSQL store's row operations (server/pg_store_rows.cc) on the shared test cluster:
// results and layer results found by fingerprint or by kind, a key stored again replaced (the
// count moves only for new rows), claims that make a measurement happen once across replicas,
// the measurements a refit reads, versioned calibrations, and every row for copy-store. Skipped
// where no PostgreSQL can start.
#if WAVECREST_WITH_POSTGRES
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/pg_store.h"
#include "server/sqlite_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/integration/fleet.h"
#include "tests/server/shared_postgres.h"

namespace wavecrest {
namespace {

using testing::Key;
using testing::Measured;

constexpr char kRowsMethod[] = "cublaslt-timing-v2 cold-L2 heuristic";

class PgStoreRowsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_POSTGRES(testing::SharedPostgres());
    uri_ = testing::NewTestDatabase();
    a_ = Open("host:1");
    ASSERT_NE(a_, nullptr);
  }
  // A replica named `owner` on the test's database, on the test's clock.
  std::unique_ptr<PgStore> Open(const std::string& owner) {
    StoreOptions o = testing::Fast();
    o.clock = &clock_;
    auto store = PgStore::Open(uri_, owner, o);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(*store) : nullptr;
  }

  FakeClock clock_;
  std::string uri_;
  std::unique_ptr<PgStore> a_;
};

TEST_F(PgStoreRowsTest, ResultsAreFoundByFingerprintOrKindAndReplacedByKey) {
  const v1::GemmTiming t = Measured(Key(1), 1e-4);
  EXPECT_FALSE(a_->Lookup("h100-sxm", Key(1), kRowsMethod, nullptr));
  ASSERT_EQ(a_->Store("h100-sxm", t), StoreOutcome::kStored);
  EXPECT_EQ(a_->Count(), 1);
  auto by_kind = a_->Lookup("h100-sxm", Key(1), kRowsMethod, nullptr);
  ASSERT_TRUE(by_kind.has_value());
  EXPECT_DOUBLE_EQ(by_kind->time_s(), 1e-4);
  auto by_fp = a_->Lookup("other-kind", Key(1), kRowsMethod, &t.provenance().device());
  ASSERT_TRUE(by_fp.has_value());
  EXPECT_FALSE(a_->Lookup("h100-sxm", Key(2), kRowsMethod, nullptr));
  EXPECT_FALSE(a_->Lookup("h100-sxm", Key(1), "another-method", nullptr));
  // The same key again: replaced, not counted twice.
  ASSERT_EQ(a_->Store("h100-sxm", Measured(Key(1), 2e-4)), StoreOutcome::kStored);
  EXPECT_EQ(a_->Count(), 1);
  EXPECT_DOUBLE_EQ(a_->Lookup("h100-sxm", Key(1), kRowsMethod, nullptr)->time_s(), 2e-4);
  // Layers likewise.
  LayerKey key;
  v1::LayerTiming layer;
  layer.set_key(LayerKeyString(key));
  layer.mutable_provenance()->set_method("layer-v1");
  EXPECT_EQ(a_->StoreLayer("h100-sxm", v1::LayerTiming()), StoreOutcome::kLost) << "no key";
  ASSERT_EQ(a_->StoreLayer("h100-sxm", layer), StoreOutcome::kStored);
  EXPECT_EQ(a_->Count(), 2);
  EXPECT_TRUE(a_->LookupLayer("h100-sxm", key, "layer-v1", nullptr).has_value());
  EXPECT_FALSE(a_->LookupLayer("a100", key, "layer-v1", nullptr).has_value());
}

// A measurement claimed by one replica is not claimed by another until released (or its lease
// ends on the database's clock); a replica may claim again what it holds.
TEST_F(PgStoreRowsTest, AClaimIsHeldByOneReplicaUntilReleased) {
  std::unique_ptr<PgStore> b = Open("host:2");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(a_->Claim("gemm-1", absl::Seconds(30)));
  EXPECT_TRUE(a_->Claim("gemm-1", absl::Seconds(30))) << "its own claim";
  EXPECT_FALSE(b->Claim("gemm-1", absl::Seconds(30)));
  EXPECT_TRUE(b->Claim("gemm-2", absl::Seconds(30)));
  a_->Release("gemm-1");
  EXPECT_TRUE(b->Claim("gemm-1", absl::Seconds(30)));
  b->ReleaseAll();
  EXPECT_EQ(testing::SharedPostgres().Rows(uri_.substr(uri_.rfind('/') + 1), "claims"), 0);
  EXPECT_TRUE(a_->Claim("gemm-2", absl::Seconds(30)));
}

// What a refit reads: measured results only, of one kind or of all; every row for copy-store.
TEST_F(PgStoreRowsTest, MeasurementsAreWhatGpusMeasured) {
  ASSERT_EQ(a_->Store("h100-sxm", Measured(Key(1), 1e-4)), StoreOutcome::kStored);
  ASSERT_EQ(a_->Store("a100-sxm", Measured(Key(2), 2e-4)), StoreOutcome::kStored);
  v1::GemmTiming predicted = Measured(Key(3), 3e-4);
  predicted.mutable_provenance()->set_source(v1::SOURCE_PREDICTED);
  ASSERT_EQ(a_->Store("h100-sxm", predicted), StoreOutcome::kStored);
  EXPECT_EQ(a_->Measurements("").size(), 2u);
  auto h100 = a_->MeasurementsBy("h100-sxm", clock_.Now() + absl::Seconds(30));
  ASSERT_TRUE(h100.ok()) << h100.status();
  ASSERT_EQ(h100->size(), 1u);
  EXPECT_EQ((*h100)[0].first, "h100-sxm");
  int gemms = 0;
  a_->ForEach([&](const std::string&, const v1::GemmTiming&) { ++gemms; },
              [](const std::string&, const v1::LayerTiming&) {});
  EXPECT_EQ(gemms, 3) << "copy-store copies every row, predictions too";
}

TEST_F(PgStoreRowsTest, CalibrationsAreVersioned) {
  EXPECT_FALSE(a_->LatestCalibration().has_value());
  auto first = a_->PublishCalibration("{\"refit\": 1}", "host:1");
  auto second = a_->PublishCalibration("{\"refit\": 2}", "host:2");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_LT(*first, *second);
  auto latest = a_->LatestCalibration();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->version, *second);
  EXPECT_EQ(latest->file_json, "{\"refit\": 2}");
  EXPECT_EQ(latest->created_by, "host:2");
}

}  // namespace
}  // namespace wavecrest

#else
#include "gtest/gtest.h"

TEST(PgStoreRowsTest, BuiltWithoutPostgres) {
  GTEST_SKIP() << "this build has no PostgreSQL (libpq-dev was not found at build time)";
}
#endif  // WAVECREST_WITH_POSTGRES
