// The measurement store in PostgreSQL, shared by every server replica of a fleet (libpq).
//
// Tables (schema migrations in pg_store.cc, versioned in wavecrest_schema and applied at start
// under a transaction-scoped advisory lock, so replicas that start together migrate once):
//   results        GEMM measurements, keyed as the SQLite cache keys them (device fingerprint,
//                  method, dtype, layout, m, n, k, batch), the full GemmTiming (provenance:
//                  device, driver, CUDA/cuBLASLt/cuDNN, method, samples, spread, clock) as bytes
//   layer_results  layer benchmarks, keyed by fingerprint, method and LayerKeyString
//   claims         which replica is measuring what, until when (a lease on the database's clock)
//   calibrations   refitted calibrations, versioned; every replica applies the newest
//
// Faults never block a request for long: libpq runs asynchronously under a deadline
// (StoreOptions::op_timeout) that covers waiting for a pooled connection, connecting (TCP
// keepalives on) and the statement. A connection that breaks or is refused takes the store down
// at once; a statement that passes its deadline is checked with a quick probe on a connection of
// its own (a second at most): a database that answers it is slow, not down (the statement fails
// alone), one that does not is down. While down, every operation returns at once (a lookup
// misses, a store fails, a claim says "measure here"), and a background thread tries the
// database every probe_every until it answers at this server's schema version (migrating it
// first when this replica started without it). The same thread renews the claims this process
// holds (their leases are short: a replica that dies or loses its database holds nothing for
// long), retries the releases that failed, deletes claims whose lease ended long ago (killed
// replicas'), refreshes the entry count, and checks the schema version: a newer one (a newer
// replica migrated) takes this store down rather than writing rows an old server may get wrong.
//
// The entry count is never counted on the write path: a store adds its own new rows to it, and
// the background thread refreshes it every count_every (an exact count while the tables are
// small, PostgreSQL's own row estimate beyond).
#ifndef WAVECREST_SERVER_PG_STORE_H_
#define WAVECREST_SERVER_PG_STORE_H_

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "server/measurement_store.h"

namespace wavecrest {

namespace pg {
class Connection;
struct Outcome;
struct Statement;
}  // namespace pg

inline constexpr int kPgSchemaVersion = 1;

// The background thread's timetable (PgStore), on the store's clock.
namespace pg {
// How often the background thread wakes: every probe_every, a third of claim_lease, 250 ms at
// most.
absl::Duration BackgroundTick(const StoreOptions& options);
// How often the claims held are renewed (and the schema checked): every third of the shortest
// lease held, and of claim_lease.
absl::Duration RenewEvery(const StoreOptions& options, std::optional<absl::Duration> shortest);
// Whether a chore last done at `last` is due at `now` (`every` has passed); if so, it is marked
// done at `now`.
bool TakeIfDue(absl::Time& last, absl::Time now, absl::Duration every);
}  // namespace pg

class PgStore final : public MeasurementStore {
 public:
  // Connects, migrates, and returns the store; UNAVAILABLE naming the (redacted) URI and libpq's
  // reason when the database cannot be reached, FAILED_PRECONDITION when trying again cannot
  // help (refused credentials, no such database, a newer schema). With
  // options.start_unavailable, a database that cannot be reached now is no error: the store
  // starts down, and connects and migrates when the database answers.
  static absl::StatusOr<std::unique_ptr<PgStore>> Open(const std::string& uri,
                                                       const std::string& owner,
                                                       const StoreOptions& options = {});
  ~PgStore() override;  // releases this process's claims

  // MeasurementStore.
  std::optional<v1::GemmTiming> Lookup(absl::string_view kind, const GemmKey& key,
                                       absl::string_view method,
                                       const v1::DeviceFingerprint* fingerprint) override;
  StoreOutcome Store(absl::string_view kind, const v1::GemmTiming& timing) override;
  std::optional<v1::LayerTiming> LookupLayer(absl::string_view kind, const LayerKey& key,
                                             absl::string_view method,
                                             const v1::DeviceFingerprint* fingerprint) override;
  StoreOutcome StoreLayer(absl::string_view kind, const v1::LayerTiming& timing) override;
  // Never past `deadline` (nor op_timeout); a statement that passes it asks the background
  // thread to check the database rather than probing on the caller's thread.
  std::optional<v1::LayerTiming> LookupLayerBy(absl::string_view kind, const LayerKey& key,
                                               absl::string_view method,
                                               const v1::DeviceFingerprint* fingerprint,
                                               absl::Time deadline) override;
  bool Claim(const std::string& flight, absl::Duration lease) override;
  void Release(const std::string& flight) override;

