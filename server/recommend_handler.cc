#include "server/recommend_handler.h"

namespace wavecrest {

// Not yet implemented: an empty handler makes the service answer UNIMPLEMENTED.
RecommendHandler MakeRecommendHandler(TimingService* /*timing*/) { return {}; }

}  // namespace wavecrest
