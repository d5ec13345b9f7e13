// The worker pool's DNS discovery (server/worker_discovery.cc): a NAME:PORT resolves to sorted
// addresses, and the discovered workers are retired when gone from the name, reconnected when
// back, and added when new (server/worker_slot.h's Rediscover).
#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/worker_pool.h"
#include "server/worker_slot.h"

namespace wavecrest {
namespace {

TEST(WorkerDiscoveryTest, ANameResolvesToItsAddressesAndABadOneSaysWhy) {
  absl::StatusOr<std::vector<std::string>> local = ResolveWorkers("localhost:50061");
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_THAT(*local, ::testing::Contains(::testing::AnyOf("127.0.0.1:50061", "[::1]:50061")));
  EXPECT_TRUE(std::is_sorted(local->begin(), local->end()));
  EXPECT_EQ(ResolveWorkers("no-port").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveWorkers(":50061").status().code(), absl::StatusCode::kInvalidArgument);
}

std::unique_ptr<WorkerSlot> Discovered(const std::string& address) {
  auto w = std::make_unique<WorkerSlot>();
  w->id = "dns:" + address;
  w->address = address;
  w->discovered = true;
  return w;
}

TEST(WorkerDiscoveryTest, WorkersGoneFromTheNameAreRetiredAndComeBackWithIt) {
  std::vector<std::unique_ptr<WorkerSlot>> workers;
  workers.push_back(Discovered("10.0.0.1:50061"));
  workers.push_back(Discovered("10.0.0.2:50061"));
  auto listed = std::make_unique<WorkerSlot>();  // --worker_addresses: never retired
  listed->address = "10.0.0.9:50061";
  workers.push_back(std::move(listed));

  EXPECT_THAT(Rediscover(workers, {"10.0.0.2:50061", "10.0.0.3:50061"}),
              ::testing::ElementsAre("10.0.0.3:50061"));
  EXPECT_TRUE(workers[0]->retired);
  EXPECT_FALSE(workers[1]->retired);
  EXPECT_FALSE(workers[2]->retired);

  workers[0]->next_attempt = absl::InfiniteFuture();
  EXPECT_THAT(Rediscover(workers, {"10.0.0.1:50061", "10.0.0.2:50061"}), ::testing::IsEmpty());
  EXPECT_FALSE(workers[0]->retired) << "back on the same address";
  EXPECT_EQ(workers[0]->next_attempt, absl::InfinitePast()) << "reconnected at once";
}

}  // namespace
}  // namespace wavecrest
