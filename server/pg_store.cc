#include "server/pg_store.h"

#include <libpq-fe.h>

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "service/convert.h"
#include "service/log.h"
#include "server/sqlite_store.h"

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

// A text[] literal ({"a","b\"c"}) of `values`, for "= ANY($n::text[])".
std::string TextArray(const std::set<std::string>& values) {
  std::string out = "{";
  for (const std::string& v : values) {
    if (out.size() > 1) out += ',';
    out += '"';
    for (char c : v) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

std::string SecondsText(absl::Duration d) { return absl::StrCat(absl::ToDoubleSeconds(d)); }

}  // namespace

// One statement: `sql` with `params`, results in binary when `binary_results`; a `script` holds
// several statements and no parameters (a migration).
struct PgStore::Statement {
  Statement(std::string sql_, std::vector<Param> params_ = {}, bool binary_results_ = false,
            bool script_ = false)
      : sql(std::move(sql_)),
        params(std::move(params_)),
        binary_results(binary_results_),
        script(script_) {}
  Statement(const char* sql_) : Statement(std::string(sql_)) {}  // NOLINT: one SQL string
  std::string sql;
  std::vector<Param> params;
  bool binary_results = false;
  bool script = false;
};

// A statement's result, or why there is none (result null: the connection broke, timed out or
// the store is down; not OK: the statement's own error).
struct PgStore::Outcome {
  Result result;
  std::string error;
  bool down = false;  // not tried: the store was already known to be down (logged once then)
  bool ok() const { return result && Ok(result.get()); }
};

// One libpq connection, driven asynchronously so that every wait has a deadline.
class PgStore::Connection {
 public:
  explicit Connection(std::string uri) : uri_(std::move(uri)) {}
  ~Connection() { Drop(); }
  bool ok() const { return conn_ && PQstatus(conn_) == CONNECTION_OK; }
  const std::string& error() const { return error_; }

  // Connects within `deadline`; false (error() says why) otherwise.
  bool Connect(absl::Time deadline) {
    Drop();
    const std::string timeout_s = absl::StrCat(std::max<int64_t>(
        1, absl::ToInt64Seconds(absl::Ceil(deadline - absl::Now(), absl::Seconds(1)))));
    // Our defaults first: the URI's own settings (expanded from "dbname") override them.
    // Keepalives and tcp_user_timeout notice a peer that vanished; the deadline covers a peer
    // that is there and silent (a stopped server).
    const char* keys[] = {"connect_timeout",     "application_name", "keepalives",
                          "keepalives_idle",     "keepalives_interval", "keepalives_count",
                          "tcp_user_timeout",    "dbname",           nullptr};
    const char* values[] = {timeout_s.c_str(), "wavecrest-server", "1", "5", "2", "3", "5000",
                            uri_.c_str(),      nullptr};
    conn_ = PQconnectStartParams(keys, values, /*expand_dbname=*/1);
    if (conn_ == nullptr || PQstatus(conn_) == CONNECTION_BAD) return Fail("cannot connect");
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;  // as libpq's documentation starts
    while (st != PGRES_POLLING_OK) {
      if (st == PGRES_POLLING_FAILED) return Fail("cannot connect");
      if (!Wait(st == PGRES_POLLING_WRITING, deadline)) return Timeout("connecting");
      st = PQconnectPoll(conn_);
    }
    PQsetnonblocking(conn_, 1);
    return true;
  }

  // Runs `s` within `deadline`: its last result (the first error, if a script fails), or null
  // when the connection broke or the deadline passed (the connection is then dropped).
  Result Exec(const Statement& s, absl::Time deadline) {
    if (!ok() && !Connect(deadline)) return nullptr;
    if (!Send(s)) {
      Fail("sending");
      return nullptr;
    }
    while (true) {
      const int f = PQflush(conn_);
      if (f == 0) break;
      if (f < 0) {
        Fail("sending");
        return nullptr;
      }
      if (!Wait(/*write=*/true, deadline)) {
        Timeout("sending");
        return nullptr;
      }
    }
    Result last;
    while (true) {
      while (PQisBusy(conn_)) {
        if (!Wait(/*write=*/false, deadline)) {
          Timeout("waiting for the answer");
          return nullptr;
        }
        if (!PQconsumeInput(conn_)) {
          Fail("reading");
          return nullptr;
        }
      }
      PGresult* r = PQgetResult(conn_);
      if (r == nullptr) break;
      if (!last || Ok(last.get())) {
        last.reset(r);
      } else {
        PQclear(r);
      }
    }
    // A server that went away answers with an error and a dead connection: that is a broken
    // connection, not the statement's fault.
    if (PQstatus(conn_) != CONNECTION_OK || !last) {
      Fail(last ? "the connection broke" : "no result");
      return nullptr;
    }
    return last;
  }

 private:
  bool Send(const Statement& s) {
    if (s.script) return PQsendQuery(conn_, s.sql.c_str()) == 1;
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    for (const Param& p : s.params) {
      values.push_back(p.value.data());
      lengths.push_back(static_cast<int>(p.value.size()));
      formats.push_back(p.binary ? 1 : 0);
    }
    return PQsendQueryParams(conn_, s.sql.c_str(), static_cast<int>(s.params.size()), nullptr,
                             values.data(), lengths.data(), formats.data(),
                             s.binary_results ? 1 : 0) == 1;
  }
  // Until the socket can be read (or written) or `deadline`; false when the deadline came first.
  bool Wait(bool write, absl::Time deadline) {
    const int fd = PQsocket(conn_);
    if (fd < 0) return true;  // the next libpq call reports the error
    while (true) {
      const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
      if (ms <= 0) return false;
      pollfd p{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
      const int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, 1000)));
      if (n > 0) return true;
      if (n < 0 && errno != EINTR) return true;
    }
  }
  bool Fail(const char* what) {
    error_ = absl::StrCat(what, ": ",
                          conn_ ? std::string(absl::StripTrailingAsciiWhitespace(
                                      PQerrorMessage(conn_)))
                                : "out of memory");
    Drop();
    return false;
  }
  bool Timeout(const char* what) {
    error_ = absl::StrCat(what, ": no answer within the store's timeout");
    Drop();
    return false;
  }
  void Drop() {
    if (conn_) PQfinish(conn_);
    conn_ = nullptr;
  }

  std::string uri_;
  PGconn* conn_ = nullptr;
  std::string error_;
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

