#include <netdb.h>

#include <set>

#include "absl/strings/str_cat.h"
#include "server/worker_pool.h"
#include "service/log.h"

// The worker pool's DNS discovery (server/worker_pool.h, WorkerPoolOptions::discover): the
// addresses a name resolves to, and the workers added or retired as they come and go.
namespace wavecrest {

absl::StatusOr<std::vector<std::string>> ResolveWorkers(const std::string& name_port) {
  const size_t colon = name_port.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--worker_dns: \"", name_port, "\" is not NAME:PORT"));
  }
  const std::string host = name_port.substr(0, colon), port = name_port.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat("--worker_dns ", name_port, ": ", gai_strerror(rc)));
  }
  std::set<std::string> out;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char ip[NI_MAXHOST];
    if (getnameinfo(a->ai_addr, a->ai_addrlen, ip, sizeof(ip), nullptr, 0, NI_NUMERICHOST) != 0) {
      continue;
    }
    out.insert(a->ai_family == AF_INET6 ? absl::StrCat("[", ip, "]:", port)
                                        : absl::StrCat(ip, ":", port));
  }
  freeaddrinfo(found);
  return std::vector<std::string>(out.begin(), out.end());
}

void WorkerPool::Discover() {
  const auto resolve = options_.resolve ? options_.resolve : ResolveWorkers;
  absl::StatusOr<std::vector<std::string>> found = resolve(options_.discover);
  std::lock_guard<std::mutex> lock(mu_);
  next_discovery_ = clock_->Now() + options_.discover_every;
  if (!found.ok()) {
    // A name that does not resolve right now (no worker pod yet) retires nobody.
    LogWarning("worker discovery failed", {{"error", std::string(found.status().message())}});
    return;
  }
  const std::set<std::string> now(found->begin(), found->end());
  for (const std::string& address : Rediscover(workers_, now)) {
    auto w = NewWorker();
    w->id = absl::StrCat("dns:", address);
    w->address = address;
    w->discovered = true;
    if (metrics_) metrics_->AddWorker(w->id, RestartReasons());
    LogInfo("worker discovered", {{"worker", w->id}, {"name", options_.discover}});
    Connect(*w);
    workers_.push_back(std::move(w));
  }
}

}  // namespace wavecrest
