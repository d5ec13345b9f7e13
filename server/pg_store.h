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
// Faults never block a request past StoreOptions::op_timeout: libpq runs asynchronously under a
// deadline that covers waiting for a pooled connection, connecting (TCP keepalives on) and the
// statement; a connection that passes it is dropped and the store counts as down. While down,
// every operation returns at once (a lookup misses, a store fails, a claim says "measure here"),
// and a background thread tries the database every probe_every until it answers at this
// server's schema version. The same thread renews the claims this process holds (their leases
// are short: a replica that dies or loses its database holds nothing for long), retries the
// releases that failed, and checks the schema version: a newer one (a newer replica migrated)
// takes this store down rather than writing rows an old server may get wrong.
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

inline constexpr int kPgSchemaVersion = 1;

class PgStore final : public MeasurementStore {
 public:
  // Connects (options.connections of them), migrates, and returns the store; UNAVAILABLE naming
  // the (redacted) URI and libpq's reason when the database cannot be reached.
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
  bool Claim(const std::string& flight, absl::Duration lease) override;
  void Release(const std::string& flight) override;

  // MeasurementStore.
  std::string Describe() const override { return described_; }
  int64_t Count() override;
  void OnCount(std::function<void(int64_t)> callback) override;
  std::vector<std::pair<std::string, v1::GemmTiming>> Measurements(
      absl::string_view kind) override;
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
  class Connection;
  class Lease;
  struct Statement;
  PgStore(std::string uri, std::string owner, StoreOptions options);
  // A pooled connection until `deadline`, or none.
  std::optional<Lease> Acquire(absl::Time deadline);
  void Return(Connection* c);
  // Runs `s` within `deadline` (none while the store is down). A connection that breaks or
  // passes the deadline takes the store down; a statement's own error does not.
  struct Outcome;
  Outcome Run(const Statement& s, absl::Time deadline);
  void LogFailure(const char* what, const Outcome& o);
  absl::Time Deadline() const { return absl::Now() + options_.op_timeout; }
  void MarkDown(const std::string& why);
  void MarkUp();
  // The background thread: probes while down; renews claims, retries releases and checks the
  // schema while up.
  void Background();
  void Probe();
  void Maintain();

  std::string uri_;
  std::string described_;
  std::string owner_;
  StoreOptions options_;
  std::mutex mu_;  // the pool
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Connection>> all_;
  std::vector<Connection*> free_;
  std::mutex count_mu_;
  std::function<void(int64_t)> on_count_;
  std::atomic<int64_t> last_count_{0};
  std::atomic<bool> up_{true};
  std::mutex state_mu_;  // the availability callback, the claims, the reason it is down
  std::function<void(bool)> on_availability_;
  std::map<std::string, absl::Duration> held_;  // claims this process holds, renewed by lease
  std::set<std::string> pending_release_;  // releases that failed (retried)
  std::string down_reason_;
  absl::Time maintained_ = absl::InfinitePast();
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread background_;
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_PG_STORE_H_
