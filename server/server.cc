#include "server/server.h"

#include <algorithm>
#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "prometheus/exposer.h"
#include "server/advisor_service.h"
#include "server/auth.h"
#include "server/http_gateway.h"
#include "server/job_queue.h"
#include "server/metrics.h"
#include "server/memory_release.h"
#include "server/process_metrics.h"
#include "server/self_calibration.h"
#include "server/timing_service.h"
#include "server/worker_setup.h"
#include "service/log.h"

namespace wavecrest {

namespace {

// A builder option that removes one plugin (by name) from the builder's list.
class WithoutPlugin : public grpc::ServerBuilderOption {
 public:
  explicit WithoutPlugin(std::string name) : name_(std::move(name)) {}
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [&](const auto& p) { return p->name() == name_; }),
                   plugins->end());
  }

 private:
  std::string name_;
};

}  // namespace

bool LocalListen(absl::string_view listen) {
  return absl::StartsWith(listen, "127.") || absl::StartsWith(listen, "localhost:") ||
         absl::StartsWith(listen, "[::1]:") || absl::StartsWith(listen, "unix:");
}

absl::Status ApplyCalibrationFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return absl::NotFoundError(absl::StrCat("--calibration ", path, ": cannot open"));
  absl::StatusOr<CalibrationFile> file = ParseCalibration(text.str());
  if (!file.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--calibration ", path, ": ", file.status().message()));
  }
  std::vector<GpuSpec> catalog = GpuCatalog();
  if (absl::Status st = ApplyCalibration(*file, catalog); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--calibration ", path, ": ", st.message()));
  }
  PublishCatalog(std::move(catalog));
  LogInfo("calibration loaded",
          {{"path", path}, {"entries", file->entries.size()}, {"created", file->created}});
  return absl::OkStatus();
}

namespace {

// Adopts the shared store's newest calibration every `every` (another replica's refit), until
// destroyed.
class CalibrationPoller {
 public:
  CalibrationPoller(SelfCalibration* calibration, absl::Duration every)
      : thread_([this, calibration, every] {
          std::unique_lock<std::mutex> lock(mu_);
          while (!cv_.wait_for(lock, absl::ToChronoNanoseconds(every), [&] { return stop_; })) {
            lock.unlock();
            calibration->Adopt();
            lock.lock();
          }
        }) {}
  ~CalibrationPoller() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: it starts once the members above exist
};

}  // namespace

