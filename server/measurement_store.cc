#include "server/measurement_store.h"

#include <cstdlib>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_cat.h"
#include "server/sqlite_store.h"
#include "server/spooled_store.h"
#if WAVECREST_WITH_POSTGRES
#include "server/pg_store.h"
#endif

namespace wavecrest {

bool IsPostgresUri(absl::string_view spec) {
  return absl::StartsWith(spec, "postgresql://") || absl::StartsWith(spec, "postgres://");
}

std::string RedactUri(absl::string_view uri) {
  std::string out(uri);
  // scheme://user:password@host...
  const size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const size_t at = out.find('@', scheme + 3);
    const size_t slash = out.find('/', scheme + 3);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      const size_t colon = out.find(':', scheme + 3);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // ...?password=secret&...
  for (size_t p = out.find("password="); p != std::string::npos;
       p = out.find("password=", p + 1)) {
    const size_t end = out.find('&', p);
    out.replace(p + 9, (end == std::string::npos ? out.size() : end) - p - 9, "***");
  }
  return out;
}

absl::StatusOr<int64_t> CopyStore(MeasurementStore& from, MeasurementStore& to) {
  int64_t rows = 0, failed = 0;
  from.ForEach(
      [&](const std::string& kind, const v1::GemmTiming& t) {
        ++(to.Store(kind, t) == StoreOutcome::kStored ? rows : failed);
      },
      [&](const std::string& kind, const v1::LayerTiming& t) {
        ++(to.StoreLayer(kind, t) == StoreOutcome::kStored ? rows : failed);
      });
  if (failed > 0) {
    return absl::UnavailableError(absl::StrCat(failed, " of ", rows + failed,
                                               " results could not be copied (the log says why)"));
  }
  if (std::optional<StoredCalibration> c = from.LatestCalibration()) {
    absl::StatusOr<int64_t> v = to.PublishCalibration(c->file_json, c->created_by);
    if (!v.ok()) return v.status();
  }
  return rows;
}

std::string DefaultSpoolPath(absl::string_view store_uri) {
  std::filesystem::path dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg) {
    dir = xdg;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home) {
    dir = std::filesystem::path(home) / ".cache";
  } else {
    std::error_code ec;
    dir = std::filesystem::temp_directory_path(ec);
  }
  // FNV-1a of the redacted URI: stable across runs and builds (absl::Hash is not).
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : RedactUri(store_uri)) h = (h ^ c) * 1099511628211ULL;
  return (dir / "wavecrest" / absl::StrFormat("spool-%016x.db", h)).string();
}

absl::StatusOr<std::unique_ptr<MeasurementStore>> OpenStore(const std::string& spec,
                                                            const std::string& owner,
                                                            const StoreOptions& options) {
  if (IsPostgresUri(spec)) {
#if WAVECREST_WITH_POSTGRES
    absl::StatusOr<std::unique_ptr<PgStore>> pg = PgStore::Open(spec, owner, options);
    if (!pg.ok()) return pg.status();
    if (options.spool == "none") return std::unique_ptr<MeasurementStore>(std::move(*pg));
    const std::string path = options.spool.empty() ? DefaultSpoolPath(spec) : options.spool;
    absl::StatusOr<std::unique_ptr<SqliteStore>> spool = SqliteStore::Open(path, *options.clock);
    if (!spool.ok()) {
      return absl::Status(spool.status().code(),
                          absl::StrCat("--store_spool ", path, ": ", spool.status().message()));
    }
    return std::unique_ptr<MeasurementStore>(
        std::make_unique<SpooledStore>(std::move(*pg), std::move(*spool), options, owner));
#else
    (void)owner;
    (void)options;
    return absl::FailedPreconditionError(
        absl::StrCat("--store ", RedactUri(spec),
                     ": this wavecrest-server was built without PostgreSQL (libpq-dev was not "
                     "found at build time); rebuild with it, or give a SQLite file path"));
#endif
  }
  absl::StatusOr<std::unique_ptr<SqliteStore>> cache = SqliteStore::Open(spec, *options.clock);
  if (!cache.ok()) return cache.status();
  return std::unique_ptr<MeasurementStore>(std::move(*cache));
}

}  // namespace wavecrest
