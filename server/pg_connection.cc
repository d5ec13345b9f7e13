#include "server/pg_connection.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"

namespace wavecrest::pg {

bool Ok(const PGresult* r) {
  const ExecStatusType s = PQresultStatus(r);
  return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

std::string Seconds(const google::protobuf::Timestamp& t) {
  return t.seconds() > 0 ? absl::StrFormat("%d.%09d", t.seconds(), t.nanos()) : "";
}

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

bool Connection::Connect(absl::Time deadline) {
  Drop();
  timed_out_ = false;
  const std::string timeout_s = absl::StrCat(std::max<int64_t>(
      1, absl::ToInt64Seconds(absl::Ceil(deadline - clock_->Now(), absl::Seconds(1)))));
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

Result Connection::Exec(const Statement& s, absl::Time deadline,
                        const std::atomic<bool>* while_true) {
  if (!ok() && !Connect(deadline)) return nullptr;
  timed_out_ = false;
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
    if (!Wait(/*write=*/true, deadline, while_true)) {
      Timeout("sending");
      return nullptr;
    }
  }
  Result last;
  while (true) {
    while (PQisBusy(conn_)) {
      if (!Wait(/*write=*/false, deadline, while_true)) {
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

bool Connection::Send(const Statement& s) {
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

bool Connection::Wait(bool write, absl::Time deadline, const std::atomic<bool>* while_true) {
  const int fd = PQsocket(conn_);
  if (fd < 0) return true;  // the next libpq call reports the error
  // Awake every 100 ms when there is a condition to watch, else every second.
  const int64_t slice_ms = while_true ? 100 : 1000;
  while (true) {
    if (while_true && !while_true->load()) return false;
    const int64_t ms = absl::ToInt64Milliseconds(deadline - clock_->Now());
    if (ms <= 0) return false;
    pollfd p{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    const int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, slice_ms)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;
  }
}

bool Connection::Fail(const char* what) {
  error_ = absl::StrCat(what, ": ",
                        conn_ ? std::string(absl::StripTrailingAsciiWhitespace(
                                    PQerrorMessage(conn_)))
                              : "out of memory");
  timed_out_ = false;
  Drop();
  return false;
}

bool Connection::Timeout(const char* what) {
  error_ = absl::StrCat(what, ": no answer within the store's timeout");
  timed_out_ = true;
  Drop();
  return false;
}

void Connection::Drop() {
  if (conn_) PQfinish(conn_);
  conn_ = nullptr;
}

}  // namespace wavecrest::pg