  // MeasurementStore.
  std::string Describe() const override { return described_; }
  int64_t Count() override;
  void OnCount(std::function<void(int64_t)> callback) override;
  std::vector<std::pair<std::string, v1::GemmTiming>> Measurements(
      absl::string_view kind) override;
  absl::StatusOr<std::vector<std::pair<std::string, v1::GemmTiming>>> MeasurementsBy(
      absl::string_view kind, absl::Time deadline) override;
  absl::StatusOr<int64_t> PublishCalibration(const std::string& file_json,
                                             const std::string& created_by) override;
  std::optional<StoredCalibration> LatestCalibration() override;
  bool Shared() const override { return true; }
  void ForEach(const std::function<void(const std::string&, const v1::GemmTiming&)>& gemm,
               const std::function<void(const std::string&, const v1::LayerTiming&)>& layer)
      override;
  bool Available() const override { return up_.load(); }
  void OnAvailability(std::function<void(bool)> callback) override;
  void ReleaseAll() override;

  // The schema version the database is at (kPgSchemaVersion after Open; 0 when unreachable).
  int SchemaVersion();

 private:
  class Lease;
  using Outcome = pg::Outcome;
  PgStore(std::string uri, std::string owner, StoreOptions options);
  // A pooled connection until `deadline`, or none.
  std::optional<Lease> Acquire(absl::Time deadline);
  void Return(pg::Connection* c);
  // How Run waits and what it does after a timeout.
  enum class RunMode {
    kDefault,   // probes on the caller's thread after a timeout
    kLongRead,  // the same, and abandoned when the store goes down meanwhile (a frozen database
                // found by another operation)
    kQuick,     // a caller that must not wait (a callback thread): the background thread probes
  };
  // Runs `s` within `deadline` (none while the store is down). A connection that breaks takes
  // the store down; one that passes the deadline does only when the database then fails a quick
  // probe; a statement's own error does not.
  Outcome Run(const pg::Statement& s, absl::Time deadline, RunMode mode = RunMode::kDefault);
  // The layer lookup's statement within `deadline`.
  std::optional<v1::LayerTiming> LookupLayerWithin(absl::string_view kind, const LayerKey& key,
                                                   absl::string_view method,
                                                   const v1::DeviceFingerprint* fingerprint,
                                                   absl::Time deadline, RunMode mode);
  void LogFailure(const char* what, const Outcome& o);
  absl::Time Deadline() const { return clock_->Now() + options_.op_timeout; }
  // After a statement passed its deadline: takes the store down unless the database answers a
  // trivial query at once (on the probe connection; a second at most).
  void DownUnlessAnswering(const std::string& why);
  void MarkDown(const std::string& why);
  void MarkUp();
  // The background thread: probes while down (migrating first if the store never reached its
  // database); renews claims, retries releases, sweeps ended claims, recounts and checks the
  // schema while up.
  void Background();
  void Probe();
  void Maintain();
  void SweepClaims();
  void RefreshCount();
  void SetCount(int64_t n);
  // After a store whose statement returned (xmax = 0): one more entry when it inserted a row.
  void Counted(const Outcome& o);

  std::string uri_;
  std::string described_;
  std::string owner_;
  StoreOptions options_;
  Clock* clock_;  // options_.clock
  std::mutex mu_;  // the pool
  std::condition_variable cv_;
  std::vector<std::unique_ptr<pg::Connection>> all_;
  std::vector<pg::Connection*> free_;
  // The background thread's connection, also the quick probe after a timeout (one at a time).
  std::timed_mutex probe_mu_;
  std::unique_ptr<pg::Connection> probe_;
  absl::Time answered_ = absl::InfinitePast();  // the probe's last answer (under probe_mu_)
  std::atomic<bool> migrated_{false};
  std::atomic<bool> check_requested_{false};  // a quick statement timed out: probe soon
  std::mutex count_mu_;
  std::function<void(int64_t)> on_count_;
  std::atomic<int64_t> count_{0};
  std::atomic<bool> up_{true};
  std::mutex state_mu_;  // the availability callback, the claims, the reason it is down
  std::function<void(bool)> on_availability_;
  std::map<std::string, absl::Duration> held_;  // claims this process holds, renewed by lease
  std::set<std::string> pending_release_;  // releases that failed (retried)
  std::string down_reason_;
  // The background thread's schedule.
  absl::Time maintained_ = absl::InfinitePast();
  absl::Time swept_ = absl::InfinitePast();
  absl::Time counted_ = absl::InfinitePast();
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread background_;
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_PG_STORE_H_
