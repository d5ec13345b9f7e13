// A shared store with a local write-ahead spool: nothing acknowledged is lost while the shared
// store is down. A result the shared store does not take (down, frozen past its timeout, full
// disk, any failed write) goes into a SQLite file on this host (StoreOutcome::kSpooled), which a
// background thread copies into the shared store once it answers again, removing each row it
// copied (unless a newer result of the same key arrived meanwhile). Lookups that miss the shared
// store look in the spool, so this replica keeps finding what it measured during an outage.
//
// Who drains what: every round (drain_every) the thread reads the spool's true row count, so a
// file shared by several replicas (the default path) is drained by any live one of them, whoever
// wrote the rows. Each replica holds a lease on its spool (StoreOptions::spool_lease, renewed
// every third of it, ended at shutdown); a spool file beside this one (spool-*.db in the same
// directory) that spools for the same store, holds results and has no live lease is adopted:
// drained here, then let go. Backlog() is every row of this replica's spool and of the spools it
// adopted (the wavecrest_store_backlog gauge).
#ifndef WAVECREST_SERVER_SPOOLED_STORE_H_
#define WAVECREST_SERVER_SPOOLED_STORE_H_

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/measurement_store.h"
#include "server/sqlite_store.h"

namespace wavecrest {

class SpooledStore final : public MeasurementStore {
 public:
  // Drains what `spool` holds (a previous run's backlog) as soon as `shared` answers. `owner`
  // names this process in the spool's leases (host:pid), which run on options.clock.
  SpooledStore(std::unique_ptr<MeasurementStore> shared, std::unique_ptr<SqliteStore> spool,
               const StoreOptions& options, std::string owner);
  ~SpooledStore() override;

  // MeasurementStore.
  std::optional<v1::GemmTiming> Lookup(absl::string_view kind, const GemmKey& key,
                                       absl::string_view method,
                                       const v1::DeviceFingerprint* fingerprint) override;
  StoreOutcome Store(absl::string_view kind, const v1::GemmTiming& timing) override;
  std::optional<v1::LayerTiming> LookupLayer(absl::string_view kind, const LayerKey& key,
                                             absl::string_view method,
                                             const v1::DeviceFingerprint* fingerprint) override;
  StoreOutcome StoreLayer(absl::string_view kind, const v1::LayerTiming& timing) override;
  std::optional<v1::LayerTiming> LookupLayerBy(absl::string_view kind, const LayerKey& key,
                                               absl::string_view method,
                                               const v1::DeviceFingerprint* fingerprint,
                                               absl::Time deadline) override;
  bool Claim(const std::string& flight, absl::Duration lease) override {
    return shared_->Claim(flight, lease);
  }
  void Release(const std::string& flight) override { shared_->Release(flight); }

  // MeasurementStore: the shared store's (its Describe too), but for the backlog.
  std::string Describe() const override;
  int64_t Count() override { return shared_->Count(); }
  void OnCount(std::function<void(int64_t)> callback) override {
    shared_->OnCount(std::move(callback));
  }
  std::vector<std::pair<std::string, v1::GemmTiming>> Measurements(
      absl::string_view kind) override {
    return shared_->Measurements(kind);
  }
  absl::StatusOr<std::vector<std::pair<std::string, v1::GemmTiming>>> MeasurementsBy(
      absl::string_view kind, absl::Time deadline) override {
    return shared_->MeasurementsBy(kind, deadline);
  }
  absl::StatusOr<int64_t> PublishCalibration(const std::string& file_json,
                                             const std::string& created_by) override {
    return shared_->PublishCalibration(file_json, created_by);
  }
  std::optional<StoredCalibration> LatestCalibration() override {
    return shared_->LatestCalibration();
  }
  bool Shared() const override { return shared_->Shared(); }
  void ForEach(const std::function<void(const std::string&, const v1::GemmTiming&)>& gemm,
               const std::function<void(const std::string&, const v1::LayerTiming&)>& layer)
      override {
    shared_->ForEach(gemm, layer);
  }
  bool Available() const override { return shared_->Available(); }
  void OnAvailability(std::function<void(bool)> callback) override;
  int64_t Backlog() override { return backlog_.load(); }
  void OnBacklog(std::function<void(int64_t)> callback) override;
  void ReleaseAll() override { shared_->ReleaseAll(); }

  // One round of the background thread, now: renews the leases, adopts orphaned spools, copies
  // every spool it holds into the shared store (when it answers) and recounts them. Returns the
  // rows copied.
  int64_t Drain();

 private:
  StoreOutcome Spooled(StoreOutcome shared, const std::function<StoreOutcome()>& spool);
  void SetBacklog(int64_t rows);
  // Copies `spool` into the shared store until a write fails; returns the rows copied.
  int64_t DrainOne(SqliteStore& spool);
  void RenewLeases(absl::Time now);
  void AdoptOrphans(absl::Time now);

  std::unique_ptr<MeasurementStore> shared_;
  std::unique_ptr<SqliteStore> spool_;
  const std::string owner_;
  Clock* const clock_;  // leases and their renewals are read on it (StoreOptions::clock)
  const absl::Duration lease_;
  const bool adopt_;
  // Spools of replicas that are gone, held until drained (the drain lock guards them).
  std::vector<std::unique_ptr<SqliteStore>> adopted_;
  std::atomic<int64_t> adopted_rows_{0};
  absl::Time next_renewal_ = absl::InfinitePast();
  absl::Time next_scan_ = absl::InfinitePast();
  std::atomic<int64_t> backlog_{0};
  std::mutex drain_mu_;  // one drain at a time
  std::mutex cb_mu_;
  std::function<void(int64_t)> on_backlog_;
  std::function<void(bool)> on_availability_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread drainer_;
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_SPOOLED_STORE_H_