PgStore::PgStore(std::string uri, std::string owner, StoreOptions options)
    : uri_(std::move(uri)),
      described_(RedactUri(uri_)),
      owner_(std::move(owner)),
      options_(std::move(options)) {}

PgStore::~PgStore() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (!background_.joinable()) return;  // Open failed: nothing was claimed
  background_.join();
  ReleaseAll();
}

std::optional<PgStore::Lease> PgStore::Acquire(absl::Time deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_until(lock, absl::ToChronoTime(deadline), [&] { return !free_.empty(); })) {
    return std::nullopt;
  }
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

PgStore::Outcome PgStore::Run(const Statement& s, absl::Time deadline) {
  if (!up_.load()) {
    std::lock_guard<std::mutex> lock(state_mu_);
    return {nullptr, absl::StrCat("the store is unavailable (", down_reason_, ")"), true};
  }
  std::optional<Lease> c = Acquire(deadline);
  if (!c) return {nullptr, "no pooled connection was free before the store's timeout"};
  for (int attempt = 0; attempt < 2; ++attempt) {
    Result r = (*c)->Exec(s, deadline);
    if (r) {
      std::string error = Ok(r.get()) ? "" : PQresultErrorMessage(r.get());
      return {std::move(r), std::move(error)};
    }
    // Broken: a fresh connection once (a server restart breaks every pooled one), unless the
    // deadline is spent.
    if (absl::Now() >= deadline) break;
  }
  const std::string why = (*c)->error();
  MarkDown(why);
  return {nullptr, why};
}

void PgStore::MarkDown(const std::string& why) {
  std::function<void(bool)> cb;
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    down_reason_ = why;
    if (!up_.exchange(false)) return;
    cb = on_availability_;
  }
  LogWarning("store unavailable: answering without it until it is back",
             {{"store", described_}, {"reason", why}});
  if (cb) cb(false);
}

void PgStore::MarkUp() {
  std::function<void(bool)> cb;
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (up_.exchange(true)) return;
    cb = on_availability_;
  }
  LogInfo("store available again", {{"store", described_}});
  if (cb) cb(true);
}

void PgStore::OnAvailability(std::function<void(bool)> callback) {
  std::lock_guard<std::mutex> lock(state_mu_);
  on_availability_ = std::move(callback);
}

void PgStore::Background() {
  const absl::Duration every =
      std::min({options_.probe_every, options_.claim_lease / 3, absl::Milliseconds(250)});
  while (true) {
    {
      std::unique_lock<std::mutex> lock(stop_mu_);
      if (stop_cv_.wait_for(lock, absl::ToChronoMilliseconds(every), [&] { return stop_; })) {
        return;
      }
    }
    if (up_.load()) {
      Maintain();
    } else {
      Probe();
    }
  }
}

