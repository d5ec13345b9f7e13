#include "server/spooled_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "service/log.h"

namespace wavecrest {

SpooledStore::SpooledStore(std::unique_ptr<MeasurementStore> shared,
                           std::unique_ptr<SqliteStore> spool, absl::Duration drain_every)
    : shared_(std::move(shared)), spool_(std::move(spool)) {
  backlog_.store(spool_->Count());
  LogInfo("store spool", {{"store", shared_->Describe()}, {"spool", spool_->Describe()},
                          {"rows", backlog_.load()}});
  if (backlog_.load() > 0) {
    LogInfo("store spool holds results of an earlier run; copying them to the store",
            {{"spool", spool_->Describe()}, {"rows", backlog_.load()}});
  }
  // Becoming available wakes the drainer at once.
  shared_->OnAvailability([this](bool up) {
    std::function<void(bool)> cb;
    {
      std::lock_guard<std::mutex> lock(cb_mu_);
      cb = on_availability_;
    }
    if (cb) cb(up);
    if (up) stop_cv_.notify_all();
  });
  drainer_ = std::thread([this, drain_every] {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(stop_mu_);
        if (stop_cv_.wait_for(lock, absl::ToChronoMilliseconds(drain_every),
                              [&] { return stop_; })) {
          return;
        }
      }
      if (backlog_.load() > 0 && shared_->Available()) Drain();
    }
  });
}

SpooledStore::~SpooledStore() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (drainer_.joinable()) drainer_.join();
  shared_->OnAvailability(nullptr);
}

std::string SpooledStore::Describe() const { return shared_->Describe(); }

void SpooledStore::OnAvailability(std::function<void(bool)> callback) {
  std::lock_guard<std::mutex> lock(cb_mu_);
  on_availability_ = std::move(callback);
}

void SpooledStore::OnBacklog(std::function<void(int64_t)> callback) {
  {
    std::lock_guard<std::mutex> lock(cb_mu_);
    on_backlog_ = std::move(callback);
  }
  SetBacklog(backlog_.load());
}

void SpooledStore::SetBacklog(int64_t rows) {
  backlog_.store(rows);
  std::function<void(int64_t)> cb;
  {
    std::lock_guard<std::mutex> lock(cb_mu_);
    cb = on_backlog_;
  }
  if (cb) cb(rows);
}

std::optional<v1::GemmTiming> SpooledStore::Lookup(absl::string_view kind, const GemmKey& key,
                                                   absl::string_view method,
                                                   const v1::DeviceFingerprint* fingerprint) {
  if (auto hit = shared_->Lookup(kind, key, method, fingerprint)) return hit;
  if (backlog_.load() == 0) return std::nullopt;
  return spool_->Lookup(kind, key, method, fingerprint);
}

std::optional<v1::LayerTiming> SpooledStore::LookupLayer(absl::string_view kind,
                                                         const LayerKey& key,
                                                         absl::string_view method,
                                                         const v1::DeviceFingerprint* fingerprint) {
  if (auto hit = shared_->LookupLayer(kind, key, method, fingerprint)) return hit;
  if (backlog_.load() == 0) return std::nullopt;
  return spool_->LookupLayer(kind, key, method, fingerprint);
}

StoreOutcome SpooledStore::Spooled(StoreOutcome shared,
                                   const std::function<StoreOutcome()>& spool) {
  if (shared == StoreOutcome::kStored) return shared;
  if (spool() != StoreOutcome::kStored) return StoreOutcome::kLost;
  SetBacklog(spool_->Count());
  return StoreOutcome::kSpooled;
}

StoreOutcome SpooledStore::Store(absl::string_view kind, const v1::GemmTiming& timing) {
  return Spooled(shared_->Store(kind, timing), [&] { return spool_->Store(kind, timing); });
}

StoreOutcome SpooledStore::StoreLayer(absl::string_view kind, const v1::LayerTiming& timing) {
  return Spooled(shared_->StoreLayer(kind, timing),
                 [&] { return spool_->StoreLayer(kind, timing); });
}

int64_t SpooledStore::Drain() {
  std::lock_guard<std::mutex> lock(drain_mu_);
  int64_t copied = 0;
  bool failed = false;
  spool_->ForEach(
      [&](const std::string& kind, const v1::GemmTiming& t) {
        if (failed || shared_->Store(kind, t) != StoreOutcome::kStored) {
          failed = true;  // still down: the rest waits for the next round
          return;
        }
        copied += spool_->RemoveIfUnchanged(t);
      },
      [&](const std::string& kind, const v1::LayerTiming& t) {
        if (failed || shared_->StoreLayer(kind, t) != StoreOutcome::kStored) {
          failed = true;
          return;
        }
        copied += spool_->RemoveLayerIfUnchanged(t);
      });
  const int64_t left = spool_->Count();
  SetBacklog(left);
  if (copied > 0) {
    LogInfo("store spool copied to the store",
            {{"store", shared_->Describe()}, {"rows", copied}, {"left", left}});
  }
  return copied;
}

}  // namespace wavecrest
