#include "server/sqlite_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "service/convert.h"
#include "service/log.h"

namespace wavecrest {
namespace {

constexpr char kCreate[] = R"sql(
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
  kind TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  method TEXT NOT NULL,
  dtype INTEGER NOT NULL,
  layout INTEGER NOT NULL,
  m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, batch INTEGER NOT NULL,
  timing BLOB NOT NULL,
  measured_at_unix_s INTEGER NOT NULL,
  PRIMARY KEY (fingerprint, method, dtype, layout, m, n, k, batch)
);
CREATE INDEX IF NOT EXISTS results_by_kind ON results (kind, method, dtype, layout, m, n, k, batch);
CREATE TABLE IF NOT EXISTS layer_results (
  kind TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  method TEXT NOT NULL,
  layer TEXT NOT NULL,
  timing BLOB NOT NULL,
  measured_at_unix_s INTEGER NOT NULL,
  PRIMARY KEY (fingerprint, method, layer)
);
CREATE INDEX IF NOT EXISTS layer_results_by_kind ON layer_results (kind, method, layer);
CREATE TABLE IF NOT EXISTS calibrations (
  version INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at_unix_s INTEGER NOT NULL,
  created_by TEXT NOT NULL,
  file TEXT NOT NULL
);
)sql";

// SQLITE_BUSY and SQLITE_LOCKED mean another connection holds the file (replicas sharing a
// spool, opening it together): UNAVAILABLE, a wait, where any other failure is the file's.
absl::Status SqliteError(int rc, const std::string& message) {
  const int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED ? absl::UnavailableError(message)
                                                            : absl::InternalError(message);
}

absl::Status Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err); rc != SQLITE_OK) {
    absl::Status st = SqliteError(rc, err ? err : "sqlite error");
    sqlite3_free(err);
    return st;
  }
  return absl::OkStatus();
}

// How long a statement waits on a lock another connection holds: 1 s while opening (Open tries
// again, for up to kBusyPatience, before it says the file is in use; it never moves a locked
// file aside), 5 s once open.
constexpr absl::Duration kOpenBusyTimeout = absl::Seconds(1);
constexpr absl::Duration kBusyTimeout = absl::Seconds(5);
constexpr absl::Duration kBusyPatience = absl::Seconds(30);

// SQLite's busy handler on the store's clock (what sqlite3_busy_timeout does on the wall clock):
// pauses growing from 1 ms to 100 ms, until the wait's patience is spent.
int WaitWhileSqliteBusy(void* arg, int count) {
  static constexpr int kPausesMs[] = {1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100};
  auto* wait = static_cast<SqliteBusyWait*>(arg);
  const absl::Time now = wait->clock->Now();
  if (count == 0) wait->since = now;
  const absl::Duration left = wait->patience - (now - wait->since);
  if (left <= absl::ZeroDuration()) return 0;
  const int pause = kPausesMs[std::min<int>(count, std::size(kPausesMs) - 1)];
  wait->clock->SleepFor(std::min(absl::Milliseconds(pause), left));
  return 1;
}

// Whether the database `db` (in a write transaction) is ours or empty: OK, UNAVAILABLE while
// another connection holds it locked, else DATA_LOSS (damaged, foreign, another schema).
absl::Status CheckSqliteSchema(sqlite3* db) {
  sqlite3_stmt* stmt = nullptr;
  int tables = 0;
  bool has_meta = false;
  // Reading the tables fails on a locked file (UNAVAILABLE) or a damaged one (DATA_LOSS).
  auto fail_read = [&](int rc) {
    absl::Status st = SqliteError(rc, sqlite3_errmsg(db));
    return absl::IsUnavailable(st) ? st : absl::DataLossError(st.message());
  };
  if (const int rc = sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type='table'",
                                       -1, &stmt, nullptr);
      rc != SQLITE_OK) {
    return fail_read(rc);
  }
  int rc = SQLITE_OK;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    ++tables;
    const char* name = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    if (name && std::string(name) == "meta") has_meta = true;
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) return fail_read(rc);
  if (tables == 0) return absl::OkStatus();
  if (!has_meta) return absl::DataLossError("foreign database (no meta table)");
  std::string schema;
  if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='schema'", -1, &stmt, nullptr) ==
      SQLITE_OK) {
    if (sqlite3_step(stmt) == SQLITE_ROW) {
      schema = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
  }
  if (schema != kCacheSchema) {
    return absl::DataLossError(absl::StrCat("foreign schema \"", schema, "\""));
  }
  return absl::OkStatus();
}

