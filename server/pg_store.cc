#include "server/pg_store.h"

#include <libpq-fe.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "service/convert.h"
#include "service/log.h"
#include "server/result_cache.h"

namespace wavecrest {
namespace {

// Serialises schema migrations of every replica (pg_advisory_xact_lock's key: "wavecrest").
constexpr char kMigrationLock[] = "SELECT pg_advisory_xact_lock(8675309271828182845)";

constexpr char kSchemaTable[] =
    "CREATE TABLE IF NOT EXISTS wavecrest_schema (version INTEGER PRIMARY KEY, "
    "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())";

// Migration v (index v - 1). Only ever append: a replica at an older version applies the rest.
constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE results (
  kind TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  method TEXT NOT NULL,
  dtype INTEGER NOT NULL,
  layout INTEGER NOT NULL,
  m BIGINT NOT NULL, n BIGINT NOT NULL, k BIGINT NOT NULL, batch BIGINT NOT NULL,
  timing BYTEA NOT NULL,
  source INTEGER NOT NULL,
  measured_at TIMESTAMPTZ NOT NULL,
  stored_by TEXT NOT NULL,
  PRIMARY KEY (fingerprint, method, dtype, layout, m, n, k, batch)
);
CREATE INDEX results_by_kind ON results (kind, method, dtype, layout, m, n, k, batch, measured_at);
CREATE TABLE layer_results (
  kind TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  method TEXT NOT NULL,
  layer TEXT NOT NULL,
  timing BYTEA NOT NULL,
  source INTEGER NOT NULL,
  measured_at TIMESTAMPTZ NOT NULL,
  stored_by TEXT NOT NULL,
  PRIMARY KEY (fingerprint, method, layer)
);
CREATE INDEX layer_results_by_kind ON layer_results (kind, method, layer, measured_at);
CREATE TABLE claims (
  flight TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE calibrations (
  version BIGSERIAL PRIMARY KEY,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  created_by TEXT NOT NULL,
  file TEXT NOT NULL
);
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kPgSchemaVersion);

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// One statement parameter: text, or bytes (bytea, sent in binary).
struct Param {
  std::string value;
  bool binary = false;
};
Param Text(std::string v) { return {std::move(v), false}; }
Param Int(int64_t v) { return {absl::StrCat(v), false}; }
Param Bytes(std::string v) { return {std::move(v), true}; }

bool Ok(const PGresult* r) {
  const ExecStatusType s = PQresultStatus(r);
  return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

std::string Seconds(const google::protobuf::Timestamp& t) {
  // to_timestamp() takes seconds since the epoch; a result without a time is stored as now.
  return t.seconds() > 0 ? absl::StrFormat("%d.%09d", t.seconds(), t.nanos()) : "";
}

}  // namespace

class PgStore::Connection {
 public:
  explicit Connection(const std::string& uri) : uri_(uri) { Connect(); }
  ~Connection() {
    if (conn_) PQfinish(conn_);
  }
  bool ok() const { return conn_ && PQstatus(conn_) == CONNECTION_OK; }
  std::string error() const { return conn_ ? PQerrorMessage(conn_) : "out of memory"; }

  // Runs `sql` with `params`; results in binary when `binary_results`. A connection found broken
  // is reset and the statement tried once more.
  // `sql` may hold several statements when `params` is empty and `script` (a migration).
  Result Exec(const std::string& sql, const std::vector<Param>& params = {},
              bool binary_results = false, bool script = false) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (!ok()) Reset();
      if (!ok()) break;
      Result r = script ? Result(PQexec(conn_, sql.c_str())) : Run(sql, params, binary_results);
      if (r && Ok(r.get())) return r;
      if (ok()) return r;  // a statement error, not a broken connection
    }
    return nullptr;
  }