namespace {

// The tokens file, and warnings for what would cross the network in the clear.
absl::StatusOr<Auth> LoadAuth(const ServerOptions& options) {
  Auth auth;
  if (!options.auth_tokens_file.empty()) {
    absl::StatusOr<Auth> a = Auth::FromTokensFile(options.auth_tokens_file);
    if (!a.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--auth_tokens_file ", a.status().message()));
    }
    auth = std::move(*a);
  }
  const bool tls = !options.tls.cert.empty();
  if (!LocalListen(options.listen) && !tls) {
    LogWarning(
        "listening beyond this host without TLS: requests, answers and any tokens cross "
        "the network in the clear; give --tls_cert and --tls_key",
        {{"listen", options.listen}});
  }
  if (auth.enabled() && !tls && !LocalListen(options.listen)) {
    LogWarning("bearer tokens without TLS can be read on the network", {});
  }
  return auth;
}

// The Prometheus endpoint (none when --metrics_listen is empty), with its basic auth.
struct MetricsEndpoint {
  // Outlives the exposer, which holds it weakly.
  std::shared_ptr<ProcessMetrics> process = std::make_shared<ProcessMetrics>();
  std::unique_ptr<prometheus::Exposer> exposer;
  int port = 0;
};

absl::Status StartMetrics(const ServerOptions& options, Metrics& metrics, MetricsEndpoint& out) {
  if (options.metrics_listen.empty()) return absl::OkStatus();
  try {
    out.exposer = std::make_unique<prometheus::Exposer>(options.metrics_listen);
  } catch (const std::exception& e) {
    // civetweb says "null context when constructing CivetServer": it could not bind.
    return absl::UnavailableError(absl::StrCat(
        "--metrics_listen ", options.metrics_listen,
        ": cannot listen (is another process on that port? pick another, or :0 for any)"));
  }
  if (!options.metrics_auth_file.empty()) {
    absl::StatusOr<std::string> secret = ReadSecretFile(options.metrics_auth_file);
    if (!secret.ok()) return secret.status();
    const std::string expected(absl::StripAsciiWhitespace(*secret));
    if (expected.find(':') == std::string::npos) {
      return absl::InvalidArgumentError("--metrics_auth_file: expected \"user:password\"");
    }
    out.exposer->RegisterAuth([expected](const std::string& user, const std::string& password) {
      return absl::StrCat(user, ":", password) == expected;
    });
  }
  out.exposer->RegisterCollectable(metrics.registry());
  out.exposer->RegisterCollectable(out.process);
  auto ports = out.exposer->GetListeningPorts();
  if (!ports.empty()) out.port = ports.front();
  return absl::OkStatus();
}

// The calibration refit from the store's measurements, and the poller that adopts the fleet's.
struct Calibration {
  std::unique_ptr<SelfCalibration> self;
  std::unique_ptr<CalibrationPoller> poller;
};

Calibration StartCalibration(const ServerOptions& options, MeasurementStore* store,
                             Clock* clock) {
  Calibration c;
  if (store == nullptr) return c;
  SelfCalibrationOptions sc;
  sc.min_rows = options.self_calibrate_min_rows;
  c.self = std::make_unique<SelfCalibration>(store, sc, StoreOwner(), clock);
  // Before answering anything: a replica of a shared store answers from the fleet's newest
  // refit; otherwise (or when there is none yet) it refits from the measurements it sees.
  const bool adopted = store->Shared() && c.self->Adopt();
  if (!adopted && options.self_calibrate_min_rows > 0) c.self->Run("", 0);
  if (store->Shared() && options.store_poll > absl::ZeroDuration()) {
    c.poller = std::make_unique<CalibrationPoller>(c.self.get(), options.store_poll);
  }
  return c;
}

// The gRPC server: its port, reflection (off with tokens), message limits and keepalive. On failure, why it could not listen.
absl::StatusOr<std::unique_ptr<grpc::Server>> BuildGrpcServer(
    const ServerOptions& options, const std::shared_ptr<grpc::ServerCredentials>& credentials,
    bool tokens, AdvisorService& service, int* grpc_port) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // Reflection has no token check of its own: with tokens on it is left out (it would describe the
  // API to anyone who can reach the port). Linking it registers it for every builder, so the
  // builder's plugin list drops it.
  if (tokens) {
    builder.SetOption(std::make_unique<WithoutPlugin>("proto_server_reflection"));
    LogInfo("gRPC reflection is off: --auth_tokens_file is set and reflection cannot check tokens",
            {});
  }
  builder.AddListeningPort(options.listen, credentials, grpc_port);
  // gRPC sets SO_REUSEPORT by default: a second server on a served port would then start and
  // silently take a share of the traffic. Refuse instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(options.max_request_bytes);
  // Long-lived orchestration channels: accept client pings every 10 s even without calls, and
  // ping idle clients every 60 s so that dead peers are noticed.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server && *grpc_port != 0) return server;
  if (!options.tls.cert.empty()) {
    return absl::UnavailableError(absl::StrCat(
        "--listen ", options.listen,
        ": cannot listen: another server holds the port, or gRPC refused the TLS files (does "
        "--tls_key ", options.tls.key, " belong to --tls_cert ", options.tls.cert,
        "? gRPC's own reason is in the log lines above)"));
  }
  return absl::UnavailableError(absl::StrCat(
      "--listen ", options.listen,
      ": cannot listen (is another server on that port? the address is not shared)"));
}

