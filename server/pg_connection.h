// One libpq connection driven asynchronously, so that every wait has a deadline, and what a
// statement is (server/pg_store.h's internals; nothing else includes this).
#ifndef WAVECREST_SERVER_PG_CONNECTION_H_
#define WAVECREST_SERVER_PG_CONNECTION_H_

#include <libpq-fe.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "google/protobuf/timestamp.pb.h"
#include "service/clock.h"

namespace wavecrest::pg {

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// One statement parameter: text, or bytes (bytea, sent in binary).
struct Param {
  std::string value;
  bool binary = false;
};
inline Param Text(std::string v) { return {std::move(v), false}; }
inline Param Int(int64_t v) { return {absl::StrCat(v), false}; }
inline Param Bytes(std::string v) { return {std::move(v), true}; }

// Whether `r` is a success (a command done, or rows).
bool Ok(const PGresult* r);

// to_timestamp()'s seconds since the epoch of `t`; "" (stored as now) for a time never set.
std::string Seconds(const google::protobuf::Timestamp& t);
// A text[] literal ({"a","b\"c"}) of `values`, for "= ANY($n::text[])".
std::string TextArray(const std::set<std::string>& values);
std::string SecondsText(absl::Duration d);

// One statement: `sql` with `params`, results in binary when `binary_results`; a `script` holds
// several statements and no parameters (a migration).
struct Statement {
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
struct Outcome {
  Result result;
  std::string error;
  bool down = false;  // not tried: the store was already known to be down (logged once then)
  bool ok() const { return result && Ok(result.get()); }
};

class Connection {
 public:
  // Deadlines are read on `clock` (the store's).
  explicit Connection(std::string uri, Clock& clock = Clock::Real())
      : uri_(std::move(uri)), clock_(&clock) {}
  ~Connection() { Drop(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  bool ok() const { return conn_ && PQstatus(conn_) == CONNECTION_OK; }
  // Why the last Connect or Exec failed; timed_out() when it was the deadline (the server may
  // be slow rather than gone), not a refusal or a broken connection.
  const std::string& error() const { return error_; }
  bool timed_out() const { return timed_out_; }

  // Connects within `deadline`; false (error() says why) otherwise.
  bool Connect(absl::Time deadline);
  // Runs `s` within `deadline` (connecting first when needed): its last result (the first
  // error, if a script fails), or null when the connection broke or the deadline passed (the
  // connection is then dropped). With `while_true`, also given up (as a timeout) as soon as
  // it reads false: a long read abandoned when its store goes down.
  Result Exec(const Statement& s, absl::Time deadline,
              const std::atomic<bool>* while_true = nullptr);

 private:
  bool Send(const Statement& s);
  // Until the socket can be read (or written) or `deadline`; false when the deadline came first.
  bool Wait(bool write, absl::Time deadline, const std::atomic<bool>* while_true = nullptr);
  bool Fail(const char* what);
  bool Timeout(const char* what);
  void Drop();

  std::string uri_;
  Clock* clock_;
  PGconn* conn_ = nullptr;
  std::string error_;
  bool timed_out_ = false;
};

}  // namespace wavecrest::pg

#endif  // WAVECREST_SERVER_PG_CONNECTION_H_
