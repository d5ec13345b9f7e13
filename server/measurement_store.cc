#include "server/measurement_store.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/result_cache.h"
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
  int64_t rows = 0;
  from.ForEach(
      [&](const std::string& kind, const v1::GemmTiming& t) {
        to.Store(kind, t);
        ++rows;
      },
      [&](const std::string& kind, const v1::LayerTiming& t) {
        to.StoreLayer(kind, t);
        ++rows;
      });
  if (std::optional<StoredCalibration> c = from.LatestCalibration()) {
    absl::StatusOr<int64_t> v = to.PublishCalibration(c->file_json, c->created_by);
    if (!v.ok()) return v.status();
  }
  return rows;
}

absl::StatusOr<std::unique_ptr<MeasurementStore>> OpenStore(const std::string& spec,
                                                            const std::string& owner) {
  if (IsPostgresUri(spec)) {
#if WAVECREST_WITH_POSTGRES
    absl::StatusOr<std::unique_ptr<PgStore>> pg = PgStore::Open(spec, owner);
    if (!pg.ok()) return pg.status();
    return std::unique_ptr<MeasurementStore>(std::move(*pg));
#else
    (void)owner;
    return absl::FailedPreconditionError(
        absl::StrCat("--store ", RedactUri(spec),
                     ": this wavecrest-server was built without PostgreSQL (libpq-dev was not "
                     "found at build time); rebuild with it, or give a SQLite file path"));
#endif
  }
  absl::StatusOr<std::unique_ptr<ResultCache>> cache = ResultCache::Open(spec);
  if (!cache.ok()) return cache.status();
  return std::unique_ptr<MeasurementStore>(std::move(*cache));
}

}  // namespace wavecrest
