// A spool's bookkeeping in its SQLite file (server/sqlite_store.h): which shared store it spools
// for, and the leases of the processes using it, so that a replica can tell a spool whose
// processes are gone (orphaned: adopted and drained, server/spooled_store.h) from one in use.
// Leases are rows "lease:<owner>" of the meta table whose value is the end of the lease in Unix
// milliseconds; they run on the host's clock (spools are files of one host).
#include <sqlite3.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "service/log.h"
#include "server/sqlite_store.h"

namespace wavecrest {
namespace {

constexpr char kLeasePrefix[] = "lease:";

// Runs `sql` with text parameters `params`; the first column of each row goes to `row`.
bool Run(sqlite3* db, const char* sql, const std::vector<std::string>& params,
         const std::function<void(sqlite3_stmt*)>& row = nullptr) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) return false;
  for (size_t i = 0; i < params.size(); ++i) {
    sqlite3_bind_text(stmt, static_cast<int>(i + 1), params[i].c_str(), -1, SQLITE_TRANSIENT);
  }
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    if (row) row(stmt);
  }
  sqlite3_finalize(stmt);
  return rc == SQLITE_DONE;
}

std::string Text(sqlite3_stmt* stmt, int column) {
  const char* v = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
  return v ? v : "";
}

std::string Millis(absl::Time t) { return absl::StrCat(absl::ToUnixMillis(t)); }

}  // namespace

std::optional<std::string> SqliteStore::Meta(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<std::string> out;
  Run(db_, "SELECT value FROM meta WHERE key = ?1", {key},
      [&](sqlite3_stmt* s) { out = Text(s, 0); });
  return out;
}

std::optional<std::string> SqliteStore::SetMetaIfAbsent(const std::string& key,
                                                        const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!Run(db_, "INSERT OR IGNORE INTO meta VALUES (?1, ?2)", {key, value})) {
      LogWarning("measurement store: writing meta failed", {{"key", key}, {"error", sqlite3_errmsg(db_)}});
    }
  }
  return Meta(key);
}

bool SqliteStore::RenewLease(const std::string& owner, absl::Time until, absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  // One statement each, no transaction: a lease written alone is whole, and a removal of ended
  // ones that fails is tried again at the next renewal.
  const bool renewed = Run(db_, "INSERT OR REPLACE INTO meta VALUES (?1, ?2)",
                           {absl::StrCat(kLeasePrefix, owner), Millis(until)});
  Run(db_,
      "DELETE FROM meta WHERE key LIKE 'lease:%' AND CAST(value AS INTEGER) < CAST(?1 AS INTEGER)",
      {Millis(now)});
  return renewed;
}

bool SqliteStore::DropLease(const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  return Run(db_, "DELETE FROM meta WHERE key = ?1", {absl::StrCat(kLeasePrefix, owner)});
}

std::optional<SpoolFileInfo> InspectSpoolFile(const std::string& path, absl::Time now) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return std::nullopt;
  }
  sqlite3_busy_timeout(db, 200);
  std::optional<SpoolFileInfo> info;
  std::string schema;
  // Any read of a file that is not a database, or not ours, fails or finds no schema here.
  if (Run(db, "SELECT key, value FROM meta", {}, [&](sqlite3_stmt* s) {
        const std::string key = Text(s, 0), value = Text(s, 1);
        if (!info) info.emplace();
        if (key == "schema") schema = value;
        if (key == "store") info->store = value;
        int64_t until = 0;
        if (absl::StartsWith(key, kLeasePrefix) && absl::SimpleAtoi(value, &until) &&
            absl::FromUnixMillis(until) >= now) {
          ++info->live_leases;
        }
      }) &&
      info && schema == kCacheSchema &&
      Run(db, "SELECT (SELECT COUNT(*) FROM results) + (SELECT COUNT(*) FROM layer_results)", {},
          [&](sqlite3_stmt* s) { info->rows = sqlite3_column_int64(s, 0); })) {
    sqlite3_close(db);
    return info;
  }
  sqlite3_close(db);
  return std::nullopt;
}

}  // namespace wavecrest
