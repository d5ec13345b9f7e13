#include "server/worker_setup.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/gpu_catalog.h"
#include "nlohmann/json.hpp"
#include "server/worker_pool.h"
#include "service/log.h"
#include "service/tls.h"

namespace wavecrest {
namespace {

class StoreOnlySetup final : public WorkerSetup {
 public:
  StoreOnlySetup(std::unique_ptr<MeasurementStore> store, Metrics* metrics)
      : store_(std::move(store)) {
    if (store_ && metrics) {
      store_->OnAvailability([metrics](bool up) { metrics->SetStoreUp(up); });
    }
  }
  ~StoreOnlySetup() override {
    if (store_) store_->OnAvailability(nullptr);
  }
  GpuWorkers* workers() override { return nullptr; }
  MeasurementStore* store() override { return store_.get(); }
  void SetHealth(grpc::HealthCheckServiceInterface* health, const char* name) override {
    health->SetServingStatus(name, false);
  }
  void StopHealthUpdates() override {}
  void Stop() override {}

 private:
  std::unique_ptr<MeasurementStore> store_;
};

class PoolSetup final : public WorkerSetup {
 public:
  PoolSetup(std::unique_ptr<MeasurementStore> store, std::unique_ptr<WorkerPool> pool,
            std::string owned_dir, Metrics* metrics)
      : store_(std::move(store)),
        pool_(std::move(pool)),
        owned_dir_(std::move(owned_dir)),
        metrics_(metrics) {}
  ~PoolSetup() override { Stop(); }
  GpuWorkers* workers() override { return pool_.get(); }
  MeasurementStore* store() override { return store_.get(); }
  // Measuring is served while a worker is up and the store (if any) answers: results measured
  // while a shared store is down would not be shared. (The pool's callback runs under its lock:
  // it passes the count rather than being asked.)
  void SetHealth(grpc::HealthCheckServiceInterface* health, const char* name) override {
    workers_up_.store(pool_->UpCount());
    auto update = [this, health, name] {
      const bool store_up = store_ == nullptr || store_->Available();
      health->SetServingStatus(name, workers_up_.load() > 0 && store_up);
    };
    update();
    pool_->OnChange([this, update](int up) {
      workers_up_.store(up);
      update();
    });
    if (store_) {
      store_->OnAvailability([this, update](bool up) {
        if (metrics_) metrics_->SetStoreUp(up);
        update();
      });
    }
  }
  void StopHealthUpdates() override {
    pool_->OnChange(nullptr);
    if (store_) store_->OnAvailability(nullptr);
  }
  void Stop() override {
    pool_->Stop();
    if (!owned_dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(owned_dir_, ec);
      owned_dir_.clear();
    }
  }

 private:
  std::unique_ptr<MeasurementStore> store_;
  std::unique_ptr<WorkerPool> pool_;
  std::string owned_dir_;
  Metrics* metrics_;
  std::atomic<int> workers_up_{0};
};

// wavecrest-worker: --worker_binary, else beside this program, else in the build tree's gpu_worker.
absl::StatusOr<std::string> FindWorkerBinary(const std::string& flag) {
  if (!flag.empty()) {
    if (access(flag.c_str(), X_OK) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("--worker_binary: ", flag, " is not an executable file"));
    }
    return flag;
  }
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::string> tried;
  for (const std::filesystem::path& p :
       {self.parent_path() / "wavecrest-worker",
        self.parent_path().parent_path() / "gpu_worker" / "wavecrest-worker"}) {
    if (access(p.c_str(), X_OK) == 0) return p.string();
    tried.push_back(p.string());
  }
  return absl::FailedPreconditionError(absl::StrCat("wavecrest-worker not found (looked at ",
                                                    absl::StrJoin(tried, ", "),
                                                    "); build it or pass --worker_binary"));
}

// The GPUs `binary devices` sees (0 without CUDA, driver or GPU; the reason in `why`).
int CountGpus(const std::string& binary, std::string* why) {
  FILE* p = popen(absl::StrCat("'", binary, "' devices 2>/dev/null").c_str(), "r");
  if (!p) {
    *why = "cannot run wavecrest-worker devices";
    return 0;
  }
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.contains("count")) {
    *why = "wavecrest-worker devices gave no answer";
    return 0;
  }
  *why = j.value("why_none", "");
  return j["count"].get<int>();
}

}  // namespace

