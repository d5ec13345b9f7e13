#include "server/worker_setup.h"

#include "server/log.h"
#include "server/result_cache.h"

namespace wavecrest {
namespace {

class CacheOnlySetup final : public WorkerSetup {
 public:
  explicit CacheOnlySetup(std::unique_ptr<ResultCache> cache) : cache_(std::move(cache)) {}
  MeasurementSource* source() override { return nullptr; }
  ResultStore* cache() override { return cache_.get(); }
  const WorkerDirectory* directory() override { return nullptr; }
  void SetHealth(grpc::HealthCheckServiceInterface* health, const char* name) override {
    health->SetServingStatus(name, false);
  }
  void StopHealthUpdates() override {}
  void Stop() override {}

 private:
  std::unique_ptr<ResultCache> cache_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerSetup>> StartWorkers(const ServerOptions& options,
                                                          Metrics* metrics) {
  if ((options.workers != "none" && !options.workers.empty()) ||
      !options.worker_addresses.empty()) {
    return absl::UnimplementedError(
        "--workers/--worker_address: GPU workers (wavecrest-worker) are not part of this build "
        "yet; run with --workers=none (every answer is then PREDICTED and says so)");
  }
  std::unique_ptr<ResultCache> cache;
  if (!options.cache_path.empty()) {
    absl::StatusOr<std::unique_ptr<ResultCache>> c = ResultCache::Open(options.cache_path);
    if (!c.ok()) return c.status();
    cache = std::move(*c);
    metrics->SetCacheEntries(cache->Count());
    LogInfo("result cache open",
            {{"path", options.cache_path}, {"entries", std::to_string(cache->Count())}});
  }
  return std::make_unique<CacheOnlySetup>(std::move(cache));
}

}  // namespace wavecrest