void PgStore::Probe() {
  const absl::Time deadline = Deadline();
  std::optional<Lease> c = Acquire(deadline);
  if (!c) return;
  Result r = (*c)->Exec({"SELECT COALESCE(MAX(version), 0) FROM wavecrest_schema"}, deadline);
  if (!r || !Ok(r.get()) || PQntuples(r.get()) != 1) return;
  int at = 0;
  (void)absl::SimpleAtoi(PQgetvalue(r.get(), 0, 0), &at);
  if (at > kPgSchemaVersion) {
    std::lock_guard<std::mutex> lock(state_mu_);
    down_reason_ = absl::StrFormat(
        "the database's schema is v%d, newer than this server's v%d: run a newer "
        "wavecrest-server",
        at, kPgSchemaVersion);
    return;
  }
  MarkUp();
}

void PgStore::Maintain() {
  std::map<absl::Duration, std::set<std::string>> held;  // by lease
  std::set<std::string> pending;
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    for (const auto& [flight, lease] : held_) held[lease].insert(flight);
    pending = pending_release_;
  }
  // Every third of the shortest lease held (and of claim_lease, for the schema check).
  const absl::Duration every =
      std::min(options_.claim_lease, held.empty() ? options_.claim_lease : held.begin()->first) / 3;
  if (absl::Now() - maintained_ < every) return;
  maintained_ = absl::Now();
  for (const auto& [lease, flights] : held) {
    // Leases run on the database's clock: a claim lives its lease past its last renewal.
    Outcome o = Run({"UPDATE claims SET expires_at = now() + $3::double precision * "
                     "interval '1 second' WHERE owner = $1 AND flight = ANY($2::text[])",
                     {Text(owner_), Text(TextArray(flights)), Text(SecondsText(lease))}},
                    Deadline());
    if (!o.ok()) LogWarning("store: renewing claims failed", {{"error", o.error}});
  }
  if (!pending.empty()) {
    Outcome o = Run({"DELETE FROM claims WHERE owner = $1 AND flight = ANY($2::text[])",
                     {Text(owner_), Text(TextArray(pending))}},
                    Deadline());
    if (o.ok()) {
      std::lock_guard<std::mutex> lock(state_mu_);
      for (const std::string& f : pending) pending_release_.erase(f);
    }
  }
  const int at = SchemaVersion();
  if (at > kPgSchemaVersion) {
    MarkDown(absl::StrFormat(
        "the database's schema is v%d, newer than this server's v%d: run a newer "
        "wavecrest-server",
        at, kPgSchemaVersion));
  }
}

absl::StatusOr<std::unique_ptr<PgStore>> PgStore::Open(const std::string& uri,
                                                       const std::string& owner,
                                                       const StoreOptions& options) {
  std::unique_ptr<PgStore> store(new PgStore(uri, owner, options));
  // Starting is not a request: a database a few seconds slow to answer may still be waited for.
  const absl::Time connect_by = absl::Now() + std::max(options.op_timeout, absl::Seconds(10));
  for (int i = 0; i < std::max(1, options.connections); ++i) {
    auto c = std::make_unique<Connection>(uri);
    if (!c->Connect(connect_by)) {
      return absl::UnavailableError(absl::StrCat("--store ", store->described_, ": ", c->error()));
    }
    store->free_.push_back(c.get());
    store->all_.push_back(std::move(c));
  }
  // Migrate under an advisory lock held by this transaction: replicas that start together
  // serialise here, and the second finds the first's work done.
  const absl::Time migrate_by = absl::Now() + absl::Seconds(60);
  std::optional<Lease> c = store->Acquire(migrate_by);
  auto exec = [&](Statement s) { return (*c)->Exec(s, migrate_by); };
  auto fail = [&](const std::string& what, const Result& r) {
    exec({"ROLLBACK"});
    return absl::UnavailableError(absl::StrCat("--store ", store->described_, ": ", what, ": ",
                                               r ? PQresultErrorMessage(r.get()) : (*c)->error()));
  };
  if (Result r = exec({"BEGIN"}); !r || !Ok(r.get())) return fail("begin", r);
  if (Result r = exec({kMigrationLock}); !r || !Ok(r.get())) return fail("migration lock", r);
  if (Result r = exec({kSchemaTable}); !r || !Ok(r.get())) return fail("schema table", r);
  Result v = exec({"SELECT COALESCE(MAX(version), 0) FROM wavecrest_schema"});
  if (!v || !Ok(v.get()) || PQntuples(v.get()) != 1) return fail("schema version", v);
  int at = 0;
  (void)absl::SimpleAtoi(PQgetvalue(v.get(), 0, 0), &at);
  if (at > kPgSchemaVersion) {
    exec({"ROLLBACK"});
    return absl::FailedPreconditionError(
        absl::StrFormat("--store %s: the database's schema is v%d, newer than this server's v%d: "
                        "run a newer wavecrest-server",
                        store->described_, at, kPgSchemaVersion));
  }
  for (int next = at + 1; next <= kPgSchemaVersion; ++next) {
    if (Result r = exec({kMigrations[next - 1], {}, false, /*script=*/true}); !r || !Ok(r.get())) {
      return fail(absl::StrCat("migration v", next), r);
    }
    if (Result r = exec({"INSERT INTO wavecrest_schema (version) VALUES ($1)", {Int(next)}});
        !r || !Ok(r.get())) {
      return fail(absl::StrCat("recording migration v", next), r);
    }
    LogInfo("store migrated", {{"store", store->described_}, {"version", next}});
  }
  if (Result r = exec({"COMMIT"}); !r || !Ok(r.get())) return fail("commit", r);
  c.reset();
  store->background_ = std::thread([s = store.get()] { s->Background(); });
  return store;
}