// Opens `path` and checks that it is our schema (or empty), waiting on locks by `busy`. Returns
// the handle, UNAVAILABLE while another connection holds the file locked, or another error that
// means "this file is not usable as our store".
absl::StatusOr<sqlite3*> TryOpen(const std::string& path, SqliteBusyWait& busy) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "cannot open";
    sqlite3_close(db);
    return absl::DataLossError(msg);
  }
  sqlite3_busy_handler(db, WaitWhileSqliteBusy, &busy);
  auto fail = [&](absl::Status st) -> absl::StatusOr<sqlite3*> {
    Exec(db, "ROLLBACK;").IgnoreError();
    sqlite3_close(db);
    return st;
  };
  // Any read of a non-database file fails here with SQLITE_NOTADB.
  if (absl::Status st = Exec(db, "PRAGMA journal_mode=WAL;"); !st.ok()) return fail(st);
  // In WAL mode, NORMAL loses nothing when a process dies (only a power loss can take the last
  // commits) and saves an fsync per measurement stored.
  if (absl::Status st = Exec(db, "PRAGMA synchronous=NORMAL;"); !st.ok()) return fail(st);
  // The check and the creation in one write transaction: processes opening a new file together
  // (replicas sharing a spool) see it empty or whole, never half made.
  if (absl::Status st = Exec(db, "BEGIN IMMEDIATE;"); !st.ok()) return fail(st);
  if (absl::Status st = CheckSqliteSchema(db); !st.ok()) return fail(st);
  if (absl::Status st = Exec(db, kCreate); !st.ok()) return fail(st);
  if (absl::Status st = Exec(
          db, absl::StrCat("INSERT OR IGNORE INTO meta VALUES ('schema', '", kCacheSchema, "');")
                  .c_str());
      !st.ok()) {
    return fail(st);
  }
  if (absl::Status st = Exec(db, "COMMIT;"); !st.ok()) return fail(st);
  return db;
}

// TryOpen, again while another process holds the file locked (replicas sharing a spool open it
// together): in use, not damaged. Moving it aside would pull the file from under the process
// using it.
absl::StatusOr<sqlite3*> OpenWhenFree(const std::string& path, SqliteBusyWait& busy) {
  absl::StatusOr<sqlite3*> db = TryOpen(path, busy);
  const absl::Time give_up = busy.clock->Now() + kBusyPatience;
  while (absl::IsUnavailable(db.status()) && busy.clock->Now() < give_up) {
    busy.clock->SleepFor(absl::Milliseconds(50));
    db = TryOpen(path, busy);
  }
  if (absl::IsUnavailable(db.status())) {
    return absl::UnavailableError(absl::StrCat("cache ", path, ": locked by another process for ",
                                               absl::FormatDuration(kBusyPatience), ": ",
                                               db.status().message()));
  }
  return db;
}

// Moves the unusable file `path` (and its WAL) aside to `moved` and opens a fresh one there.
absl::StatusOr<sqlite3*> ReplaceUnusable(const std::string& path, const std::string& moved,
                                         const absl::Status& why, SqliteBusyWait& busy) {
  LogWarning("measurement store unusable; moving it aside and starting fresh",
             {{"path", path}, {"moved_to", moved}, {"reason", std::string(why.message())}});
  std::error_code ec;
  std::filesystem::rename(path, moved, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cache ", path, ": cannot move aside: ", ec.message()));
  }
  for (const char* suffix : {"-wal", "-shm"}) {
    std::filesystem::rename(path + suffix, moved + suffix, ec);
  }
  absl::StatusOr<sqlite3*> db = TryOpen(path, busy);
  if (!db.ok()) {
    return absl::UnavailableError(absl::StrCat("cache ", path, ": ", db.status().message()));
  }
  return db;
}

}  // namespace

