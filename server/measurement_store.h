// Where measurements live, the one store interface: looking results up and storing them, claiming
// a measurement across replicas, counting, exporting, and versioned calibrations. Three
// implementations:
//
//   SqliteStore  (server/sqlite_store.h)  SQLite, one file, one server: the default.
//   PgStore      (server/pg_store.h)      PostgreSQL, shared by every replica of a fleet.
//   SpooledStore (server/spooled_store.h) a PgStore with a local SQLite spool for outages.
//
// OpenStore picks one from `--store` / $WAVECREST_STORE: a postgresql:// (or postgres://) URI, or
// a file path.
#ifndef WAVECREST_SERVER_MEASUREMENT_STORE_H_
#define WAVECREST_SERVER_MEASUREMENT_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/gemm.h"
#include "core/layers.h"
#include "service/clock.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {

// What became of a result handed to a store.
enum class StoreOutcome {
  kStored,   // durable where every replica sees it
  kSpooled,  // durable in this replica's local spool; shared when the store is back
  kLost,     // not kept (the store failed; the reason is logged)
};


// How long a claim on a measurement lives without renewal (server/pg_store.h renews the claims a
// process holds every third of it).
inline constexpr absl::Duration kClaimLease = absl::Seconds(10);

// A calibration (core/calibration.h's file, as JSON) stored with a version, so that every replica
// answers from the same refit.
struct StoredCalibration {
  int64_t version = 0;
  std::string file_json;
  std::string created_by;  // the replica that refitted
};

class MeasurementStore {
 public:
  virtual ~MeasurementStore() = default;
  // A measurement of `key` by `method` on a device of `kind` (preferring `fingerprint` when given).
  virtual std::optional<v1::GemmTiming> Lookup(absl::string_view kind, const GemmKey& key,
                                               absl::string_view method,
                                               const v1::DeviceFingerprint* fingerprint) = 0;
  // Stores a MEASURED result; failures are logged and returned, never fatal.
  virtual StoreOutcome Store(absl::string_view kind, const v1::GemmTiming& timing) = 0;
  // The same for layer benchmarks (a store without them finds none and keeps none).
  virtual std::optional<v1::LayerTiming> LookupLayer(absl::string_view /*kind*/,
                                                     const LayerKey& /*key*/,
                                                     absl::string_view /*method*/,
                                                     const v1::DeviceFingerprint* /*fingerprint*/) {
    return std::nullopt;
  }
  virtual StoreOutcome StoreLayer(absl::string_view /*kind*/, const v1::LayerTiming& /*timing*/) {
    return StoreOutcome::kLost;
  }
  // LookupLayer answered by `deadline` (a call answered on a gRPC callback thread, which must not
  // wait out a frozen database): a miss when the store cannot answer by then.
  virtual std::optional<v1::LayerTiming> LookupLayerBy(absl::string_view kind,
                                                       const LayerKey& key,
                                                       absl::string_view method,
                                                       const v1::DeviceFingerprint* fingerprint,
                                                       absl::Time /*deadline*/) {
    return LookupLayer(kind, key, method, fingerprint);
  }
  // Claims `flight` (a GEMM or layer this process is about to measure) for `lease`: true when no
  // other process holds a live claim on it. A store that replicas share makes a measurement
  // happen once across them (PgStore, which renews the lease while the claim is held and says
  // yes when it cannot reach its database); a store of one process always says yes.
  virtual bool Claim(const std::string& /*flight*/, absl::Duration /*lease*/) { return true; }
  // Ends this process's claim: its result is stored, or it will not be measured here.
  virtual void Release(const std::string& /*flight*/) {}

  // "sqlite:/var/lib/wavecrest/results.db", "postgresql://wavecrest@db:5432/wavecrest" (never a
  // password): for logs and ListDevices.
  virtual std::string Describe() const = 0;
  // Entries: GEMM and layer results, every replica's.
  virtual int64_t Count() = 0;
  // Called with the entry count after a Store changed it (for the cache metric).
  virtual void OnCount(std::function<void(int64_t)> callback) = 0;
  // Every GPU measurement (source MEASURED, not an emulating worker's prediction) of `kind`, or of
  // every kind when empty, with the kind each was stored under.
  virtual std::vector<std::pair<std::string, v1::GemmTiming>> Measurements(
      absl::string_view kind) = 0;
  // The same, read by `deadline` (an admin export's own): UNAVAILABLE or DEADLINE_EXCEEDED when
  // the store could not give them all by then (a shared store down, or going down meanwhile).
  virtual absl::StatusOr<std::vector<std::pair<std::string, v1::GemmTiming>>> MeasurementsBy(
      absl::string_view kind, absl::Time /*deadline*/) {
    return Measurements(kind);
  }
  // Stores a refitted calibration as the newest version; returns the version.
  virtual absl::StatusOr<int64_t> PublishCalibration(const std::string& file_json,
                                                     const std::string& created_by) = 0;
  // The newest stored calibration, if any.
  virtual std::optional<StoredCalibration> LatestCalibration() = 0;
  // Whether other processes share this store (replicas): then the server polls it for newer
  // calibrations and claims measurements across processes.
  virtual bool Shared() const { return false; }
  // Every stored GEMM and layer result (measured or an emulating worker's), with its kind, and
  // the newest calibration: what moving a store copies (CopyStore).
  virtual void ForEach(
      const std::function<void(const std::string& kind, const v1::GemmTiming&)>& gemm,
      const std::function<void(const std::string& kind, const v1::LayerTiming&)>& layer) = 0;

