#include "server/spooled_store.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "service/log.h"

namespace wavecrest {

SpooledStore::SpooledStore(std::unique_ptr<MeasurementStore> shared,
                           std::unique_ptr<SqliteStore> spool, const StoreOptions& options,
                           std::string owner)
    : shared_(std::move(shared)),
      spool_(std::move(spool)),
      owner_(std::move(owner)),
      clock_(options.clock != nullptr ? options.clock : &Clock::Real()),
      lease_(std::max(options.spool_lease, absl::Milliseconds(300))),
      adopt_(options.adopt_spools) {
  // Which store this spool is for: a replica adopts only spools of its own store.
  const std::optional<std::string> made_for =
      spool_->SetMetaIfAbsent("store", shared_->Describe());
  if (made_for && *made_for != shared_->Describe()) {
    LogWarning("store spool was made for another store; its results are copied into this one",
               {{"spool", spool_->Describe()}, {"made_for", *made_for},
                {"store", shared_->Describe()}});
  }
  RenewLeases(clock_->Now());
  backlog_.store(spool_->CountRows());
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
  const absl::Duration drain_every = options.drain_every;
  drainer_ = std::thread([this, drain_every] {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(stop_mu_);
        if (stop_cv_.wait_for(lock, absl::ToChronoMilliseconds(drain_every),
                              [&] { return stop_; })) {
          return;
        }
      }
      Drain();
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
  // What is left here is anyone's to drain: another replica adopts it, or the next run.
  spool_->DropLease(owner_);
  for (auto& a : adopted_) a->DropLease(owner_);
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

std::optional<v1::LayerTiming> SpooledStore::LookupLayerBy(
    absl::string_view kind, const LayerKey& key, absl::string_view method,
    const v1::DeviceFingerprint* fingerprint, absl::Time deadline) {
  if (auto hit = shared_->LookupLayerBy(kind, key, method, fingerprint, deadline)) return hit;
  if (backlog_.load() == 0) return std::nullopt;
  return spool_->LookupLayer(kind, key, method, fingerprint);
}

StoreOutcome SpooledStore::Spooled(StoreOutcome shared,
                                   const std::function<StoreOutcome()>& spool) {
  if (shared == StoreOutcome::kStored) return shared;
  if (spool() != StoreOutcome::kStored) return StoreOutcome::kLost;
  SetBacklog(spool_->CountRows() + adopted_rows_.load());
  return StoreOutcome::kSpooled;
}

StoreOutcome SpooledStore::Store(absl::string_view kind, const v1::GemmTiming& timing) {
  return Spooled(shared_->Store(kind, timing), [&] { return spool_->Store(kind, timing); });
}

StoreOutcome SpooledStore::StoreLayer(absl::string_view kind, const v1::LayerTiming& timing) {
  return Spooled(shared_->StoreLayer(kind, timing),
                 [&] { return spool_->StoreLayer(kind, timing); });
}

int64_t SpooledStore::DrainOne(SqliteStore& spool) {
  int64_t copied = 0;
  bool failed = false;
  spool.ForEach(
      [&](const std::string& kind, const v1::GemmTiming& t) {
        if (failed || shared_->Store(kind, t) != StoreOutcome::kStored) {
          failed = true;  // still down: the rest waits for the next round
          return;
        }
        copied += spool.RemoveIfUnchanged(t);
      },
      [&](const std::string& kind, const v1::LayerTiming& t) {
        if (failed || shared_->StoreLayer(kind, t) != StoreOutcome::kStored) {
          failed = true;
          return;
        }
        copied += spool.RemoveLayerIfUnchanged(t);
      });
  if (copied > 0) {
    LogInfo("store spool copied to the store", {{"store", shared_->Describe()},
                                                {"spool", spool.Describe()},
                                                {"rows", copied},
                                                {"left", spool.CountRows()}});
  }
  return copied;
}

void SpooledStore::RenewLeases(absl::Time now) {
  if (now < next_renewal_) return;
  next_renewal_ = now + lease_ / 3;
  if (!spool_->RenewLease(owner_, now + lease_, now)) {
    LogWarning("store spool: renewing this replica's lease failed",
               {{"spool", spool_->Describe()}});
  }
  for (auto& a : adopted_) a->RenewLease(owner_, now + lease_, now);
}

void SpooledStore::AdoptOrphans(absl::Time now) {
  if (!adopt_ || now < next_scan_) return;
  next_scan_ = now + lease_ / 3;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path own = fs::absolute(spool_->path(), ec);
  for (const fs::directory_entry& e : fs::directory_iterator(own.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (!absl::StartsWith(name, "spool-") || !absl::EndsWith(name, ".db")) continue;
    if (!e.is_regular_file(ec) || fs::equivalent(e.path(), own, ec)) continue;
    const bool held = std::any_of(adopted_.begin(), adopted_.end(), [&](const auto& a) {
      return fs::equivalent(e.path(), a->path(), ec);
    });
    if (held) continue;
    const std::optional<SpoolFileInfo> info = InspectSpoolFile(e.path().string(), now);
    if (!info || info->store != shared_->Describe() || info->live_leases > 0 || info->rows == 0) {
      continue;
    }
    absl::StatusOr<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(e.path().string(), *clock_);
    if (!s.ok()) continue;
    (*s)->RenewLease(owner_, now + lease_, now);
    LogInfo("store spool: adopting the spool of a replica that is gone",
            {{"spool", (*s)->Describe()}, {"rows", info->rows}, {"store", shared_->Describe()}});
    adopted_.push_back(std::move(*s));
  }
}

int64_t SpooledStore::Drain() {
  std::lock_guard<std::mutex> lock(drain_mu_);
  const absl::Time now = clock_->Now();
  RenewLeases(now);
  AdoptOrphans(now);
  // The true count every round: replicas sharing the file add rows this one never counted.
  int64_t copied = 0, own = spool_->CountRows(), adopted = 0;
  if (own > 0 && shared_->Available()) {
    copied += DrainOne(*spool_);
    own = spool_->CountRows();
  }
  for (auto it = adopted_.begin(); it != adopted_.end();) {
    SqliteStore& a = **it;
    int64_t rows = a.CountRows();
    if (rows > 0 && shared_->Available()) {
      copied += DrainOne(a);
      rows = a.CountRows();
    }
    if (rows > 0) {
      adopted += rows;
      ++it;
      continue;
    }
    a.DropLease(owner_);
    LogInfo("store spool: an adopted spool is drained", {{"spool", a.Describe()}});
    it = adopted_.erase(it);
  }
  adopted_rows_.store(adopted);
  SetBacklog(own + adopted);
  return copied;
}

}  // namespace wavecrest
