// The work of the streaming RPCs that run on job threads (Recommend, Sweep): each measures the
// GEMMs it needs through the TimingService (workers, cache, single flight), then ranks or plots.
#ifndef WAVECREST_SERVER_JOB_HANDLERS_H_
#define WAVECREST_SERVER_JOB_HANDLERS_H_

#include "server/advisor_service.h"
#include "server/timing_service.h"

namespace wavecrest {

RecommendHandler MakeRecommendHandler(TimingService* timing);
SweepHandler MakeSweepHandler(TimingService* timing);

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_JOB_HANDLERS_H_