std::string StoreOwner() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = 0;
  return absl::StrCat(host[0] ? host : "unknown-host", ":", getpid());
}

void RemoveStaleSocketDirs(Clock& clock, const std::string& dir) {
  std::error_code ec;
  const std::filesystem::path tmp =
      dir.empty() ? std::filesystem::temp_directory_path(ec) : std::filesystem::path(dir);
  if (ec) return;
  for (const auto& entry : std::filesystem::directory_iterator(tmp, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("wavecrest-workers-", 0) != 0 || !entry.is_directory(ec)) continue;
    struct stat st;
    if (stat(entry.path().c_str(), &st) != 0 || st.st_uid != getuid()) continue;
    pid_t owner = 0;
    std::ifstream(entry.path() / "server.pid") >> owner;
    // A directory whose server is gone (or that predates the pid file and is an hour old).
    const bool alive = owner > 0 && (kill(owner, 0) == 0 || errno == EPERM);
    const bool old = absl::FromUnixSeconds(st.st_mtime) < clock.Now() - absl::Hours(1);
    if (alive || (owner == 0 && !old)) continue;
    std::filesystem::remove_all(entry.path(), ec);
    if (!ec) LogInfo("removed a stale worker socket directory", {{"path", entry.path().string()}});
  }
}

namespace {

// The measurement store (none when --store is empty), its counts wired to the metrics, reading
// the server's one clock.
absl::StatusOr<std::unique_ptr<MeasurementStore>> OpenMeasurementStore(const ServerOptions& options,
                                                                       Metrics* metrics,
                                                                       Clock* clock) {
  if (options.store.empty()) return std::unique_ptr<MeasurementStore>();
  StoreOptions store_options = options.store_options;
  store_options.clock = clock;
  absl::StatusOr<std::unique_ptr<MeasurementStore>> store =
      OpenStore(options.store, StoreOwner(), store_options);
  if (!store.ok()) return store.status();
  MeasurementStore& s = **store;
  metrics->SetCacheEntries(s.Count());
  s.OnCount([metrics](int64_t n) { metrics->SetCacheEntries(n); });
  metrics->SetStoreUp(s.Available());
  s.OnBacklog([metrics](int64_t n) { metrics->SetStoreBacklog(n); });
  LogInfo("measurement store open",
          {{"store", s.Describe()}, {"entries", s.Count()}, {"shared", s.Shared()}});
  return store;
}

// The local workers' socket directory: the one given, or a fresh private one this server owns
// (`owned`, removed when it stops).
absl::StatusOr<std::string> SocketDir(const ServerOptions& options, Clock& clock,
                                      std::string* owned) {
  std::string dir = options.worker_socket_dir;
  if (dir.empty()) {
    RemoveStaleSocketDirs(clock);
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "wavecrest-workers-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) return absl::InternalError("cannot create a socket directory");
    dir = *owned = tmpl;
    // Whose directory this is, so that a later server can remove it if this one dies.
    std::ofstream(dir + "/server.pid") << getpid() << "\n";
  } else {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
  }
  // Only this user may reach the workers' sockets (mkdtemp makes 0700; a given dir is set so).
  chmod(dir.c_str(), 0700);
  return dir;
}

// The backend the local workers run: --worker_backend, or cublaslt when the worker sees a GPU.
absl::StatusOr<std::string> LocalBackend(const ServerOptions& options, int gpus,
                                         const std::string& why) {
  std::string backend = options.worker_backend;
  if (backend.empty()) backend = gpus > 0 ? "cublaslt" : "analytic";
  if (backend == "cublaslt" && gpus == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--worker_backend=cublaslt, but wavecrest-worker sees no GPU (", why,
                     "); use --worker_backend=analytic (or leave it empty) to emulate one"));
  }
  if (backend == "analytic") {
    if (absl::StatusOr<const GpuSpec*> g = FindGpu(options.emulate); !g.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--emulate: ", g.status().message()));
    }
  }
  return backend;
}

