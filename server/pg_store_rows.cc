// PgStore's row operations: lookups, stores, claims, the count, calibrations and bulk reads
// (server/pg_store.h). Its life and faults are in pg_store.cc.
#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/pg_connection.h"
#include "server/pg_store.h"
#include "server/sqlite_store.h"
#include "service/convert.h"
#include "service/log.h"

namespace wavecrest {

using pg::Bytes;
using pg::Int;
using pg::Ok;
using pg::Param;
using pg::Seconds;
using pg::SecondsText;
using pg::Text;

namespace {

// The first row's first column as a parsed message (binary results), or nothing.
template <typename Message>
std::optional<Message> FirstMessage(const PGresult* r) {
  if (r == nullptr || !Ok(r) || PQntuples(r) < 1) return std::nullopt;
  Message m;
  if (!m.ParseFromArray(PQgetvalue(r, 0, 0), PQgetlength(r, 0, 0))) return std::nullopt;
  return m;
}

}  // namespace

std::optional<v1::GemmTiming> PgStore::Lookup(absl::string_view kind, const GemmKey& key,
                                              absl::string_view method,
                                              const v1::DeviceFingerprint* fingerprint) {
  const std::string by_fp =
      "SELECT timing FROM results WHERE fingerprint=$1 AND method=$2 AND dtype=$3 AND layout=$4 "
      "AND m=$5 AND n=$6 AND k=$7 AND batch=$8";
  const std::string by_kind =
      "SELECT timing FROM results WHERE kind=$1 AND method=$2 AND dtype=$3 AND layout=$4 AND "
      "m=$5 AND n=$6 AND k=$7 AND batch=$8 ORDER BY measured_at DESC LIMIT 1";
  if (!up_.load()) return std::nullopt;  // a miss, at once
  Outcome o = Run({fingerprint ? by_fp : by_kind,
                   {Text(fingerprint ? FingerprintKey(*fingerprint) : std::string(kind)),
                    Text(std::string(method)), Int(static_cast<int>(key.dtype)),
                    Int(static_cast<int>(key.layout)), Int(key.shape.m), Int(key.shape.n),
                    Int(key.shape.k), Int(key.shape.batch)},
                   /*binary_results=*/true},
                  Deadline());
  if (!o.ok()) LogFailure("store: lookup failed", o);
  return FirstMessage<v1::GemmTiming>(o.result.get());
}

StoreOutcome PgStore::Store(absl::string_view kind, const v1::GemmTiming& timing) {
  const absl::StatusOr<DType> dtype = FromProto(timing.dtype());
  const absl::StatusOr<Layout> layout = FromProto(timing.layout());
  if (!dtype.ok() || !layout.ok()) return StoreOutcome::kLost;
  Outcome o = Run(
      {"INSERT INTO results VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, "
       "COALESCE(to_timestamp(NULLIF($12, '')::double precision), now()), $13) "
       "ON CONFLICT (fingerprint, method, dtype, layout, m, n, k, batch) DO UPDATE SET "
       "kind = EXCLUDED.kind, timing = EXCLUDED.timing, source = EXCLUDED.source, "
       "measured_at = EXCLUDED.measured_at, stored_by = EXCLUDED.stored_by "
       "RETURNING (xmax = 0)",
       {Text(std::string(kind)), Text(FingerprintKey(timing.provenance().device())),
        Text(timing.provenance().method()), Int(static_cast<int>(*dtype)),
        Int(static_cast<int>(*layout)), Int(timing.shape().m()), Int(timing.shape().n()),
        Int(timing.shape().k()), Int(std::max<int64_t>(timing.shape().batch(), 1)),
        Bytes(timing.SerializeAsString()), Int(timing.provenance().source()),
        Text(Seconds(timing.provenance().measured_at())), Text(owner_)}},
      Deadline());
  if (!o.ok()) {
    LogFailure("store: store failed", o);
    return StoreOutcome::kLost;
  }
  Counted(o);
  return StoreOutcome::kStored;
}

std::optional<v1::LayerTiming> PgStore::LookupLayer(absl::string_view kind, const LayerKey& key,
                                                    absl::string_view method,
                                                    const v1::DeviceFingerprint* fingerprint) {
  return LookupLayerWithin(kind, key, method, fingerprint, Deadline(), RunMode::kDefault);
}

std::optional<v1::LayerTiming> PgStore::LookupLayerBy(absl::string_view kind, const LayerKey& key,
                                                      absl::string_view method,
                                                      const v1::DeviceFingerprint* fingerprint,
                                                      absl::Time deadline) {
  return LookupLayerWithin(kind, key, method, fingerprint, std::min(deadline, Deadline()),
                           RunMode::kQuick);
}

std::optional<v1::LayerTiming> PgStore::LookupLayerWithin(
    absl::string_view kind, const LayerKey& key, absl::string_view method,
    const v1::DeviceFingerprint* fingerprint, absl::Time deadline, RunMode mode) {
  if (!up_.load() || clock_->Now() >= deadline) return std::nullopt;
  const std::string layer = LayerKeyString(key);
  Outcome o = Run(
      {fingerprint ? "SELECT timing FROM layer_results WHERE fingerprint=$1 AND method=$2 AND "
                     "layer=$3"
                   : "SELECT timing FROM layer_results WHERE kind=$1 AND method=$2 AND layer=$3 "
                     "ORDER BY measured_at DESC LIMIT 1",
       {Text(fingerprint ? FingerprintKey(*fingerprint) : std::string(kind)),
        Text(std::string(method)), Text(layer)},
       /*binary_results=*/true},
      deadline, mode);
  if (!o.ok()) LogFailure("store: layer lookup failed", o);
  std::optional<v1::LayerTiming> t = FirstMessage<v1::LayerTiming>(o.result.get());
  if (t && t->key() != layer) return std::nullopt;
  return t;
}

StoreOutcome PgStore::StoreLayer(absl::string_view kind, const v1::LayerTiming& timing) {
  if (timing.key().empty()) return StoreOutcome::kLost;
  Outcome o = Run(
      {"INSERT INTO layer_results VALUES ($1, $2, $3, $4, $5, $6, "
       "COALESCE(to_timestamp(NULLIF($7, '')::double precision), now()), $8) "
       "ON CONFLICT (fingerprint, method, layer) DO UPDATE SET kind = EXCLUDED.kind, "
       "timing = EXCLUDED.timing, source = EXCLUDED.source, measured_at = EXCLUDED.measured_at, "
       "stored_by = EXCLUDED.stored_by RETURNING (xmax = 0)",
       {Text(std::string(kind)), Text(FingerprintKey(timing.provenance().device())),
        Text(timing.provenance().method()), Text(timing.key()), Bytes(timing.SerializeAsString()),
        Int(timing.provenance().source()), Text(Seconds(timing.provenance().measured_at())),
        Text(owner_)}},
      Deadline());
  if (!o.ok()) {
    LogFailure("store: layer store failed", o);
    return StoreOutcome::kLost;
  }
  Counted(o);
  return StoreOutcome::kStored;
}

bool PgStore::Claim(const std::string& flight, absl::Duration lease) {
  // Without the database, nobody can be asked: measuring twice is better than not at all.
  if (!up_.load()) return true;
  // A claim is ours when none exists, the existing one's lease ran out (its replica died, gave
  // up or lost its database), or it is already ours. Leases run on the database's clock, not
  // the replicas'; the background thread renews ours while we hold them.
  Outcome o = Run({"INSERT INTO claims (flight, owner, expires_at) VALUES "
                   "($1, $2, now() + $3::double precision * interval '1 second') "
                   "ON CONFLICT (flight) DO UPDATE SET owner = EXCLUDED.owner, "
                   "expires_at = EXCLUDED.expires_at "
                   "WHERE claims.expires_at < now() OR claims.owner = EXCLUDED.owner "
                   "RETURNING owner",
                   {Text(flight), Text(owner_), Text(SecondsText(lease))}},
                  Deadline());
  if (!o.ok()) {
    LogFailure("store: claim failed; measuring here", o);
    return true;
  }
  if (PQntuples(o.result.get()) != 1) return false;
  std::lock_guard<std::mutex> lock(state_mu_);
  held_[flight] = lease;
  pending_release_.erase(flight);
  return true;
}

void PgStore::Release(const std::string& flight) {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (held_.erase(flight) == 0) return;  // never held (the store was down), or released
  }
  Outcome o = Run({"DELETE FROM claims WHERE flight = $1 AND owner = $2", {Text(flight), Text(owner_)}},
                  Deadline());
  if (!o.ok()) {
    // Retried by the background thread; until then the lease, no longer renewed, runs out.
    LogFailure("store: release failed; retrying", o);
    std::lock_guard<std::mutex> lock(state_mu_);
    pending_release_.insert(flight);
  }
}

