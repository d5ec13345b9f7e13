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
// Connections: a small pool, each used by one thread at a time; a broken one is reset and the
// statement retried once. Failures are logged and never fatal to a request (a lookup that fails is
// a miss; a store that fails loses that row, as the SQLite cache does).
#ifndef WAVECREST_SERVER_PG_STORE_H_
#define WAVECREST_SERVER_PG_STORE_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/measurement_store.h"

namespace wavecrest {

inline constexpr int kPgSchemaVersion = 1;

class PgStore final : public MeasurementStore {
 public:
  // Connects (`connections` of them), migrates, and returns the store; UNAVAILABLE naming the
  // (redacted) URI and libpq's reason when the database cannot be reached.
  static absl::StatusOr<std::unique_ptr<PgStore>> Open(const std::string& uri,
                                                       const std::string& owner,
                                                       int connections = 4);
  ~PgStore() override;

  // ResultStore.
  std::optional<v1::GemmTiming> Lookup(absl::string_view kind, const GemmKey& key,
                                       absl::string_view method,
                                       const v1::DeviceFingerprint* fingerprint) override;
  void Store(absl::string_view kind, const v1::GemmTiming& timing) override;
  std::optional<v1::LayerTiming> LookupLayer(absl::string_view kind, const LayerKey& key,
                                             absl::string_view method,
                                             const v1::DeviceFingerprint* fingerprint) override;
  void StoreLayer(absl::string_view kind, const v1::LayerTiming& timing) override;
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

  // The schema version the database is at (kPgSchemaVersion after Open).
  int SchemaVersion();

 private:
  class Connection;
  PgStore(std::string uri, std::string owner);
  // A pooled connection for the caller's scope.
  class Lease;
  Lease Acquire();
  void Return(Connection* c);

  std::string uri_;
  std::string described_;
  std::string owner_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Connection>> all_;
  std::vector<Connection*> free_;
  std::mutex count_mu_;
  std::function<void(int64_t)> on_count_;
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_PG_STORE_H_