 private:
  void Connect() {
    // Our defaults first: the URI's own settings (expanded from "dbname") override them.
    const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
    const char* values[] = {"5", "wavecrest-server", uri_.c_str(), nullptr};
    conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  }
  void Reset() {
    if (conn_) {
      PQreset(conn_);
    } else {
      Connect();
    }
  }
  Result Run(const std::string& sql, const std::vector<Param>& params, bool binary_results) {
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    for (const Param& p : params) {
      values.push_back(p.value.data());
      lengths.push_back(static_cast<int>(p.value.size()));
      formats.push_back(p.binary ? 1 : 0);
    }
    return Result(PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr,
                               values.data(), lengths.data(), formats.data(),
                               binary_results ? 1 : 0));
  }

  std::string uri_;
  PGconn* conn_ = nullptr;
};

class PgStore::Lease {
 public:
  Lease(PgStore* store, Connection* c) : store_(store), c_(c) {}
  Lease(Lease&& o) noexcept : store_(o.store_), c_(std::exchange(o.c_, nullptr)) {}
  ~Lease() {
    if (c_) store_->Return(c_);
  }
  Connection* operator->() const { return c_; }

 private:
  PgStore* store_;
  Connection* c_;
};

PgStore::PgStore(std::string uri, std::string owner)
    : uri_(std::move(uri)), described_(RedactUri(uri_)), owner_(std::move(owner)) {}

PgStore::~PgStore() = default;

PgStore::Lease PgStore::Acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !free_.empty(); });
  Connection* c = free_.back();
  free_.pop_back();
  return Lease(this, c);
}

void PgStore::Return(Connection* c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(c);
  }
  cv_.notify_one();
}

absl::StatusOr<std::unique_ptr<PgStore>> PgStore::Open(const std::string& uri,
                                                       const std::string& owner,
                                                       int connections) {
  std::unique_ptr<PgStore> store(new PgStore(uri, owner));
  for (int i = 0; i < std::max(1, connections); ++i) {
    auto c = std::make_unique<Connection>(uri);
    if (!c->ok()) {
      return absl::UnavailableError(absl::StrCat("--store ", store->described_,
                                                 ": cannot connect: ", c->error()));
    }
    store->free_.push_back(c.get());
    store->all_.push_back(std::move(c));
  }
  // Migrate under an advisory lock held by this transaction: replicas that start together
  // serialise here, and the second finds the first's work done.
  Lease c = store->Acquire();
  auto fail = [&](const std::string& what, const Result& r) {
    c->Exec("ROLLBACK");
    return absl::UnavailableError(absl::StrCat("--store ", store->described_, ": ", what, ": ",
                                               r ? PQresultErrorMessage(r.get()) : c->error()));
  };
  if (Result r = c->Exec("BEGIN"); !r || !Ok(r.get())) return fail("begin", r);
  if (Result r = c->Exec(kMigrationLock); !r || !Ok(r.get())) return fail("migration lock", r);
  if (Result r = c->Exec(kSchemaTable); !r || !Ok(r.get())) return fail("schema table", r);
  Result v = c->Exec("SELECT COALESCE(MAX(version), 0) FROM wavecrest_schema");
  if (!v || !Ok(v.get()) || PQntuples(v.get()) != 1) return fail("schema version", v);
  int at = 0;
  (void)absl::SimpleAtoi(PQgetvalue(v.get(), 0, 0), &at);
  if (at > kPgSchemaVersion) {
    c->Exec("ROLLBACK");
    return absl::FailedPreconditionError(
        absl::StrFormat("--store %s: the database's schema is v%d, newer than this server's v%d: "
                        "run a newer wavecrest-server",
                        store->described_, at, kPgSchemaVersion));
  }
  for (int next = at + 1; next <= kPgSchemaVersion; ++next) {
    if (Result r = c->Exec(kMigrations[next - 1], {}, false, /*script=*/true); !r || !Ok(r.get())) {
      return fail(absl::StrCat("migration v", next), r);
    }
    if (Result r = c->Exec("INSERT INTO wavecrest_schema (version) VALUES ($1)", {Int(next)});
        !r || !Ok(r.get())) {
      return fail(absl::StrCat("recording migration v", next), r);
    }
    LogInfo("store migrated", {{"store", store->described_}, {"version", next}});
  }
  if (Result r = c->Exec("COMMIT"); !r || !Ok(r.get())) return fail("commit", r);
  return store;
}