  // Whether the store answers now. A shared store that lost its database (down, frozen, or at a
  // newer schema) says no, and until it is back every operation returns at once: lookups miss,
  // stores fail (a spool keeps them), claims say "measure here".
  virtual bool Available() const { return true; }
  // Called (from a background thread) with Available() whenever it changes.
  virtual void OnAvailability(std::function<void(bool)> /*callback*/) {}
  // Results kept locally and not yet in the shared store (server/spooled_store.h).
  virtual int64_t Backlog() { return 0; }
  // Called with Backlog() whenever it changes.
  virtual void OnBacklog(std::function<void(int64_t)> /*callback*/) {}
  // Ends every claim this process holds (at shutdown).
  virtual void ReleaseAll() {}
};

// How a store behaves under faults (PostgreSQL; a SQLite file ignores them).
struct StoreOptions {
  // Any one operation, waiting for a pooled connection included: past it the operation fails,
  // and the store counts as down (until a probe reaches the database again) when a quick probe
  // then finds the database silent too; a slow statement alone is not an outage.
  absl::Duration op_timeout = absl::Seconds(2);
  // Whether a database that cannot be reached at start is an error (copy-store) or a store that
  // starts down and connects, migrates and drains its spool when the database answers (a
  // server: it serves predictions meanwhile).
  bool start_unavailable = false;
  // How often the entry count is refreshed from the database (off the write path; each store
  // adds its own new rows in between).
  absl::Duration count_every = absl::Seconds(60);
  // Reading every row (refits, copy-store).
  absl::Duration bulk_timeout = absl::Seconds(120);
  // How often a down store tries its database.
  absl::Duration probe_every = absl::Seconds(1);
  // A claim expires this long after its last renewal (renewed every third of it while held).
  absl::Duration claim_lease = absl::Seconds(10);
  // Where results wait while the shared store is down: a SQLite file; empty = the default
  // (DefaultSpoolPath), "none" = no spool (such results are lost, and their answers say so).
  std::string spool;
  // How often the spool is copied into the store when it is back (and its true row count read:
  // other replicas sharing the file may have added rows).
  absl::Duration drain_every = absl::Seconds(1);
  // A replica holds a lease on its spool file, renewed every third of this. A spool file named
  // spool-*.db in the same directory as this replica's, spooling for the same store, holding
  // results and with no live lease (its replicas died or stopped, with a private spool path) is
  // adopted: drained by this replica and counted in its backlog.
  absl::Duration spool_lease = absl::Seconds(30);
  bool adopt_spools = true;
  int connections = 4;
  // The time the store's deadlines, leases and schedules are read on (and its waits pass on):
  // the wall clock, or a test's (tests/fakes/fake_clock.h).
  Clock* clock = &Clock::Real();
};

// $XDG_CACHE_HOME (or ~/.cache, or the temp directory)/wavecrest/spool-<hash of the store>.db:
// one per database, shared by the replicas of one host (each drains whatever is in it, whoever
// wrote it; copying twice is harmless), found again after a restart.
std::string DefaultSpoolPath(absl::string_view store_uri);

// Copies every result of `from` into `to` (each keyed as before: a result `to` already has is
// replaced), and `from`'s newest calibration as `to`'s newest. Returns the rows copied;
// UNAVAILABLE when any could not be stored.
absl::StatusOr<int64_t> CopyStore(MeasurementStore& from, MeasurementStore& to);

// Opens the store `spec` names: a postgresql:// or postgres:// URI (PgStore), else a SQLite file
// path (SqliteStore; created when missing, a corrupt one moved aside). `owner` names this process
// in claims and published calibrations (host:pid).
// A PostgreSQL store is wrapped in its spool (server/spooled_store.h) unless options.spool is
// "none".
absl::StatusOr<std::unique_ptr<MeasurementStore>> OpenStore(const std::string& spec,
                                                            const std::string& owner,
                                                            const StoreOptions& options = {});

// Whether `spec` names a PostgreSQL database.
bool IsPostgresUri(absl::string_view spec);

// The URI with its password replaced by "***" (for logs and errors).
std::string RedactUri(absl::string_view uri);

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_MEASUREMENT_STORE_H_
