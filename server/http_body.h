// Request bodies for the HTTP gateway (server/http_gateway.h), read so that nobody holds the
// gateway for free: a body needs a slot, a client holds a bounded share of the slots, and a body
// pays for its slot with a minimum rate and arrives whole within its budget.
//
// civetweb 1.15 serves one connection per thread, so a body that trickles in holds a thread and
// a slot for as long as it trickles. Without a rate, 32 senders of one byte a second held every
// slot for the whole budget (every POST answered 503); with it, a body that has not sent
// min_bytes_per_s per second of its age after the grace period is refused with 408 at the next
// read (reads return at least every io timeout, server/http_gateway.cc).
#ifndef WAVECREST_SERVER_HTTP_BODY_H_
#define WAVECREST_SERVER_HTTP_BODY_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "service/clock.h"

namespace wavecrest {

struct BodyLimits {
  int slots = 32;            // bodies read at once
  int large_slots = 8;       // of them, bodies over large_body_bytes or of unknown length
  int per_client_slots = 8;  // of them, bodies from one client address
  int64_t large_body_bytes = int64_t{64} << 10;
  int64_t max_body_bytes = int64_t{4} << 20;
  absl::Duration budget = absl::Seconds(10);  // the whole body, from its first read
  // How long one read waits for a byte (civetweb's request_timeout_ms, which bounds each read and
  // write): a read that returns nothing after waiting that long timed out rather than ended.
  absl::Duration io_timeout = absl::Seconds(2);
  // The rate a body must keep up (bytes per second of its age) once `grace` has passed; a body
  // shorter than rate x age must be whole by then. 16 KiB/s: a 4 MiB body over a link ten times
  // slower than the budget allows still passes, a body held open by a trickle does not.
  absl::Duration grace = absl::Seconds(1);
  int64_t min_bytes_per_s = 16 << 10;
};

// The body slots of one gateway: taken per request, given back when the Slot goes.
class BodySlots {
 public:
  explicit BodySlots(const BodyLimits& limits) : limits_(limits) {}

  class Slot {
   public:
    Slot(Slot&& o) noexcept;
    Slot& operator=(Slot&&) = delete;
    ~Slot();

   private:
    friend class BodySlots;
    Slot(BodySlots* owner, std::string client, bool large)
        : owner_(owner), client_(std::move(client)), large_(large) {}
    BodySlots* owner_;
    std::string client_;
    bool large_;
  };

  // A slot for a body from `client` (its address without the port), `large` when it is over
  // large_body_bytes or of unknown length; nullopt when all are taken, all large ones are, or the
  // client holds its share.
  std::optional<Slot> Take(const std::string& client, bool large);

  int in_use() const;

 private:
  void Give(const std::string& client, bool large);

  const BodyLimits limits_;
  mutable std::mutex mu_;
  int all_ = 0;
  int large_ = 0;
  absl::flat_hash_map<std::string, int> by_client_;
};

// Reads a body that declared `declared` bytes (-1: unknown, chunked) through `read` (civetweb's
// mg_read: bytes read, 0 at the end, < 0 on error) into `body`. On failure, `*http_status` is
// the status to answer: 408 (budget spent, or below the minimum rate), 413 (over
// max_body_bytes) or 400 (shorter than declared).
absl::Status ReadBody(const std::function<int(char*, size_t)>& read, const BodyLimits& limits,
                      int64_t declared, Clock& clock, std::string* body, int* http_status);

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_HTTP_BODY_H_