std::string FingerprintKey(const v1::DeviceFingerprint& fp) {
  std::string key = absl::StrJoin(
      {fp.name(), absl::StrCat(fp.compute_capability()), absl::StrCat(fp.sm_count()),
       fp.driver_version(), fp.cuda_runtime_version(), fp.cublaslt_version(), fp.backend()},
      "|");
  // A worker's cuDNN is part of its software (fused attention runs on it); keys of workers
  // without one are as they were.
  if (!fp.cudnn_version().empty()) absl::StrAppend(&key, "|cudnn", fp.cudnn_version());
  return key;
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path,
                                                             Clock& clock) {
  std::error_code ec;
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  SqliteBusyWait opening{&clock, kOpenBusyTimeout, absl::InfinitePast()};
  absl::StatusOr<sqlite3*> db = OpenWhenFree(path, opening);
  std::string moved;
  if (!db.ok() && !absl::IsUnavailable(db.status())) {
    moved = absl::StrCat(path, ".corrupt-", absl::ToUnixSeconds(clock.Now()));
    db = ReplaceUnusable(path, moved, db.status(), opening);
  }
  if (!db.ok()) return db.status();
  std::unique_ptr<SqliteStore> cache(new SqliteStore(*db, path, clock));
  cache->moved_aside_ = moved;
  return cache;
}

SqliteStore::SqliteStore(sqlite3* db, std::string path, Clock& clock)
    : db_(db), path_(std::move(path)), busy_{&clock, kBusyTimeout, absl::InfinitePast()} {
  sqlite3_busy_handler(db_, WaitWhileSqliteBusy, &busy_);
}

SqliteStore::~SqliteStore() { sqlite3_close(db_); }

std::optional<v1::GemmTiming> SqliteStore::Lookup(absl::string_view kind, const GemmKey& key,
                                                  absl::string_view method,
                                                  const v1::DeviceFingerprint* fingerprint) {
  std::lock_guard<std::mutex> lock(mu_);
  const char* sql =
      fingerprint ? "SELECT timing FROM results WHERE fingerprint=?1 AND method=?2 AND dtype=?3 "
                    "AND layout=?4 AND m=?5 AND n=?6 AND k=?7 AND batch=?8"
                  : "SELECT timing FROM results WHERE kind=?1 AND method=?2 AND dtype=?3 AND "
                    "layout=?4 AND m=?5 AND n=?6 AND k=?7 AND batch=?8 "
                    "ORDER BY measured_at_unix_s DESC LIMIT 1";
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) return std::nullopt;
  const std::string first = fingerprint ? FingerprintKey(*fingerprint) : std::string(kind);
  const std::string m(method);
  sqlite3_bind_text(stmt, 1, first.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 2, m.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(stmt, 3, static_cast<int>(key.dtype));
  sqlite3_bind_int(stmt, 4, static_cast<int>(key.layout));
  sqlite3_bind_int64(stmt, 5, key.shape.m);
  sqlite3_bind_int64(stmt, 6, key.shape.n);
  sqlite3_bind_int64(stmt, 7, key.shape.k);
  sqlite3_bind_int64(stmt, 8, key.shape.batch);
  std::optional<v1::GemmTiming> out;
  if (sqlite3_step(stmt) == SQLITE_ROW) {
    v1::GemmTiming t;
    const void* blob = sqlite3_column_blob(stmt, 0);
    const int size = sqlite3_column_bytes(stmt, 0);
    if (blob && t.ParseFromArray(blob, size)) out = std::move(t);
  }
  sqlite3_finalize(stmt);
  return out;
}