// `requested` local workers (0: one per GPU, or one emulating worker) added to `pool`.
absl::Status AddLocalWorkers(const ServerOptions& options, int requested, Clock& clock,
                             WorkerPoolOptions& pool, std::string* owned_dir) {
  absl::StatusOr<std::string> binary = FindWorkerBinary(options.worker_binary);
  if (!binary.ok()) return binary.status();
  if (!options.worker_backend.empty() && options.worker_backend != "analytic" &&
      options.worker_backend != "cublaslt") {
    return absl::InvalidArgumentError(absl::StrCat("--worker_backend: \"", options.worker_backend,
                                                   "\" is not 'analytic' or 'cublaslt'"));
  }
  std::string why;
  const int gpus = options.worker_backend == "analytic" ? 0 : CountGpus(*binary, &why);
  absl::StatusOr<std::string> backend = LocalBackend(options, gpus, why);
  if (!backend.ok()) return backend.status();
  const int count = requested > 0 ? requested : (*backend == "cublaslt" ? gpus : 1);
  absl::StatusOr<std::string> dir = SocketDir(options, clock, owned_dir);
  if (!dir.ok()) return dir.status();
  for (int i = 0; i < count; ++i) {
    WorkerPoolOptions::Local local;
    local.argv = {*binary, "--backend=" + *backend};
    if (*backend == "cublaslt") {
      local.argv.push_back(absl::StrCat("--device=", i % gpus));
    } else {
      local.argv.push_back("--emulate=" + options.emulate);
    }
    for (const std::string& a : options.worker_extra_args) local.argv.push_back(a);
    local.socket_path = absl::StrCat(*dir, "/w", i, ".sock");
    pool.local.push_back(std::move(local));
  }
  LogInfo("starting local workers", {{"count", count},
                                     {"backend", *backend},
                                     {"gpus", gpus},
                                     {"emulate", *backend == "analytic" ? options.emulate : ""},
                                     {"binary", *binary},
                                     {"socket_dir", *dir}});
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerSetup>> StartWorkers(const ServerOptions& options,
                                                          Metrics* metrics, Clock* clock) {
  absl::StatusOr<std::unique_ptr<MeasurementStore>> store =
      OpenMeasurementStore(options, metrics, clock);
  if (!store.ok()) return store.status();
  const std::string& spec = options.workers.empty() ? std::string("none") : options.workers;
  int requested = 0;  // 0 = auto
  if (spec != "auto" && spec != "none" &&
      (!absl::SimpleAtoi(spec, &requested) || requested < 1 || requested > 64)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--workers: \"", spec, "\" is not 'auto', 'none' or a number in [1, 64]"));
  }
  if (spec == "none" && options.worker_addresses.empty() && options.worker_dns.empty()) {
    return std::make_unique<StoreOnlySetup>(*std::move(store), metrics);
  }
  WorkerPoolOptions pool;
  pool.remote = options.worker_addresses;
  pool.discover = options.worker_dns;
  pool.discover_every = options.worker_dns_interval;
  pool.job_timeout = options.worker_job_timeout;
  pool.quarantine_for = options.quarantine_for;
  if (!options.worker_tls.ca.empty()) {
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> creds =
        ChannelCredentialsFor(options.worker_tls);
    if (!creds.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--worker_tls_*: ", creds.status().message()));
    }
    pool.remote_credentials = *creds;
  }
  std::string owned_dir;
  if (spec != "none") {
    if (absl::Status st = AddLocalWorkers(options, requested, *clock, pool, &owned_dir);
        !st.ok()) {
      return st;
    }
  }
  auto workers = std::make_unique<WorkerPool>(std::move(pool), metrics, clock);
  workers->Start();
  return std::make_unique<PoolSetup>(*std::move(store), std::move(workers), std::move(owned_dir),
                                     metrics);
}

}  // namespace wavecrest