// The HTTP gateway (none without --http_listen). It calls the service in-process, so HTTP
// callers get the same validation, authentication, limits and metrics as gRPC ones.
absl::StatusOr<std::unique_ptr<HttpGateway>> StartGateway(const ServerOptions& options,
                                                          grpc::Server& server, Auth& auth,
                                                          Metrics& metrics) {
  if (options.http_listen.empty()) return std::unique_ptr<HttpGateway>();
  // One posture for both ports: the gateway speaks plain HTTP and cannot check a client
  // certificate, so it does not run beside mutual TLS, nor beside TLS unless asked.
  if (!options.tls.ca.empty()) {
    return absl::FailedPreconditionError(
        "--http_listen with --tls_client_ca: the HTTP gateway cannot check client certificates, "
        "so it would open the API without them; drop --http_listen, or serve HTTP through a "
        "proxy that verifies client certificates and talks gRPC to this server");
  }
  if (!options.tls.cert.empty() && !options.http_allow_plaintext) {
    return absl::FailedPreconditionError(
        "--http_listen with --tls_cert: gRPC is encrypted but the HTTP gateway is plain HTTP "
        "(tokens and models would cross the network in the clear); put a TLS-terminating "
        "proxy in front of it and pass --http_allow_plaintext, or drop --http_listen");
  }
  HttpGatewayOptions g;
  g.listen = options.http_listen;
  g.static_dir = options.http_static_dir;
  g.models_dir = options.http_models_dir;
  g.auth = &auth;
  g.allowed_origins = options.http_allowed_origins;
  g.allowed_hosts = options.http_allowed_hosts;
  g.threads = options.http_threads;
  g.request_timeout_ms = options.http_request_timeout_ms;
  g.io_timeout_ms = options.http_io_timeout_ms;
  g.max_body_bytes = options.max_request_bytes;
  absl::StatusOr<std::unique_ptr<HttpGateway>> started =
      HttpGateway::Start(g, server.InProcessChannel(grpc::ChannelArguments()), &metrics);
  if (started.ok() && !LocalListen(options.http_listen)) {
    LogWarning(
        "the HTTP gateway listens beyond loopback without TLS: put it behind a "
        "TLS-terminating proxy or ingress",
        {{"http_listen", options.http_listen}});
  }
  return started;
}

void WritePortFile(const std::string& path, int grpc_port, int metrics_port, int http_port) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << "{\"grpc\": " << grpc_port << ", \"metrics\": " << metrics_port
                     << ", \"http\": " << http_port << "}\n";
  std::rename(tmp.c_str(), path.c_str());
}

// The ports, in the port file and the log.
void Announce(const ServerOptions& options, int grpc_port, int metrics_port, int http_port,
              int threads) {
  WritePortFile(options.port_file, grpc_port, metrics_port, http_port);
  LogInfo("listening", {{"grpc_port", grpc_port},
                        {"metrics_port", metrics_port},
                        {"http_port", http_port},
                        {"queue_capacity", options.queue_capacity},
                        {"threads", threads}});
}

void SetServing(grpc::HealthCheckServiceInterface* health, bool serving) {
  health->SetServingStatus(serving);
  health->SetServingStatus(kAdvisorHealthName, serving);
  if (!serving) health->SetServingStatus(kMeasureHealthName, false);
}

// Blocks the shutdown signals in every thread (threads started later inherit the mask); the
// main thread waits for them with sigwait.
sigset_t BlockShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// What RunServer runs, stopped in order by ShutDown.
struct Running {
  AdvisorService* service;
  grpc::Server* server;
  std::unique_ptr<HttpGateway>* gateway;
  JobQueue* jobs;
  Calibration* calibration;
  WorkerSetup* workers;
  grpc::HealthCheckServiceInterface* health;
};

