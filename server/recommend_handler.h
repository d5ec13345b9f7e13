// The Recommend RPC's work, run on a job thread.
#ifndef WAVECREST_SERVER_RECOMMEND_HANDLER_H_
#define WAVECREST_SERVER_RECOMMEND_HANDLER_H_

#include "server/advisor_service.h"
#include "server/timing_service.h"

namespace wavecrest {

RecommendHandler MakeRecommendHandler(TimingService* timing);

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_RECOMMEND_HANDLER_H_
