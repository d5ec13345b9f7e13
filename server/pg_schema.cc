#include "server/pg_schema.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/pg_store.h"
#include "service/log.h"

namespace wavecrest::pg {
namespace {

// Serialises schema migrations of every replica (pg_advisory_xact_lock's key: "wavecrest").
constexpr char kMigrationLock[] = "SELECT pg_advisory_xact_lock(8675309271828182845)";

constexpr char kSchemaTable[] =
    "CREATE TABLE IF NOT EXISTS wavecrest_schema (version INTEGER PRIMARY KEY, "
    "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())";

constexpr char kVersion[] = "SELECT COALESCE(MAX(version), 0) FROM wavecrest_schema";

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

std::string NewerSchema(int at) {
  return absl::StrFormat(
      "the database's schema is v%d, newer than this server's v%d: run a newer "
      "wavecrest-server",
      at, kPgSchemaVersion);
}

}  // namespace

bool TransientConnectError(absl::string_view error) {
  // What the server or libpq says when trying again cannot help: credentials, the database's
  // name, the connection's settings.
  for (absl::string_view permanent :
       {"authentication", "password", "pg_hba.conf", "does not exist", "permission denied",
        "invalid", "unrecognized", "missing \"=\""}) {
    if (absl::StrContains(error, permanent)) return false;
  }
  return true;
}

absl::Status Migrate(Connection& c, const std::string& described, absl::Time connect_by,
                     absl::Time migrate_by) {
  if (!c.ok() && !c.Connect(connect_by)) {
    const std::string why = absl::StrCat("--store ", described, ": ", c.error());
    return TransientConnectError(c.error()) ? absl::UnavailableError(why)
                                            : absl::FailedPreconditionError(why);
  }
  auto exec = [&](Statement s) { return c.Exec(s, migrate_by); };
  // A statement's own error cannot be cured by waiting; a connection lost on the way can.
  auto fail = [&](const std::string& what, const Result& r) {
    const std::string why = absl::StrCat("--store ", described, ": ", what, ": ",
                                         r ? PQresultErrorMessage(r.get()) : c.error());
    if (r) exec({"ROLLBACK"});
    return r ? absl::FailedPreconditionError(why) : absl::UnavailableError(why);
  };
  if (Result r = exec({"BEGIN"}); !r || !Ok(r.get())) return fail("begin", r);
  if (Result r = exec({kMigrationLock}); !r || !Ok(r.get())) return fail("migration lock", r);
  if (Result r = exec({kSchemaTable}); !r || !Ok(r.get())) return fail("schema table", r);
  Result v = exec({kVersion});
  if (!v || !Ok(v.get()) || PQntuples(v.get()) != 1) return fail("schema version", v);
  int at = 0;
  (void)absl::SimpleAtoi(PQgetvalue(v.get(), 0, 0), &at);
  if (at > kPgSchemaVersion) {
    exec({"ROLLBACK"});
    return absl::FailedPreconditionError(absl::StrCat("--store ", described, ": ", NewerSchema(at)));
  }
  for (int next = at + 1; next <= kPgSchemaVersion; ++next) {
    if (Result r = exec({kMigrations[next - 1], {}, false, /*script=*/true}); !r || !Ok(r.get())) {
      return fail(absl::StrCat("migration v", next), r);
    }
    if (Result r = exec({"INSERT INTO wavecrest_schema (version) VALUES ($1)", {Int(next)}});
        !r || !Ok(r.get())) {
      return fail(absl::StrCat("recording migration v", next), r);
    }
    LogInfo("store migrated", {{"store", described}, {"version", next}});
  }
  if (Result r = exec({"COMMIT"}); !r || !Ok(r.get())) return fail("commit", r);
  return absl::OkStatus();
}

int SchemaVersion(Connection& c, absl::Time deadline) {
  Result r = c.Exec({kVersion}, deadline);
  int v = 0;
  if (r && Ok(r.get()) && PQntuples(r.get()) == 1) {
    (void)absl::SimpleAtoi(PQgetvalue(r.get(), 0, 0), &v);
  }
  return v;
}

}  // namespace wavecrest::pg
