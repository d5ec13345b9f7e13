// Request bodies (server/http_body.h) on a fake socket and a clock the reads advance: slots per
// client, the minimum rate, the budget, and what each refusal answers. Nothing sleeps.
#include "server/http_body.h"

#include <deque>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fakes/fake_clock.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

// A sender: each read takes its step's time and returns its bytes (empty: nothing came, as
// civetweb's read when its io timeout passes; an end marker returns 0 at once).
struct Step {
  absl::Duration takes;
  std::string bytes;
};

std::function<int(char*, size_t)> Sender(std::deque<Step> steps, FakeClock& clock) {
  return [steps = std::move(steps), &clock](char* buf, size_t n) mutable {
    if (steps.empty()) return 0;
    Step s = steps.front();
    steps.pop_front();
    clock.SleepFor(s.takes);
    const size_t k = std::min(n, s.bytes.size());
    s.bytes.copy(buf, k);
    return static_cast<int>(k);
  };
}

TEST(HttpBodyTest, AClientHoldsItsShareOfTheSlotsAndLargeBodiesTheirs) {
  BodyLimits l;
  l.slots = 8;
  l.per_client_slots = 2;
  l.large_slots = 3;
  BodySlots slots(l);
  auto a1 = slots.Take("ipv4:10.0.0.1", false);
  auto a2 = slots.Take("ipv4:10.0.0.1", false);
  ASSERT_TRUE(a1 && a2);
  EXPECT_FALSE(slots.Take("ipv4:10.0.0.1", false));  // its share
  EXPECT_TRUE(slots.Take("ipv4:10.0.0.2", false));   // another client's is free (and given back)
  {
    auto b1 = slots.Take("ipv4:10.0.0.3", true);
    auto b2 = slots.Take("ipv4:10.0.0.4", true);
    auto b3 = slots.Take("ipv4:10.0.0.5", true);
    ASSERT_TRUE(b1 && b2 && b3);
    EXPECT_FALSE(slots.Take("ipv4:10.0.0.6", true));  // the large ones are taken
    EXPECT_TRUE(slots.Take("ipv4:10.0.0.6", false));  // a small body still reads
    EXPECT_EQ(slots.in_use(), 5);
  }
  EXPECT_EQ(slots.in_use(), 2);
  a1.reset();
  EXPECT_TRUE(slots.Take("ipv4:10.0.0.1", false));
}

TEST(HttpBodyTest, AWholeBodyReadsAndAShortOneSaysHowShort) {
  FakeClock clock(absl::UnixEpoch());
  std::string body;
  int status = 0;
  EXPECT_TRUE(ReadBody(Sender({{absl::Milliseconds(3), R"({"a": 1})"}}, clock), BodyLimits{}, 8,
                       clock, &body, &status)
                  .ok());
  EXPECT_EQ(body, R"({"a": 1})");
  body.clear();
  absl::Status st =
      ReadBody(Sender({{absl::Milliseconds(3), "{"}, {absl::ZeroDuration(), ""}}, clock),
               BodyLimits{}, 8, clock, &body, &status);
  EXPECT_EQ(status, 400);
  EXPECT_THAT(st.message(), HasSubstr("ended after 1 of 8 bytes"));
}

// A byte a second: refused once the grace has passed, not after the whole budget.
TEST(HttpBodyTest, ATrickleIsRefusedAtTheMinimumRate) {
  FakeClock clock(absl::UnixEpoch());
  std::deque<Step> trickle;
  for (int i = 0; i < 100; ++i) trickle.push_back({absl::Seconds(1), "x"});
  std::string body;
  int status = 0;
  absl::Status st = ReadBody(Sender(trickle, clock), BodyLimits{}, 1000, clock, &body, &status);
  EXPECT_EQ(status, 408);
  EXPECT_THAT(st.message(), HasSubstr("too slowly"));
  EXPECT_LE(clock.Now() - absl::UnixEpoch(), absl::Seconds(2));
  // A large body at 1 MB/s keeps well above the rate and arrives whole.
  std::deque<Step> steady;
  for (int i = 0; i < 64; ++i) steady.push_back({absl::Milliseconds(16), std::string(16384, 'y')});
  body.clear();
  EXPECT_TRUE(
      ReadBody(Sender(steady, clock), BodyLimits{}, 64 * 16384, clock, &body, &status).ok());
  EXPECT_EQ(body.size(), 64u * 16384);
}

TEST(HttpBodyTest, TheBudgetSilenceAndSizeEachHaveTheirStatus) {
  FakeClock clock(absl::UnixEpoch());
  BodyLimits l;
  l.min_bytes_per_s = 0;  // the budget alone
  std::deque<Step> slow;
  for (int i = 0; i < 30; ++i) slow.push_back({absl::Seconds(1), "x"});
  std::string body;
  int status = 0;
  absl::Status st = ReadBody(Sender(slow, clock), l, 1000, clock, &body, &status);
  EXPECT_EQ(status, 408);
  EXPECT_THAT(st.message(), HasSubstr("did not arrive within 10s"));
  EXPECT_LE(clock.Now() - absl::UnixEpoch(), absl::Seconds(11));
  // Nothing for the io timeout: a timeout, not an end.
  body.clear();
  st = ReadBody(Sender({{absl::Milliseconds(1), "{"}, {absl::Seconds(2), ""}}, clock), l, 8, clock,
                &body, &status);
  EXPECT_EQ(status, 408);
  EXPECT_THAT(st.message(), HasSubstr("no byte of the body came"));
  l.max_body_bytes = 10;
  body.clear();
  st = ReadBody(Sender({{absl::Milliseconds(1), std::string(11, 'z')}}, clock), l, -1, clock, &body,
                &status);
  EXPECT_EQ(status, 413);
}

}  // namespace
}  // namespace wavecrest