void PgStore::ReleaseAll() {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    held_.clear();
    pending_release_.clear();
  }
  Outcome o = Run({"DELETE FROM claims WHERE owner = $1", {Text(owner_)}}, Deadline());
  if (!o.ok()) LogFailure("store: releasing every claim failed", o);
}

int64_t PgStore::Count() { return count_.load(); }

void PgStore::Counted(const Outcome& o) {
  // RETURNING (xmax = 0): true for a row inserted, false for a key replaced.
  const PGresult* r = o.result.get();
  if (PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't') SetCount(count_.fetch_add(1) + 1);
}

void PgStore::OnCount(std::function<void(int64_t)> callback) {
  std::lock_guard<std::mutex> lock(count_mu_);
  on_count_ = std::move(callback);
}

std::vector<std::pair<std::string, v1::GemmTiming>> PgStore::Measurements(absl::string_view kind) {
  auto rows = MeasurementsBy(kind, clock_->Now() + options_.bulk_timeout);
  if (!rows.ok()) return {};
  return *std::move(rows);
}

absl::StatusOr<std::vector<std::pair<std::string, v1::GemmTiming>>> PgStore::MeasurementsBy(
    absl::string_view kind, absl::Time deadline) {
  std::vector<Param> params = {Int(v1::SOURCE_MEASURED)};
  if (!kind.empty()) params.push_back(Text(std::string(kind)));
  Outcome o = Run({kind.empty() ? "SELECT kind, timing FROM results WHERE source = $1 "
                                  "ORDER BY measured_at, fingerprint, m, n, k, batch"
                                : "SELECT kind, timing FROM results WHERE source = $1 AND "
                                  "kind = $2 ORDER BY measured_at, fingerprint, m, n, k, batch",
                   params, /*binary_results=*/true},
                  std::min(deadline, clock_->Now() + options_.bulk_timeout), RunMode::kLongRead);
  if (!o.ok()) {
    LogFailure("store: reading measurements failed", o);
    return absl::UnavailableError(absl::StrCat("the store did not give its measurements: ",
                                               o.error));
  }
  std::vector<std::pair<std::string, v1::GemmTiming>> out;
  const PGresult* r = o.result.get();
  for (int i = 0; i < PQntuples(r); ++i) {
    v1::GemmTiming t;
    if (!t.ParseFromArray(PQgetvalue(r, i, 1), PQgetlength(r, i, 1))) continue;
    if (t.provenance().source() != v1::SOURCE_MEASURED || !(t.time_s() > 0)) continue;
    out.emplace_back(std::string(PQgetvalue(r, i, 0), PQgetlength(r, i, 0)), std::move(t));
  }
  return out;
}