// The graceful end after signal `sig`. New calls now get UNAVAILABLE (retryable); calls in
// flight, queued ones included, run to completion up to the grace period. Only then does gRPC
// shut down (cancelling what is left, which the jobs see and stop on), then the gateway, the job
// queue, the calibration poller and the workers.
void ShutDown(int sig, const ServerOptions& options, Clock& clock, const Running& r) {
  LogInfo("shutting down",
          {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"},
           {"grace_s", absl::StrCat(absl::ToDoubleSeconds(options.shutdown_grace))}});
  r.workers->StopHealthUpdates();
  SetServing(r.health, false);
  r.service->StartDraining();
  const int left =
      DrainInFlight([&] { return r.service->in_flight(); }, options.shutdown_grace, clock);
  LogInfo("drained", {{"in_flight", left}});
  r.server->Shutdown(absl::ToChronoTime(clock.Now() + absl::Seconds(1)));
  r.gateway->reset();  // after gRPC: the gateway's streams end when their calls are cancelled
  r.jobs->WaitIdle(clock.Now() + absl::Seconds(5));
  r.calibration->poller.reset();
  r.workers->Stop();
  LogInfo("stopped");
}

}  // namespace

int DrainInFlight(const std::function<int()>& in_flight, absl::Duration grace, Clock& clock) {
  const absl::Time grace_end = clock.Now() + grace;
  while (in_flight() > 0 && clock.Now() < grace_end) clock.SleepFor(absl::Milliseconds(10));
  return in_flight();
}

absl::Status RunServer(const ServerOptions& options, Clock* clock) {
  const sigset_t signals = BlockShutdownSignals();

  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      ServerCredentialsFor(options.tls);
  if (!credentials.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--tls_*: ", credentials.status().message()));
  }
  absl::StatusOr<Auth> auth = LoadAuth(options);
  if (!auth.ok()) return auth.status();
  Metrics metrics;
  MetricsEndpoint endpoint;
  if (absl::Status st = StartMetrics(options, metrics, endpoint); !st.ok()) return st;
  // What a burst of requests freed goes back to the OS within seconds (server/memory_release.h).
  MemoryReleaser memory(absl::Seconds(5), int64_t{64} << 20);
  if (!options.calibration_file.empty()) {
    if (absl::Status st = ApplyCalibrationFile(options.calibration_file); !st.ok()) return st;
  }
  absl::StatusOr<std::unique_ptr<WorkerSetup>> workers = StartWorkers(options, &metrics, clock);
  if (!workers.ok()) return workers.status();
  Calibration calibration = StartCalibration(options, (*workers)->store(), clock);

  const int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  JobQueue jobs(std::max(threads, 1), options.queue_capacity, clock);
  metrics.SetQueue(0, options.queue_capacity);
  TimingService timing((*workers)->workers(), (*workers)->store(), &metrics, clock);
  AdvisorService service(&timing, &jobs, &metrics, (*workers)->workers(),
                         calibration.self.get(), (*workers)->store(), &*auth, clock);
  service.SetStreamLimits(options.max_streams, options.max_streams_per_client);
  service.SetModelsDir(options.http_models_dir);
  service.SetMaxRequestBytes(options.max_request_bytes);

  int grpc_port = 0;
  absl::StatusOr<std::unique_ptr<grpc::Server>> server =
      BuildGrpcServer(options, *credentials, auth->enabled(), service, &grpc_port);
  if (!server.ok()) return server.status();
  absl::StatusOr<std::unique_ptr<HttpGateway>> gateway =
      StartGateway(options, **server, *auth, metrics);
  if (!gateway.ok()) {
    (*server)->Shutdown();
    return gateway.status();
  }
  const int http_port = *gateway ? (*gateway)->port() : 0;

  grpc::HealthCheckServiceInterface* health = (*server)->GetHealthCheckService();
  SetServing(health, true);
  (*workers)->SetHealth(health, kMeasureHealthName);
  Announce(options, grpc_port, endpoint.port, http_port, threads);

  int sig = 0;
  sigwait(&signals, &sig);
  ShutDown(sig, options, *clock,
           {&service, server->get(), &*gateway, &jobs, &calibration, workers->get(), health});
  return absl::OkStatus();
}

}  // namespace wavecrest