StoreOutcome SqliteStore::Store(absl::string_view kind, const v1::GemmTiming& timing) {
  const absl::StatusOr<DType> dtype = FromProto(timing.dtype());
  const absl::StatusOr<Layout> layout = FromProto(timing.layout());
  if (!dtype.ok() || !layout.ok()) return StoreOutcome::kLost;
  const std::string blob = timing.SerializeAsString();
  const std::string fp = FingerprintKey(timing.provenance().device());
  const std::string k(kind);
  const std::string& method = timing.provenance().method();
  // The key's columns from `first` on: fingerprint, method, dtype, layout, m, n, k, batch.
  auto bind_key = [&](sqlite3_stmt* q, int first) {
    sqlite3_bind_text(q, first, fp.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, first + 1, method.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(q, first + 2, static_cast<int>(*dtype));
    sqlite3_bind_int(q, first + 3, static_cast<int>(*layout));
    sqlite3_bind_int64(q, first + 4, timing.shape().m());
    sqlite3_bind_int64(q, first + 5, timing.shape().n());
    sqlite3_bind_int64(q, first + 6, timing.shape().k());
    sqlite3_bind_int64(q, first + 7, std::max<int64_t>(timing.shape().batch(), 1));
  };
  std::lock_guard<std::mutex> lock(mu_);
  return UpsertLocked(
             "SELECT 1 FROM results WHERE fingerprint=?1 AND method=?2 AND dtype=?3 "
      "AND layout=?4 AND m=?5 AND n=?6 AND k=?7 AND batch=?8",
      [&](sqlite3_stmt* q) { bind_key(q, 1); },
      "INSERT OR REPLACE INTO results VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
      [&](sqlite3_stmt* q) {
        sqlite3_bind_text(q, 1, k.c_str(), -1, SQLITE_TRANSIENT);
        bind_key(q, 2);
        sqlite3_bind_blob(q, 10, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
        sqlite3_bind_int64(q, 11, timing.provenance().measured_at().seconds());
      })
             ? StoreOutcome::kStored
             : StoreOutcome::kLost;
}

std::optional<v1::LayerTiming> SqliteStore::LookupLayer(absl::string_view kind, const LayerKey& key,
                                                        absl::string_view method,
                                                        const v1::DeviceFingerprint* fingerprint) {
  std::lock_guard<std::mutex> lock(mu_);
  const char* sql =
      fingerprint
          ? "SELECT timing FROM layer_results WHERE fingerprint=?1 AND method=?2 AND layer=?3"
          : "SELECT timing FROM layer_results WHERE kind=?1 AND method=?2 AND layer=?3 "
            "ORDER BY measured_at_unix_s DESC LIMIT 1";
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) return std::nullopt;
  const std::string first = fingerprint ? FingerprintKey(*fingerprint) : std::string(kind);
  const std::string m(method);
  const std::string layer = LayerKeyString(key);
  sqlite3_bind_text(stmt, 1, first.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 2, m.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 3, layer.c_str(), -1, SQLITE_TRANSIENT);
  std::optional<v1::LayerTiming> out;
  if (sqlite3_step(stmt) == SQLITE_ROW) {
    v1::LayerTiming t;
    const void* blob = sqlite3_column_blob(stmt, 0);
    const int size = sqlite3_column_bytes(stmt, 0);
    if (blob && t.ParseFromArray(blob, size) && t.key() == layer) out = std::move(t);
  }
  sqlite3_finalize(stmt);
  return out;
}

StoreOutcome SqliteStore::StoreLayer(absl::string_view kind, const v1::LayerTiming& timing) {
  if (timing.key().empty()) return StoreOutcome::kLost;
  const std::string blob = timing.SerializeAsString();
  const std::string fp = FingerprintKey(timing.provenance().device());
  const std::string k(kind);
  const std::string& method = timing.provenance().method();
  // The key's columns from `first` on: fingerprint, method, layer.
  auto bind_key = [&](sqlite3_stmt* q, int first) {
    sqlite3_bind_text(q, first, fp.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, first + 1, method.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, first + 2, timing.key().c_str(), -1, SQLITE_TRANSIENT);
  };
  std::lock_guard<std::mutex> lock(mu_);
  return UpsertLocked(
             "SELECT 1 FROM layer_results WHERE fingerprint=?1 AND method=?2 AND layer=?3",
      [&](sqlite3_stmt* q) { bind_key(q, 1); },
      "INSERT OR REPLACE INTO layer_results VALUES (?1,?2,?3,?4,?5,?6)",
      [&](sqlite3_stmt* q) {
        sqlite3_bind_text(q, 1, k.c_str(), -1, SQLITE_TRANSIENT);
        bind_key(q, 2);
        sqlite3_bind_blob(q, 5, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
        sqlite3_bind_int64(q, 6, timing.provenance().measured_at().seconds());
      })
             ? StoreOutcome::kStored
             : StoreOutcome::kLost;
}

bool SqliteStore::UpsertLocked(const char* exists_sql,
                               const std::function<void(sqlite3_stmt*)>& bind_key,
                               const char* insert_sql,
                               const std::function<void(sqlite3_stmt*)>& bind_row) {
  // Whether the key is new, for the entry count.
  bool existed = false;
  if (count_ >= 0) {
    sqlite3_stmt* q = nullptr;
    if (sqlite3_prepare_v2(db_, exists_sql, -1, &q, nullptr) == SQLITE_OK) {
      bind_key(q);
      existed = sqlite3_step(q) == SQLITE_ROW;
      sqlite3_finalize(q);
    }
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, insert_sql, -1, &stmt, nullptr) != SQLITE_OK) {
    LogWarning("measurement store: prepare failed", {{"error", sqlite3_errmsg(db_)}});
    return false;
  }
  bind_row(stmt);
  const bool stored = sqlite3_step(stmt) == SQLITE_DONE;
  if (!stored) LogWarning("measurement store: store failed", {{"error", sqlite3_errmsg(db_)}});
  sqlite3_finalize(stmt);
  if (stored) CountedLocked(existed);
  return stored;
}

bool SqliteStore::DeleteLocked(const char* delete_sql,
                               const std::function<void(sqlite3_stmt*)>& bind) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, delete_sql, -1, &stmt, nullptr) != SQLITE_OK) return false;
  bind(stmt);
  const bool done = sqlite3_step(stmt) == SQLITE_DONE;
  sqlite3_finalize(stmt);
  const bool removed = done && sqlite3_changes(db_) > 0;
  if (removed && count_ > 0) --count_;
  return removed;
}

