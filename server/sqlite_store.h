// The persistent measurement store: SQLite in WAL mode, written only by the server.
//
// Key: device fingerprint (GPU name, compute capability, SM count, driver, CUDA, cuBLASLt, backend,
// cuDNN) + GEMM (dtype, layout, M, N, K, batch) + method version. Value: the full GemmTiming
// (statistics, algorithm, clocks, provenance with the time of measurement). Layer benchmarks live
// in their own table, keyed by fingerprint + method + LayerKeyString (core/layers.h), with the
// LayerTiming. A file that is not a SQLite database, or is one with another schema, is moved aside
// (logged) and a fresh store started.
#ifndef WAVECREST_SERVER_SQLITE_STORE_H_
#define WAVECREST_SERVER_SQLITE_STORE_H_

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/measurement_store.h"
#include "service/clock.h"

struct sqlite3;
struct sqlite3_stmt;

namespace wavecrest {

inline constexpr char kCacheSchema[] = "wavecrest-result-cache-v1";

// "name|cc|sms|driver|cuda|cublaslt|backend", then "|cudnn<version>" for a worker with cuDNN
std::string FingerprintKey(const v1::DeviceFingerprint& fp);

// What a look at a spool file finds without opening it as a store (read-only; nothing is
// created, locked for long or moved aside).
struct SpoolFileInfo {
  std::string store;      // the shared store it spools for (meta "store"), empty if unknown
  int64_t rows = 0;       // results waiting in it
  int live_leases = 0;    // processes using it whose lease had not ended at `now`
};
// Nothing when `path` is not a readable measurement store of this schema.
std::optional<SpoolFileInfo> InspectSpoolFile(const std::string& path, absl::Time now);

// A wait on a lock another connection holds (SQLite's busy handler), on a store's clock: from
// `since`, for up to `patience` (sqlite_store.cc).
struct SqliteBusyWait {
  Clock* clock;
  absl::Duration patience;
  absl::Time since;
};

class SqliteStore final : public MeasurementStore {
 public:
  // Opens (creating parent directories and the file when needed) or recovers the store. Waits
  // on another process's lock, and dates calibrations, on `clock`.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path,
                                                           Clock& clock = Clock::Real());
  ~SqliteStore() override;

  std::optional<v1::GemmTiming> Lookup(absl::string_view kind, const GemmKey& key,
                                       absl::string_view method,
                                       const v1::DeviceFingerprint* fingerprint) override;
  StoreOutcome Store(absl::string_view kind, const v1::GemmTiming& timing) override;
  std::optional<v1::LayerTiming> LookupLayer(absl::string_view kind, const LayerKey& key,
                                             absl::string_view method,
                                             const v1::DeviceFingerprint* fingerprint) override;
  StoreOutcome StoreLayer(absl::string_view kind, const v1::LayerTiming& timing) override;
  // Removes the row of `timing`'s key if it still holds `timing` (a spool drained: a newer
  // result stored meanwhile stays). True when a row was removed.
  bool RemoveIfUnchanged(const v1::GemmTiming& timing);
  bool RemoveLayerIfUnchanged(const v1::LayerTiming& timing);

  // MeasurementStore. Calibrations are kept in the file too, so that a restarted server answers
  // from its last refit.
  std::string Describe() const override { return "sqlite:" + path_; }
  const std::string& path() const { return path_; }
  // Counted once, then kept by this store's own writes (no COUNT per call).
  int64_t Count() override;
  // Counted now: a spool file other processes write too.
  int64_t CountRows();
  void OnCount(std::function<void(int64_t)> callback) override;
  std::vector<std::pair<std::string, v1::GemmTiming>> Measurements(
      absl::string_view kind) override;
  absl::StatusOr<int64_t> PublishCalibration(const std::string& file_json,
                                             const std::string& created_by) override;
  std::optional<StoredCalibration> LatestCalibration() override;
  void ForEach(const std::function<void(const std::string&, const v1::GemmTiming&)>& gemm,
               const std::function<void(const std::string&, const v1::LayerTiming&)>& layer)
      override;
  // Where a corrupt or foreign file was moved, if that happened at Open.
  const std::string& moved_aside() const { return moved_aside_; }

  // A spool's bookkeeping (server/spooled_store.h), in the meta table. Meta: the value of `key`,
  // if any; SetMetaIfAbsent keeps a value already there (and returns it).
  std::optional<std::string> Meta(const std::string& key);
  std::optional<std::string> SetMetaIfAbsent(const std::string& key, const std::string& value);
  // Leases: which live processes use this file as their spool, each until a time. RenewLease
  // sets `owner`'s to `until` and removes every lease that ended before `now` (their processes
  // died or hung); DropLease ends `owner`'s. Both false when the file could not be written.
  bool RenewLease(const std::string& owner, absl::Time until, absl::Time now);
  bool DropLease(const std::string& owner);

 private:
  SqliteStore(sqlite3* db, std::string path, Clock& clock);
  std::mutex mu_;
  sqlite3* db_;
  std::string path_;
  SqliteBusyWait busy_;  // db_'s busy handler's (its clock is the store's)
  int64_t CountLocked();
  // After a store: the entry count (and its callback) moves unless the key was `replaced`.
  void CountedLocked(bool replaced);
  // One row stored: `exists_sql` (bound by `bind_key`) says whether its key was there, for the
  // count; `insert_sql` (bound by `bind_row`) replaces it. Failures are logged, never thrown.
  bool UpsertLocked(const char* exists_sql, const std::function<void(sqlite3_stmt*)>& bind_key,
                    const char* insert_sql, const std::function<void(sqlite3_stmt*)>& bind_row);
  // Runs `delete_sql` bound by `bind`; true when it removed a row.
  bool DeleteLocked(const char* delete_sql, const std::function<void(sqlite3_stmt*)>& bind);
  int64_t count_ = -1;  // entries, once counted
  std::function<void(int64_t)> on_count_;
  std::string moved_aside_;
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_SQLITE_STORE_H_
