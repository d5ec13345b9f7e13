// PgStore's life and faults: opening (or starting without the database), the connection pool,
// running a statement under its deadline, telling a slow database from a down one, and the
// background thread. The row operations are in pg_store_rows.cc.
#include "server/pg_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/pg_connection.h"
#include "server/pg_schema.h"
#include "service/log.h"

namespace wavecrest {

using pg::Int;
using pg::Ok;
using pg::Result;
using pg::SecondsText;
using pg::Statement;
using pg::Text;
using pg::TextArray;

namespace {

// Below this many rows (PostgreSQL's estimate) the entry count is counted exactly: a few
// milliseconds off the write path. Beyond it, the estimate is the count.
constexpr int64_t kExactCountBelow = 100'000;

// How long a probe after a statement's timeout may take, at most.
constexpr absl::Duration kQuickProbe = absl::Seconds(1);

}  // namespace

namespace pg {

absl::Duration BackgroundTick(const StoreOptions& options) {
  return std::min({options.probe_every, options.claim_lease / 3, absl::Milliseconds(250)});
}

absl::Duration RenewEvery(const StoreOptions& options, std::optional<absl::Duration> shortest) {
  return std::min(options.claim_lease, shortest.value_or(options.claim_lease)) / 3;
}

bool TakeIfDue(absl::Time& last, absl::Time now, absl::Duration every) {
  if (now - last < every) return false;
  last = now;
  return true;
}

}  // namespace pg

class PgStore::Lease {
 public:
  Lease(PgStore* store, pg::Connection* c) : store_(store), c_(c) {}
  Lease(Lease&& o) noexcept : store_(o.store_), c_(std::exchange(o.c_, nullptr)) {}
  ~Lease() {
    if (c_) store_->Return(c_);
  }
  pg::Connection* operator->() const { return c_; }

 private:
  PgStore* store_;
  pg::Connection* c_;
};

PgStore::PgStore(std::string uri, std::string owner, StoreOptions options)
    : uri_(std::move(uri)),
      described_(RedactUri(uri_)),
      owner_(std::move(owner)),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : &Clock::Real()),
      probe_(std::make_unique<pg::Connection>(uri_, *clock_)) {}

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

absl::StatusOr<std::unique_ptr<PgStore>> PgStore::Open(const std::string& uri,
                                                       const std::string& owner,
                                                       const StoreOptions& options) {
  std::unique_ptr<PgStore> store(new PgStore(uri, owner, options));
  // Pooled connections connect when first used (and again after a break).
  for (int i = 0; i < std::max(1, options.connections); ++i) {
    store->all_.push_back(std::make_unique<pg::Connection>(uri, *store->clock_));
    store->free_.push_back(store->all_.back().get());
  }
  // Starting is not a request: a database a few seconds slow to answer may still be waited for,
  // and a migration may wait for another replica's.
  const absl::Time now = store->clock_->Now();
  const absl::Status migrated =
      pg::Migrate(*store->probe_, store->described_,
                  now + std::max(options.op_timeout, absl::Seconds(10)), now + absl::Seconds(60));
  if (migrated.ok()) {
    store->migrated_ = true;
    store->RefreshCount();
  } else if (options.start_unavailable && absl::IsUnavailable(migrated)) {
    store->up_ = false;
    store->down_reason_ = std::string(migrated.message());
    LogWarning(
        "store unreachable at start: serving without it (predictions; results are spooled) "
        "until it answers, then migrating it",
        {{"store", store->described_}, {"reason", store->down_reason_}});
  } else {
    return migrated;
  }
  store->background_ = std::thread([s = store.get()] { s->Background(); });
  return store;
}

std::optional<PgStore::Lease> PgStore::Acquire(absl::Time deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  // The wait is counted from the store's clock's now, and waited out on the condition.
  if (!cv_.wait_for(lock, absl::ToChronoNanoseconds(deadline - clock_->Now()),
                    [&] { return !free_.empty(); })) {
    return std::nullopt;
  }
  pg::Connection* c = free_.back();
  free_.pop_back();
  return Lease(this, c);
}