bool SqliteStore::RemoveIfUnchanged(const v1::GemmTiming& timing) {
  const absl::StatusOr<DType> dtype = FromProto(timing.dtype());
  const absl::StatusOr<Layout> layout = FromProto(timing.layout());
  if (!dtype.ok() || !layout.ok()) return false;
  const std::string blob = timing.SerializeAsString();
  const std::string fp = FingerprintKey(timing.provenance().device());
  std::lock_guard<std::mutex> lock(mu_);
  return DeleteLocked(
      "DELETE FROM results WHERE fingerprint=?1 AND method=?2 AND dtype=?3 AND layout=?4 AND "
      "m=?5 AND n=?6 AND k=?7 AND batch=?8 AND timing=?9",
      [&](sqlite3_stmt* q) {
        sqlite3_bind_text(q, 1, fp.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(q, 2, timing.provenance().method().c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(q, 3, static_cast<int>(*dtype));
        sqlite3_bind_int(q, 4, static_cast<int>(*layout));
        sqlite3_bind_int64(q, 5, timing.shape().m());
        sqlite3_bind_int64(q, 6, timing.shape().n());
        sqlite3_bind_int64(q, 7, timing.shape().k());
        sqlite3_bind_int64(q, 8, std::max<int64_t>(timing.shape().batch(), 1));
        sqlite3_bind_blob(q, 9, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
      });
}

bool SqliteStore::RemoveLayerIfUnchanged(const v1::LayerTiming& timing) {
  const std::string blob = timing.SerializeAsString();
  const std::string fp = FingerprintKey(timing.provenance().device());
  std::lock_guard<std::mutex> lock(mu_);
  return DeleteLocked(
      "DELETE FROM layer_results WHERE fingerprint=?1 AND method=?2 AND layer=?3 AND timing=?4",
      [&](sqlite3_stmt* q) {
        sqlite3_bind_text(q, 1, fp.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(q, 2, timing.provenance().method().c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(q, 3, timing.key().c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_blob(q, 4, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
      });
}

void SqliteStore::CountedLocked(bool replaced) {
  // The server is the only writer: the count moves by this store alone (a replaced key leaves it
  // as it was), so one COUNT, the first time it is asked for, keeps it exact.
  if (count_ < 0) {
    if (!on_count_) return;
    count_ = CountLocked();
  } else if (!replaced) {
    ++count_;
  }
  if (on_count_) on_count_(count_);
}

int64_t SqliteStore::CountLocked() {
  sqlite3_stmt* stmt = nullptr;
  int64_t n = 0;
  if (sqlite3_prepare_v2(db_,
                         "SELECT (SELECT COUNT(*) FROM results) + (SELECT COUNT(*) FROM "
                         "layer_results)",
                         -1, &stmt, nullptr) == SQLITE_OK) {
    if (sqlite3_step(stmt) == SQLITE_ROW) n = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
  }
  return n;
}

void SqliteStore::OnCount(std::function<void(int64_t)> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  on_count_ = std::move(callback);
}

std::vector<std::pair<std::string, v1::GemmTiming>> SqliteStore::Measurements(
    absl::string_view kind) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, v1::GemmTiming>> out;
  sqlite3_stmt* stmt = nullptr;
  const char* sql = kind.empty() ? "SELECT kind, timing FROM results ORDER BY rowid"
                                 : "SELECT kind, timing FROM results WHERE kind=?1 ORDER BY rowid";
  if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) return out;
  const std::string k(kind);
  if (!kind.empty()) sqlite3_bind_text(stmt, 1, k.c_str(), -1, SQLITE_TRANSIENT);
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    v1::GemmTiming t;
    const void* blob = sqlite3_column_blob(stmt, 1);
    const int size = sqlite3_column_bytes(stmt, 1);
    if (!blob || !t.ParseFromArray(blob, size)) continue;
    if (t.provenance().source() != v1::SOURCE_MEASURED || !(t.time_s() > 0)) continue;
    const char* row_kind = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    out.emplace_back(row_kind ? row_kind : "", std::move(t));
  }
  sqlite3_finalize(stmt);
  return out;
}

int64_t SqliteStore::Count() {
  std::lock_guard<std::mutex> lock(mu_);
  if (count_ < 0) count_ = CountLocked();
  return count_;
}

int64_t SqliteStore::CountRows() {
  std::lock_guard<std::mutex> lock(mu_);
  return CountLocked();
}

absl::StatusOr<int64_t> SqliteStore::PublishCalibration(const std::string& file_json,
                                                        const std::string& created_by) {
  std::lock_guard<std::mutex> lock(mu_);
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "INSERT INTO calibrations (created_at_unix_s, created_by, file) "
                         "VALUES (?1, ?2, ?3)",
                         -1, &stmt, nullptr) != SQLITE_OK) {
    return absl::InternalError(absl::StrCat("measurement store: ", sqlite3_errmsg(db_)));
  }
  sqlite3_bind_int64(stmt, 1, absl::ToUnixSeconds(busy_.clock->Now()));
  sqlite3_bind_text(stmt, 2, created_by.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 3, file_json.c_str(), -1, SQLITE_TRANSIENT);
  const bool done = sqlite3_step(stmt) == SQLITE_DONE;
  sqlite3_finalize(stmt);
  if (!done) return absl::InternalError(absl::StrCat("measurement store: ", sqlite3_errmsg(db_)));
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
}

std::optional<StoredCalibration> SqliteStore::LatestCalibration() {
  std::lock_guard<std::mutex> lock(mu_);
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "SELECT version, file, created_by FROM calibrations "
                         "ORDER BY version DESC LIMIT 1",
                         -1, &stmt, nullptr) != SQLITE_OK) {
    return std::nullopt;
  }
  std::optional<StoredCalibration> out;
  if (sqlite3_step(stmt) == SQLITE_ROW) {
    StoredCalibration s;
    s.version = sqlite3_column_int64(stmt, 0);
    const char* file = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1));
    const char* by = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 2));
    s.file_json = file ? file : "";
    s.created_by = by ? by : "";
    out = std::move(s);
  }
  sqlite3_finalize(stmt);
  return out;
}