int PgStore::SchemaVersion() {
  Outcome o = Run({"SELECT COALESCE(MAX(version), 0) FROM wavecrest_schema"}, Deadline());
  int v = 0;
  if (o.ok() && PQntuples(o.result.get()) == 1) {
    (void)absl::SimpleAtoi(PQgetvalue(o.result.get(), 0, 0), &v);
  }
  return v;
}

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

// A failed operation, logged unless the store was already known to be down (MarkDown said so
// once; every operation until it is back fails the same way).
void PgStore::LogFailure(const char* what, const Outcome& o) {
  if (!o.down) LogWarning(what, {{"store", described_}, {"error", o.error}});
}

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
       "measured_at = EXCLUDED.measured_at, stored_by = EXCLUDED.stored_by",
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
  std::function<void(int64_t)> cb;
  {
    std::lock_guard<std::mutex> lock(count_mu_);
    cb = on_count_;
  }
  if (cb) cb(Count());
  return StoreOutcome::kStored;
}

std::optional<v1::LayerTiming> PgStore::LookupLayer(absl::string_view kind, const LayerKey& key,
                                                    absl::string_view method,
                                                    const v1::DeviceFingerprint* fingerprint) {
  if (!up_.load()) return std::nullopt;
  const std::string layer = LayerKeyString(key);
  Outcome o = Run(
      {fingerprint ? "SELECT timing FROM layer_results WHERE fingerprint=$1 AND method=$2 AND "
                     "layer=$3"
                   : "SELECT timing FROM layer_results WHERE kind=$1 AND method=$2 AND layer=$3 "
                     "ORDER BY measured_at DESC LIMIT 1",
       {Text(fingerprint ? FingerprintKey(*fingerprint) : std::string(kind)),
        Text(std::string(method)), Text(layer)},
       /*binary_results=*/true},
      Deadline());
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
       "stored_by = EXCLUDED.stored_by",
       {Text(std::string(kind)), Text(FingerprintKey(timing.provenance().device())),
        Text(timing.provenance().method()), Text(timing.key()), Bytes(timing.SerializeAsString()),
        Int(timing.provenance().source()), Text(Seconds(timing.provenance().measured_at())),
        Text(owner_)}},
      Deadline());
  if (!o.ok()) {
    LogFailure("store: layer store failed", o);
    return StoreOutcome::kLost;
  }
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

int64_t PgStore::Count() {
  Outcome o = Run(
      {"SELECT (SELECT COUNT(*) FROM results) + (SELECT COUNT(*) FROM layer_results)"},
      Deadline());
  if (o.ok() && PQntuples(o.result.get()) == 1) {
    int64_t n = 0;
    if (absl::SimpleAtoi(PQgetvalue(o.result.get(), 0, 0), &n)) last_count_.store(n);
  }
  return last_count_.load();  // the last one known while the store is down
}

void PgStore::OnCount(std::function<void(int64_t)> callback) {
  std::lock_guard<std::mutex> lock(count_mu_);
  on_count_ = std::move(callback);
}

std::vector<std::pair<std::string, v1::GemmTiming>> PgStore::Measurements(absl::string_view kind) {
  std::vector<std::pair<std::string, v1::GemmTiming>> out;
  std::vector<Param> params = {Int(v1::SOURCE_MEASURED)};
  if (!kind.empty()) params.push_back(Text(std::string(kind)));
  Outcome o = Run({kind.empty() ? "SELECT kind, timing FROM results WHERE source = $1 "
                                  "ORDER BY measured_at, fingerprint, m, n, k, batch"
                                : "SELECT kind, timing FROM results WHERE source = $1 AND "
                                  "kind = $2 ORDER BY measured_at, fingerprint, m, n, k, batch",
                   params, /*binary_results=*/true},
                  absl::Now() + options_.bulk_timeout);
  if (!o.ok()) {
    LogFailure("store: reading measurements failed", o);
    return out;
  }
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
    Outcome o = Run({sql, {}, /*binary_results=*/true}, absl::Now() + options_.bulk_timeout);
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