int PgStore::SchemaVersion() {
  Lease c = Acquire();
  Result r = c->Exec("SELECT COALESCE(MAX(version), 0) FROM wavecrest_schema");
  int v = 0;
  if (r && Ok(r.get()) && PQntuples(r.get()) == 1) {
    (void)absl::SimpleAtoi(PQgetvalue(r.get(), 0, 0), &v);
  }
  return v;
}

namespace {

// The first row's first column as a parsed message (binary results), or nothing.
template <typename Message>
std::optional<Message> FirstMessage(const Result& r) {
  if (!r || !Ok(r.get()) || PQntuples(r.get()) < 1) return std::nullopt;
  Message m;
  if (!m.ParseFromArray(PQgetvalue(r.get(), 0, 0), PQgetlength(r.get(), 0, 0))) {
    return std::nullopt;
  }
  return m;
}

void LogFailure(const char* what, const Result& r, const std::string& conn_error) {
  LogWarning(what, {{"error", r ? std::string(PQresultErrorMessage(r.get())) : conn_error}});
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
  Lease c = Acquire();
  Result r = c->Exec(fingerprint ? by_fp : by_kind,
                     {Text(fingerprint ? FingerprintKey(*fingerprint) : std::string(kind)),
                      Text(std::string(method)), Int(static_cast<int>(key.dtype)),
                      Int(static_cast<int>(key.layout)), Int(key.shape.m), Int(key.shape.n),
                      Int(key.shape.k), Int(key.shape.batch)},
                     /*binary_results=*/true);
  if (!r || !Ok(r.get())) LogFailure("store: lookup failed", r, c->error());
  return FirstMessage<v1::GemmTiming>(r);
}

void PgStore::Store(absl::string_view kind, const v1::GemmTiming& timing) {
  const absl::StatusOr<DType> dtype = FromProto(timing.dtype());
  const absl::StatusOr<Layout> layout = FromProto(timing.layout());
  if (!dtype.ok() || !layout.ok()) return;
  {
    Lease c = Acquire();
    Result r = c->Exec(
        "INSERT INTO results VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, "
        "COALESCE(to_timestamp(NULLIF($12, '')::double precision), now()), $13) "
        "ON CONFLICT (fingerprint, method, dtype, layout, m, n, k, batch) DO UPDATE SET "
        "kind = EXCLUDED.kind, timing = EXCLUDED.timing, source = EXCLUDED.source, "
        "measured_at = EXCLUDED.measured_at, stored_by = EXCLUDED.stored_by",
        {Text(std::string(kind)), Text(FingerprintKey(timing.provenance().device())),
         Text(timing.provenance().method()), Int(static_cast<int>(*dtype)),
         Int(static_cast<int>(*layout)), Int(timing.shape().m()), Int(timing.shape().n()),
         Int(timing.shape().k()), Int(std::max<int64_t>(timing.shape().batch(), 1)),
         Bytes(timing.SerializeAsString()), Int(timing.provenance().source()),
         Text(Seconds(timing.provenance().measured_at())), Text(owner_)});
    if (!r || !Ok(r.get())) {
      LogFailure("store: store failed", r, c->error());
      return;
    }
  }
  std::function<void(int64_t)> cb;
  {
    std::lock_guard<std::mutex> lock(count_mu_);
    cb = on_count_;
  }
  if (cb) cb(Count());
}

std::optional<v1::LayerTiming> PgStore::LookupLayer(absl::string_view kind, const LayerKey& key,
                                                    absl::string_view method,
                                                    const v1::DeviceFingerprint* fingerprint) {
  const std::string layer = LayerKeyString(key);
  Lease c = Acquire();
  Result r = c->Exec(
      fingerprint ? "SELECT timing FROM layer_results WHERE fingerprint=$1 AND method=$2 AND "
                    "layer=$3"
                  : "SELECT timing FROM layer_results WHERE kind=$1 AND method=$2 AND layer=$3 "
                    "ORDER BY measured_at DESC LIMIT 1",
      {Text(fingerprint ? FingerprintKey(*fingerprint) : std::string(kind)),
       Text(std::string(method)), Text(layer)},
      /*binary_results=*/true);
  if (!r || !Ok(r.get())) LogFailure("store: layer lookup failed", r, c->error());
  std::optional<v1::LayerTiming> t = FirstMessage<v1::LayerTiming>(r);
  if (t && t->key() != layer) return std::nullopt;
  return t;
}

void PgStore::StoreLayer(absl::string_view kind, const v1::LayerTiming& timing) {
  if (timing.key().empty()) return;
  Lease c = Acquire();
  Result r = c->Exec(
      "INSERT INTO layer_results VALUES ($1, $2, $3, $4, $5, $6, "
      "COALESCE(to_timestamp(NULLIF($7, '')::double precision), now()), $8) "
      "ON CONFLICT (fingerprint, method, layer) DO UPDATE SET kind = EXCLUDED.kind, "
      "timing = EXCLUDED.timing, source = EXCLUDED.source, measured_at = EXCLUDED.measured_at, "
      "stored_by = EXCLUDED.stored_by",
      {Text(std::string(kind)), Text(FingerprintKey(timing.provenance().device())),
       Text(timing.provenance().method()), Text(timing.key()), Bytes(timing.SerializeAsString()),
       Int(timing.provenance().source()), Text(Seconds(timing.provenance().measured_at())),
       Text(owner_)});
  if (!r || !Ok(r.get())) LogFailure("store: layer store failed", r, c->error());
}

bool PgStore::Claim(const std::string& flight, absl::Duration lease) {
  Lease c = Acquire();
  // A claim is ours when none exists, the existing one's lease ran out (its replica died or
  // gave up), or it is already ours. Leases run on the database's clock, not the replicas'.
  Result r = c->Exec(
      "INSERT INTO claims (flight, owner, expires_at) VALUES "
      "($1, $2, now() + $3::double precision * interval '1 second') "
      "ON CONFLICT (flight) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at "
      "WHERE claims.expires_at < now() OR claims.owner = EXCLUDED.owner RETURNING owner",
      {Text(flight), Text(owner_), Text(absl::StrCat(absl::ToDoubleSeconds(lease)))});
  if (!r || !Ok(r.get())) {
    // Measuring twice is better than not at all: without the database, measure here.
    LogFailure("store: claim failed; measuring here", r, c->error());
    return true;
  }
  return PQntuples(r.get()) == 1;
}

void PgStore::Release(const std::string& flight) {
  Lease c = Acquire();
  Result r = c->Exec("DELETE FROM claims WHERE flight = $1 AND owner = $2",
                     {Text(flight), Text(owner_)});
  if (!r || !Ok(r.get())) LogFailure("store: release failed", r, c->error());
}

int64_t PgStore::Count() {
  Lease c = Acquire();
  Result r =
      c->Exec("SELECT (SELECT COUNT(*) FROM results) + (SELECT COUNT(*) FROM layer_results)");
  int64_t n = 0;
  if (r && Ok(r.get()) && PQntuples(r.get()) == 1) {
    (void)absl::SimpleAtoi(PQgetvalue(r.get(), 0, 0), &n);
  }
  return n;
}

void PgStore::OnCount(std::function<void(int64_t)> callback) {
  std::lock_guard<std::mutex> lock(count_mu_);
  on_count_ = std::move(callback);
}

std::vector<std::pair<std::string, v1::GemmTiming>> PgStore::Measurements(absl::string_view kind) {
  std::vector<std::pair<std::string, v1::GemmTiming>> out;
  Lease c = Acquire();
  std::vector<Param> params = {Int(v1::SOURCE_MEASURED)};
  if (!kind.empty()) params.push_back(Text(std::string(kind)));
  Result r = c->Exec(kind.empty() ? "SELECT kind, timing FROM results WHERE source = $1 "
                                    "ORDER BY measured_at, fingerprint, m, n, k, batch"
                                  : "SELECT kind, timing FROM results WHERE source = $1 AND "
                                    "kind = $2 ORDER BY measured_at, fingerprint, m, n, k, batch",
                     params, /*binary_results=*/true);
  if (!r || !Ok(r.get())) {
    LogFailure("store: reading measurements failed", r, c->error());
    return out;
  }
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    v1::GemmTiming t;
    if (!t.ParseFromArray(PQgetvalue(r.get(), i, 1), PQgetlength(r.get(), i, 1))) continue;
    if (t.provenance().source() != v1::SOURCE_MEASURED || !(t.time_s() > 0)) continue;
    out.emplace_back(std::string(PQgetvalue(r.get(), i, 0), PQgetlength(r.get(), i, 0)),
                     std::move(t));
  }
  return out;
}

