// The worker pool's dispatch side (server/worker_pool.h), in process on a fake clock and without
// starting it: what GpuWorkers answers while no worker is up, and how workers are listed. The
// supervision's decisions are tested in worker_slot_test.cc, the quarantine in
// worker_quarantine_test.cc; real worker processes in tests/integration/worker_test.cc.
#include "server/worker_pool.h"

#include "gtest/gtest.h"
#include "service/errors.h"
#include "tests/fakes/fake_clock.h"

namespace wavecrest {
namespace {

WorkerPoolOptions OneRemote() {
  WorkerPoolOptions o;
  o.remote = {"10.0.0.7:50061"};
  return o;
}

TEST(WorkerPoolTest, WithNoWorkerUpAMeasurementIsRefusedWithARetryHint) {
  FakeClock clock;
  WorkerPool pool(OneRemote(), /*metrics=*/nullptr, &clock);
  EXPECT_EQ(pool.UpCount(), 0);
  EXPECT_FALSE(pool.CanMeasure("h100-sxm"));
  EXPECT_TRUE(pool.MightMeasure("h100-sxm")) << "its kind is not known until it answers";
  EXPECT_FALSE(pool.Fingerprint("h100-sxm").has_value());
  EXPECT_FALSE(pool.KindOfDevice("NVIDIA H100 80GB HBM3").has_value());
  MeasureOptions options;
  options.deadline = clock.Now() + absl::Seconds(10);
  int results = 0;
  const absl::Status st = pool.Measure(
      "h100-sxm", {GemmKey{{4096, 4096, 4096, 1}}}, options,
      [&](size_t, absl::StatusOr<v1::GemmTiming>) { ++results; }, [] { return false; });
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable) << st;
  EXPECT_EQ(RetryDelayOf(st), absl::Seconds(2));
  EXPECT_EQ(results, 0);
  EXPECT_EQ(pool.ClearQuarantine(""), 0);
}

TEST(WorkerPoolTest, WorkersAreListedWithTheirAddressesForAdminsOnly) {
  FakeClock clock;
  WorkerPool pool(OneRemote(), nullptr, &clock);
  v1::ListDevicesResponse client, admin;
  pool.AddWorkers(&client, /*internal=*/false);
  pool.AddWorkers(&admin, /*internal=*/true);
  ASSERT_EQ(client.workers_size(), 1);
  EXPECT_EQ(client.workers(0).id(), "10.0.0.7:50061");
  EXPECT_EQ(client.workers(0).address(), "");
  EXPECT_FALSE(client.workers(0).up());
  EXPECT_EQ(admin.workers(0).address(), "10.0.0.7:50061");
}

TEST(WorkerPoolTest, OnlyAConfiguredOrDiscoverableWorkerMightMeasure) {
  FakeClock clock;
  WorkerPool none(WorkerPoolOptions(), nullptr, &clock);
  EXPECT_FALSE(none.MightMeasure("h100-sxm"));
  WorkerPoolOptions dns;
  dns.discover = "wavecrest-worker.ns.svc:50061";
  WorkerPool discovered(dns, nullptr, &clock);
  EXPECT_TRUE(discovered.MightMeasure("h100-sxm")) << "discovery may yet find one";
  none.Stop();
  none.Stop();  // twice: nothing to do
}

}  // namespace
}  // namespace wavecrest
