// The one store interface's free functions (server/measurement_store.h): which specs name
// PostgreSQL, URIs with their passwords redacted, the default spool path, copying one store into
// another, and OpenStore's choice of store (a SQLite file here; a PostgreSQL URI that cannot be
// reached fails at once, naming the URI without its password).
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/measurement_store.h"
#include "server/sqlite_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/integration/fleet.h"
#include "tests/integration/process.h"

namespace wavecrest {
namespace {

using testing::Key;
using testing::Measured;
using testing::TempDir;

TEST(MeasurementStoreTest, PostgresUrisAreTheTwoSchemes) {
  EXPECT_TRUE(IsPostgresUri("postgresql://wavecrest@db:5432/wavecrest"));
  EXPECT_TRUE(IsPostgresUri("postgres://db/x"));
  EXPECT_FALSE(IsPostgresUri("/var/lib/wavecrest/results.db"));
  EXPECT_FALSE(IsPostgresUri("postgresql:/db"));
  EXPECT_FALSE(IsPostgresUri("sqlite://results.db"));
}

TEST(MeasurementStoreTest, RedactUriHidesEveryPassword) {
  EXPECT_EQ(RedactUri("postgresql://wavecrest:s3cret@db:5432/wc"),
            "postgresql://wavecrest:***@db:5432/wc");
  EXPECT_EQ(RedactUri("postgresql://wavecrest@db:5432/wc"), "postgresql://wavecrest@db:5432/wc");
  EXPECT_EQ(RedactUri("postgresql://db/wc?user=a&password=s3cret&sslmode=require"),
            "postgresql://db/wc?user=a&password=***&sslmode=require");
  EXPECT_EQ(RedactUri("postgresql://db/wc?password=s3cret"), "postgresql://db/wc?password=***");
  // An '@' past the host is no user's: nothing to hide there.
  EXPECT_EQ(RedactUri("postgresql://db/a:b@c"), "postgresql://db/a:b@c");
}

// One spool per database, found again after a restart: under $XDG_CACHE_HOME, named by a stable
// hash of the URI without its password.
TEST(MeasurementStoreTest, TheDefaultSpoolPathIsOnePerDatabase) {
  const char* saved = std::getenv("XDG_CACHE_HOME");
  const std::string before = saved ? saved : "";
  setenv("XDG_CACHE_HOME", "/tmp/wc-cache", 1);
  const std::string a = DefaultSpoolPath("postgresql://u:one@db/a");
  EXPECT_TRUE(absl::StartsWith(a, "/tmp/wc-cache/wavecrest/spool-")) << a;
  EXPECT_TRUE(absl::EndsWith(a, ".db")) << a;
  EXPECT_EQ(a.size(), std::string("/tmp/wc-cache/wavecrest/spool-").size() + 16 + 3) << a;
  EXPECT_EQ(a, DefaultSpoolPath("postgresql://u:two@db/a")) << "the password changed the path";
  EXPECT_NE(a, DefaultSpoolPath("postgresql://u:one@db/b"));
  if (saved) {
    setenv("XDG_CACHE_HOME", before.c_str(), 1);
  } else {
    unsetenv("XDG_CACHE_HOME");
  }
}

// A store that keeps nothing (a full disk, a lost database).
class StoreThatKeepsNothing final : public MeasurementStore {
 public:
  std::optional<v1::GemmTiming> Lookup(absl::string_view, const GemmKey&, absl::string_view,
                                       const v1::DeviceFingerprint*) override {
    return std::nullopt;
  }
  StoreOutcome Store(absl::string_view, const v1::GemmTiming&) override {
    return StoreOutcome::kLost;
  }
  std::string Describe() const override { return "nothing"; }
  int64_t Count() override { return 0; }
  void OnCount(std::function<void(int64_t)>) override {}
  std::vector<std::pair<std::string, v1::GemmTiming>> Measurements(absl::string_view) override {
    return {};
  }
  absl::StatusOr<int64_t> PublishCalibration(const std::string&, const std::string&) override {
    return absl::UnavailableError("keeps nothing");
  }
  std::optional<StoredCalibration> LatestCalibration() override { return std::nullopt; }
  void ForEach(const std::function<void(const std::string&, const v1::GemmTiming&)>&,
               const std::function<void(const std::string&, const v1::LayerTiming&)>&) override {}
};

TEST(MeasurementStoreTest, CopyStoreCopiesEveryResultAndTheNewestCalibration) {
  TempDir dir;
  FakeClock clock;
  auto from = SqliteStore::Open(dir.File("from.db"), clock);
  auto to = SqliteStore::Open(dir.File("to.db"), clock);
  ASSERT_TRUE(from.ok() && to.ok());
  for (int i = 1; i <= 3; ++i) {
    ASSERT_EQ((*from)->Store("h100-sxm", Measured(Key(i), 1e-4 * i)), StoreOutcome::kStored);
  }
  v1::LayerTiming layer;
  layer.set_key("attention|b1|s2048|h32|d128");
  layer.mutable_provenance()->set_method("layer-v1");
  ASSERT_EQ((*from)->StoreLayer("h100-sxm", layer), StoreOutcome::kStored);
  ASSERT_TRUE((*from)->PublishCalibration("{\"v\": 1}", "a:1").ok());
  ASSERT_TRUE((*from)->PublishCalibration("{\"v\": 2}", "a:1").ok());
  // A result `to` already has is replaced, not added.
  ASSERT_EQ((*to)->Store("h100-sxm", Measured(Key(1), 9e-4)), StoreOutcome::kStored);

  absl::StatusOr<int64_t> copied = CopyStore(**from, **to);
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(*copied, 4);
  EXPECT_EQ((*to)->Count(), 4);
  auto one = (*to)->Lookup("h100-sxm", Key(1), "cublaslt-timing-v2 cold-L2 heuristic", nullptr);
  ASSERT_TRUE(one.has_value());
  EXPECT_DOUBLE_EQ(one->time_s(), 1e-4);
  auto cal = (*to)->LatestCalibration();
  ASSERT_TRUE(cal.has_value());
  EXPECT_EQ(cal->file_json, "{\"v\": 2}");

  StoreThatKeepsNothing nothing;
  absl::StatusOr<int64_t> failed = CopyStore(**from, nothing);
  EXPECT_TRUE(absl::IsUnavailable(failed.status())) << failed.status();
  EXPECT_TRUE(absl::StrContains(failed.status().message(), "4 of 4 results could not be copied"))
      << failed.status();
}

TEST(MeasurementStoreTest, OpenStoreOpensAFilePathAsSqlite) {
  TempDir dir;
  FakeClock clock;
  StoreOptions options;
  options.clock = &clock;
  auto store = OpenStore(dir.File("sub/results.db"), "host:1", options);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->Describe(), "sqlite:" + dir.File("sub/results.db"));
  EXPECT_FALSE((*store)->Shared());
  EXPECT_TRUE((*store)->Available());
}

// Nothing listens on port 1: the connection is refused at once. The error names the store
// without its password, and says UNAVAILABLE (trying later may help) where PostgreSQL is built
// in.
TEST(MeasurementStoreTest, AnUnreachablePostgresStoreFailsAtOnceWithoutItsPassword) {
  FakeClock clock;
  StoreOptions options;
  options.clock = &clock;
  options.spool = "none";
  auto store = OpenStore("postgresql://wavecrest:s3cret@127.0.0.1:1/wc", "host:1", options);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::StrContains(store.status().message(),
                                "postgresql://wavecrest:***@127.0.0.1:1/wc"))
      << store.status();
  EXPECT_FALSE(absl::StrContains(store.status().message(), "s3cret")) << store.status();
#if WAVECREST_WITH_POSTGRES
  EXPECT_TRUE(absl::IsUnavailable(store.status())) << store.status();
#else
  EXPECT_TRUE(absl::IsFailedPrecondition(store.status())) << store.status();
#endif
}

}  // namespace
}  // namespace wavecrest