absl::StatusOr<int64_t> PgStore::PublishCalibration(const std::string& file_json,
                                                    const std::string& created_by) {
  Lease c = Acquire();
  Result r = c->Exec("INSERT INTO calibrations (created_by, file) VALUES ($1, $2) RETURNING version",
                     {Text(created_by), Text(file_json)});
  if (!r || !Ok(r.get()) || PQntuples(r.get()) != 1) {
    return absl::UnavailableError(absl::StrCat(
        "store: publishing the calibration failed: ",
        r ? std::string(PQresultErrorMessage(r.get())) : c->error()));
  }
  int64_t version = 0;
  (void)absl::SimpleAtoi(PQgetvalue(r.get(), 0, 0), &version);
  return version;
}

std::optional<StoredCalibration> PgStore::LatestCalibration() {
  Lease c = Acquire();
  Result r = c->Exec(
      "SELECT version, file, created_by FROM calibrations ORDER BY version DESC LIMIT 1");
  if (!r || !Ok(r.get())) {
    LogFailure("store: reading the calibration failed", r, c->error());
    return std::nullopt;
  }
  if (PQntuples(r.get()) != 1) return std::nullopt;
  StoredCalibration s;
  (void)absl::SimpleAtoi(PQgetvalue(r.get(), 0, 0), &s.version);
  s.file_json = PQgetvalue(r.get(), 0, 1);
  s.created_by = PQgetvalue(r.get(), 0, 2);
  return s;
}

void PgStore::ForEach(const std::function<void(const std::string&, const v1::GemmTiming&)>& gemm,
                      const std::function<void(const std::string&, const v1::LayerTiming&)>& layer) {
  auto each = [&](const char* sql, const auto& call, auto message) {
    Result r;
    {
      Lease c = Acquire();
      r = c->Exec(sql, {}, /*binary_results=*/true);
      if (!r || !Ok(r.get())) {
        LogFailure("store: reading every result failed", r, c->error());
        return;
      }
    }
    for (int i = 0; i < PQntuples(r.get()); ++i) {
      if (!message.ParseFromArray(PQgetvalue(r.get(), i, 1), PQgetlength(r.get(), i, 1))) continue;
      call(std::string(PQgetvalue(r.get(), i, 0), PQgetlength(r.get(), i, 0)), message);
    }
  };
  each("SELECT kind, timing FROM results ORDER BY measured_at", gemm, v1::GemmTiming());
  each("SELECT kind, timing FROM layer_results ORDER BY measured_at", layer, v1::LayerTiming());
}

}  // namespace wavecrest
