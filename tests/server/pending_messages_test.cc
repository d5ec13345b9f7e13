#include "server/pending_messages.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

// "p…" messages are progress, the rest results.
PendingMessages<std::string> Queue(size_t max) {
  return PendingMessages<std::string>(max, [](const std::string& m) { return m[0] == 'p'; });
}

std::vector<std::string> Drain(PendingMessages<std::string>& q) {
  std::vector<std::string> out;
  while (!q.empty()) {
    out.push_back(q.front());
    q.pop_front();
  }
  return out;
}

TEST(PendingMessages, ProgressAfterEachResultDoesNotGrowTheBacklog) {
  // The timing service sends progress after every result. 4096 results (the largest request)
  // to a client that reads nothing yet must fit a queue of 4097: one progress waits, not 4096.
  auto q = Queue(4097);
  ASSERT_TRUE(q.Push("p start", false));
  for (int i = 0; i < 4096; ++i) {
    ASSERT_TRUE(q.Push("r" + std::to_string(i), false)) << i;
    ASSERT_TRUE(q.Push("p" + std::to_string(i + 1), false)) << i;
  }
  EXPECT_EQ(q.size(), 4097u);
  EXPECT_EQ(q.superseded(), 4096);
  std::vector<std::string> out = Drain(q);
  ASSERT_EQ(out.size(), 4097u);
  for (int i = 0; i < 4096; ++i) EXPECT_EQ(out[i], "r" + std::to_string(i));  // all, in order
  EXPECT_EQ(out.back(), "p4096");  // the newest progress, after the results it counts
}

TEST(PendingMessages, ConsecutiveProgressIsReplacedInPlaceAndOrderIsKept) {
  auto q = Queue(16);
  q.Push("r0", false);
  q.Push("p1", false);
  q.Push("p2", false);  // replaces p1 where it is
  q.Push("r1", false);
  q.Push("p3", false);  // p2 has a result behind it: emptied, p3 goes last
  q.Push("r2", false);
  EXPECT_THAT(Drain(q), ::testing::ElementsAre("r0", "r1", "p3", "r2"));
}

TEST(PendingMessages, AProgressBeingWrittenStaysAndKeepsItsAddress) {
  auto q = Queue(256);
  q.Push("p1", false);
  const std::string* writing = &q.front();  // its write has started
  q.Push("p2", true);
  q.Push("r1", true);
  q.Push("p3", true);  // p2 is superseded, p1 is not (in flight)
  for (int i = 0; i < 100; ++i) q.Push("r" + std::to_string(i + 2), true);
  EXPECT_EQ(&q.front(), writing);
  EXPECT_EQ(*writing, "p1");
  std::vector<std::string> out = Drain(q);
  ASSERT_GE(out.size(), 3u);
  EXPECT_EQ(out[0], "p1");
  EXPECT_EQ(out[1], "r1");
  EXPECT_EQ(out[2], "p3");
  EXPECT_EQ(out.size(), 103u);
}

TEST(PendingMessages, EmptiedEntriesAtTheFrontAreSkipped) {
  auto q = Queue(16);
  q.Push("p1", false);
  q.Push("r1", false);
  q.Push("p2", false);  // p1 is at the front, not in flight: it goes
  EXPECT_EQ(q.front(), "r1");
  EXPECT_EQ(q.size(), 2u);
  q.pop_front();
  EXPECT_EQ(q.front(), "p2");
  q.Push("p3", false);  // p2 is the front and the back, not in flight: replaced
  EXPECT_THAT(Drain(q), ::testing::ElementsAre("p3"));
  EXPECT_TRUE(q.empty());
}

TEST(PendingMessages, AClientThatReadsNothingOverflowsOnResults) {
  auto q = Queue(8);
  q.Push("r0", false);
  for (int i = 1; i < 8; ++i) ASSERT_TRUE(q.Push("r" + std::to_string(i), true));
  EXPECT_FALSE(q.Push("r8", true));  // full: only the message being written is kept
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.front(), "r0");
  auto q2 = Queue(2);
  q2.Push("r0", false);
  q2.Push("r1", false);
  EXPECT_FALSE(q2.Push("r2", false));  // nothing in flight: nothing kept
  EXPECT_TRUE(q2.empty());
}

TEST(PendingMessages, WithoutAProgressTestEveryMessageIsKept) {
  PendingMessages<std::string> q(16, nullptr);
  q.Push("p1", false);
  q.Push("p2", false);
  EXPECT_THAT(Drain(q), ::testing::ElementsAre("p1", "p2"));
}

}  // namespace
}  // namespace wavecrest
