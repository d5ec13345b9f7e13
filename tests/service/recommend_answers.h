// Reading a Recommend answer in the service tests.
#ifndef WAVECREST_TESTS_SERVICE_RECOMMEND_ANSWERS_H_
#define WAVECREST_TESTS_SERVICE_RECOMMEND_ANSWERS_H_

#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest::testing {

// The candidate marked as the baseline, else the first.
inline const v1::Candidate& Baseline(const v1::RecommendResponse& r) {
  for (const v1::Candidate& c : r.candidates()) {
    if (c.baseline()) return c;
  }
  return r.candidates(0);
}

}  // namespace wavecrest::testing

#endif  // WAVECREST_TESTS_SERVICE_RECOMMEND_ANSWERS_H_