void PgStore::Return(pg::Connection* c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(c);
  }
  cv_.notify_one();
}

PgStore::Outcome PgStore::Run(const Statement& s, absl::Time deadline, RunMode mode) {
  if (!up_.load()) {
    std::lock_guard<std::mutex> lock(state_mu_);
    return {nullptr, absl::StrCat("the store is unavailable (", down_reason_, ")"), true};
  }
  std::optional<Lease> c = Acquire(deadline);
  if (!c) return {nullptr, "no pooled connection was free before the store's timeout"};
  for (int attempt = 0; attempt < 2; ++attempt) {
    Result r = (*c)->Exec(s, deadline, mode == RunMode::kLongRead ? &up_ : nullptr);
    if (r) {
      std::string error = Ok(r.get()) ? "" : PQresultErrorMessage(r.get());
      return {std::move(r), std::move(error)};
    }
    // Broken: a fresh connection once (a server restart breaks every pooled one), unless the
    // deadline is spent.
    if ((*c)->timed_out() || clock_->Now() >= deadline) break;
  }
  const std::string why = (*c)->error();
  if (!up_.load()) return {nullptr, "the store went down meanwhile", true};
  if ((*c)->timed_out() && mode == RunMode::kQuick) {
    check_requested_ = true;
  } else if ((*c)->timed_out()) {
    DownUnlessAnswering(why);
  } else {
    MarkDown(why);
  }
  return {nullptr, why};
}

void PgStore::DownUnlessAnswering(const std::string& why) {
  const absl::Duration budget = std::min(options_.op_timeout, kQuickProbe);
  std::unique_lock<std::timed_mutex> lock(probe_mu_, std::defer_lock);
  // Another thread is probing: it takes the store down if the database is silent.
  if (!lock.try_lock_for(absl::ToChronoMilliseconds(budget))) return;
  if (!up_.load() || clock_->Now() - answered_ < budget) return;
  // A database that answers at once is slow, not down: the statement fails alone (a big table's
  // query, a lock), and the store stays up.
  Result r = probe_->Exec({"SELECT 1"}, clock_->Now() + budget);
  if (r && Ok(r.get())) {
    answered_ = clock_->Now();
    return;
  }
  MarkDown(absl::StrCat(why, "; a probe then had no answer either"));
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
  const absl::Duration every = pg::BackgroundTick(options_);
  while (true) {
    {
      std::unique_lock<std::mutex> lock(stop_mu_);
      if (stop_cv_.wait_for(lock, absl::ToChronoMilliseconds(every), [&] { return stop_; })) {
        return;
      }
    }
    if (up_.load()) {
      if (check_requested_.exchange(false)) {
        DownUnlessAnswering("a lookup passed its deadline");
      }
      Maintain();
    } else {
      Probe();
    }
  }
}

void PgStore::Probe() {
  std::unique_lock<std::timed_mutex> lock(probe_mu_);
  const absl::Time deadline = Deadline();
  absl::Status st;
  if (migrated_.load()) {
    const int at = pg::SchemaVersion(*probe_, deadline);
    if (at == 0) return;  // not answering (yet)
    if (at > kPgSchemaVersion) {
      st = absl::FailedPreconditionError(absl::StrFormat(
          "the database's schema is v%d, newer than this server's v%d: run a newer "
          "wavecrest-server",
          at, kPgSchemaVersion));
    }
  } else {
    // This replica started without its database: the first answer migrates it.
    st = pg::Migrate(*probe_, described_, deadline, clock_->Now() + absl::Seconds(60));
    if (absl::IsUnavailable(st)) return;
  }
  if (!st.ok()) {
    std::lock_guard<std::mutex> state(state_mu_);
    if (down_reason_ != st.message()) {
      down_reason_ = std::string(st.message());
      LogError("store: the database answers but cannot be used; staying without it",
               {{"store", described_}, {"reason", down_reason_}});
    }
    return;
  }
  answered_ = clock_->Now();
  lock.unlock();
  migrated_ = true;
  MarkUp();
  counted_ = absl::InfinitePast();  // what others stored meanwhile is counted next
}