void SqliteStore::ForEach(
    const std::function<void(const std::string&, const v1::GemmTiming&)>& gemm,
    const std::function<void(const std::string&, const v1::LayerTiming&)>& layer) {
  // Read under the lock, hand out after it: the callbacks may store into another store.
  std::vector<std::pair<std::string, v1::GemmTiming>> gemms;
  std::vector<std::pair<std::string, v1::LayerTiming>> layers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto read = [&](const char* sql, auto& out) {
      sqlite3_stmt* stmt = nullptr;
      if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) return;
      while (sqlite3_step(stmt) == SQLITE_ROW) {
        typename std::decay_t<decltype(out)>::value_type::second_type t;
        const char* kind = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
        if (t.ParseFromArray(sqlite3_column_blob(stmt, 1), sqlite3_column_bytes(stmt, 1))) {
          out.emplace_back(kind ? kind : "", std::move(t));
        }
      }
      sqlite3_finalize(stmt);
    };
    read("SELECT kind, timing FROM results ORDER BY rowid", gemms);
    read("SELECT kind, timing FROM layer_results ORDER BY rowid", layers);
  }
  for (const auto& [kind, t] : gemms) gemm(kind, t);
  for (const auto& [kind, t] : layers) layer(kind, t);
}

}  // namespace wavecrest
