// The PostgreSQL store's schema (server/pg_store.h): versioned in wavecrest_schema, migrated in
// one transaction under an advisory lock, so that replicas starting together migrate once.
#ifndef WAVECREST_SERVER_PG_SCHEMA_H_
#define WAVECREST_SERVER_PG_SCHEMA_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/pg_connection.h"

namespace wavecrest::pg {

// Brings the database `c` reaches to this server's schema version: connecting (when needed)
// within `connect_by`, migrating within `migrate_by`. UNAVAILABLE when the database cannot be
// reached now (down, frozen, starting up: trying later may help); FAILED_PRECONDITION when
// trying again cannot help (refused credentials, no such database, a schema newer than this
// server's, a migration the database rejects). `described` names the store in errors.
absl::Status Migrate(Connection& c, const std::string& described, absl::Time connect_by,
                     absl::Time migrate_by);

// The schema version the database is at; 0 when it cannot be read.
int SchemaVersion(Connection& c, absl::Time deadline);

// Whether a connection failure (Connection::error()) is one that trying later may cure.
bool TransientConnectError(absl::string_view error);

}  // namespace wavecrest::pg

#endif  // WAVECREST_SERVER_PG_SCHEMA_H_