void PgStore::Maintain() {
  SweepClaims();
  if (clock_->Now() - counted_ >= options_.count_every) RefreshCount();
  std::map<absl::Duration, std::set<std::string>> held;  // by lease
  std::set<std::string> pending;
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    for (const auto& [flight, lease] : held_) held[lease].insert(flight);
    pending = pending_release_;
  }
  // Every third of the shortest lease held (and of claim_lease, for the schema check).
  const absl::Duration every = pg::RenewEvery(
      options_, held.empty() ? std::nullopt : std::optional<absl::Duration>(held.begin()->first));
  if (!pg::TakeIfDue(maintained_, clock_->Now(), every)) return;
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

void PgStore::SweepClaims() {
  // Every lease: claims that ended a whole lease ago are no one's (their replica was killed, or
  // lost its database and gave up). A live claimer renews long before; a claim taken over is
  // replaced, not swept.
  if (!pg::TakeIfDue(swept_, clock_->Now(), options_.claim_lease)) return;
  Outcome o = Run({"DELETE FROM claims WHERE expires_at < now() - $1::double precision * "
                   "interval '1 second'",
                   {Text(SecondsText(options_.claim_lease))}},
                  Deadline());
  if (!o.ok()) {
    LogFailure("store: deleting ended claims failed", o);
    return;
  }
  const char* deleted = PQcmdTuples(o.result.get());
  if (deleted != nullptr && *deleted != '\0' && std::string(deleted) != "0") {
    LogInfo("store: deleted claims whose lease ended", {{"claims", deleted}});
  }
}

void PgStore::RefreshCount() {
  counted_ = clock_->Now();
  // PostgreSQL's own figures first (no scan): live rows by its statistics, or the planner's.
  Outcome est = Run(
      {"SELECT COALESCE(SUM(GREATEST(s.n_live_tup, c.reltuples::bigint, 0)), 0) FROM pg_class c "
       "LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid "
       "WHERE c.oid IN ('results'::regclass, 'layer_results'::regclass)"},
      Deadline());
  int64_t n = 0;
  if (!est.ok() || PQntuples(est.result.get()) != 1 ||
      !absl::SimpleAtoi(PQgetvalue(est.result.get(), 0, 0), &n)) {
    return;  // the last count stands
  }
  if (n < kExactCountBelow) {
    Outcome exact =
        Run({"SELECT (SELECT COUNT(*) FROM results) + (SELECT COUNT(*) FROM layer_results)"},
            Deadline());
    if (!exact.ok() || PQntuples(exact.result.get()) != 1 ||
        !absl::SimpleAtoi(PQgetvalue(exact.result.get(), 0, 0), &n)) {
      return;
    }
  }
  SetCount(n);
}

void PgStore::SetCount(int64_t n) {
  count_.store(n);
  std::function<void(int64_t)> cb;
  {
    std::lock_guard<std::mutex> lock(count_mu_);
    cb = on_count_;
  }
  if (cb) cb(n);
}

int PgStore::SchemaVersion() {
  Outcome o = Run({"SELECT COALESCE(MAX(version), 0) FROM wavecrest_schema"}, Deadline());
  int v = 0;
  if (o.ok() && PQntuples(o.result.get()) == 1) {
    (void)absl::SimpleAtoi(PQgetvalue(o.result.get(), 0, 0), &v);
  }
  return v;
}

// A failed operation, logged unless the store was already known to be down (MarkDown said so
// once; every operation until it is back fails the same way).
void PgStore::LogFailure(const char* what, const Outcome& o) {
  if (!o.down) LogWarning(what, {{"store", described_}, {"error", o.error}});
}

}  // namespace wavecrest