absl::StatusOr<int64_t> PgStore::PublishCalibration(const std::string& file_json,
                                                    const std::string& created_by) {
  Outcome o = Run({"INSERT INTO calibrations (created_by, file) VALUES ($1, $2) RETURNING version",
                   {Text(created_by), Text(file_json)}},
                  Deadline());
  if (!o.ok() || PQntuples(o.result.get()) != 1) {
    return absl::UnavailableError(
        absl::StrCat("store: publishing the calibration failed: ", o.error));
  }
  int64_t version = 0;
  (void)absl::SimpleAtoi(PQgetvalue(o.result.get(), 0, 0), &version);
  return version;
}

std::optional<StoredCalibration> PgStore::LatestCalibration() {
  Outcome o = Run({"SELECT version, file, created_by FROM calibrations ORDER BY version DESC LIMIT 1"},
                  Deadline());
  if (!o.ok()) {
    LogFailure("store: reading the calibration failed", o);
    return std::nullopt;
  }
  const PGresult* r = o.result.get();
  if (PQntuples(r) != 1) return std::nullopt;
  StoredCalibration s;
  (void)absl::SimpleAtoi(PQgetvalue(r, 0, 0), &s.version);
  s.file_json = PQgetvalue(r, 0, 1);
  s.created_by = PQgetvalue(r, 0, 2);
  return s;
}

void PgStore::ForEach(const std::function<void(const std::string&, const v1::GemmTiming&)>& gemm,
                      const std::function<void(const std::string&, const v1::LayerTiming&)>& layer) {
  auto each = [&](const char* sql, const auto& call, auto message) {
    Outcome o = Run({sql, {}, /*binary_results=*/true}, clock_->Now() + options_.bulk_timeout,
                    RunMode::kLongRead);
    if (!o.ok()) {
      LogFailure("store: reading every result failed", o);
      return;
    }
    const PGresult* r = o.result.get();
    for (int i = 0; i < PQntuples(r); ++i) {
      if (!message.ParseFromArray(PQgetvalue(r, i, 1), PQgetlength(r, i, 1))) continue;
      call(std::string(PQgetvalue(r, i, 0), PQgetlength(r, i, 0)), message);
    }
  };
  each("SELECT kind, timing FROM results ORDER BY measured_at", gemm, v1::GemmTiming());
  each("SELECT kind, timing FROM layer_results ORDER BY measured_at", layer, v1::LayerTiming());
}

}  // namespace wavecrest
