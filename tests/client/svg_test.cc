// The sweep plot (client/svg.h): what it draws for legal, illegal, predicted and measured points.
#include "client/svg.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

v1::SweepResponse Sweep() {
  v1::SweepResponse r;
  r.set_gpu("h100-sxm");
  for (int i = 0; i < 8; ++i) {
    v1::SweepPoint* p = r.add_points();
    p->set_value(1024 + 64 * i);
    p->set_valid(i != 3);  // an illegal point splits the curve in two
    p->set_tflops(400 + 10 * i);
    p->set_source(i < 4 ? v1::SOURCE_PREDICTED : v1::SOURCE_MEASURED);
    p->set_error_band_p10(-0.1);
    p->set_error_band_p90(0.1);
    if (i == 6) p->add_rules_broken("rule 3");
  }
  return r;
}

TEST(SweepSvgTest, DrawsTheLegalPointsTheirGapsAndTheRulesTheyBreak) {
  const std::string svg = SweepSvg(Sweep(), "hidden_size", "h & <heads>");
  EXPECT_EQ(Count(svg, "<polyline class=\"curve\""), 2);  // split at the illegal point
  EXPECT_EQ(Count(svg, "<circle "), 7);                    // one marker per legal point
  EXPECT_EQ(Count(svg, "class=\"rules-broken\""), 1);
  EXPECT_THAT(svg, HasSubstr("hidden_size = 1408: 460.0 TFLOP/s; breaks rule 3"));
  // The band covers the predicted points only: three legal ones, six vertices.
  const size_t band = svg.find("<polygon class=\"band\"");
  ASSERT_NE(band, std::string::npos);
  const std::string points = svg.substr(band, svg.find("/>", band) - band);
  EXPECT_EQ(Count(points, ","), 6);
  EXPECT_THAT(svg, HasSubstr("h &amp; &lt;heads&gt;"));  // the title escaped
  EXPECT_THAT(svg, Not(HasSubstr("<heads>")));
}

TEST(SweepSvgTest, SaysSoWhenNoPointIsLegal) {
  v1::SweepResponse r = Sweep();
  for (v1::SweepPoint& p : *r.mutable_points()) p.set_valid(false);
  const std::string svg = SweepSvg(r, "hidden_size", "none");
  EXPECT_THAT(svg, HasSubstr("no legal point to plot"));
  EXPECT_EQ(Count(svg, "<circle "), 0);
}

TEST(NiceTicksTest, StepsAreOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_THAT(NiceTicks(0, 1000, 5), ::testing::ElementsAre(0, 200, 400, 600, 800, 1000));
  // 448 / 8 = 56 per tick: the next nice step is 100.
  EXPECT_THAT(NiceTicks(1024, 1472, 8), ::testing::ElementsAre(1100, 1200, 1300, 1400));
}

}  // namespace
}  // namespace wavecrest
