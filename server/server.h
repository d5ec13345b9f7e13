// wavecrest-server: assembly of the Advisor service, health, reflection, metrics and (when
// configured) GPU workers and the measurement store; graceful shutdown.
#ifndef WAVECREST_SERVER_SERVER_H_
#define WAVECREST_SERVER_SERVER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/measurement_store.h"
#include "service/clock.h"
#include "service/tls.h"

namespace wavecrest {

// Health service names: "" (overall), the Advisor ("can answer"), and "can measure".
inline constexpr char kAdvisorHealthName[] = "wavecrest.v1.Advisor";
inline constexpr char kMeasureHealthName[] = "wavecrest.v1.Advisor/measure";

struct ServerOptions {
  std::string listen = "127.0.0.1:50051";
  std::string metrics_listen = "127.0.0.1:9464";  // empty = no metrics endpoint
  // The measurement store: a postgresql:// URI (shared by replicas) or a SQLite file path;
  // empty = none (server/measurement_store.h).
  std::string store;
  // Timeouts, the spool and claims of a PostgreSQL store (server/measurement_store.h).
  StoreOptions store_options;
  // How often a replica of a shared store looks for a newer calibration another replica stored.
  absl::Duration store_poll = absl::Seconds(30);
  std::string port_file;  // written once listening: {"grpc":P,"metrics":Q,"http":R}
  // The HTTP/JSON gateway and dashboard (server/http_gateway.h); empty = none.
  std::string http_listen;
  std::string http_static_dir;  // the dashboard's built files (web/dist)
  std::string http_models_dir;  // example models the dashboard offers (examples/models)
  std::vector<std::string> http_allowed_origins;  // see HttpGatewayOptions
  std::vector<std::string> http_allowed_hosts;
  int http_threads = 128;
  int http_request_timeout_ms = 10000;
  int http_io_timeout_ms = 2000;
  // Plain HTTP although gRPC has TLS (a proxy terminates TLS in front); never with a client CA.
  bool http_allow_plaintext = false;
  int threads = 0;              // job threads; 0 = number of CPUs
  int queue_capacity = 64;
  int max_request_bytes = 4 << 20;
  absl::Duration shutdown_grace = absl::Seconds(20);
  // Workers: "auto" (one local worker per GPU, or one emulating worker without a GPU), "none",
  // or a number of local workers.
  std::string workers = "none";
  std::vector<std::string> worker_addresses;   // remote workers (host:port)
  // Remote workers found by DNS (NAME:PORT, a headless Service), re-resolved every interval.
  std::string worker_dns;
  absl::Duration worker_dns_interval = absl::Seconds(10);
  std::string worker_binary;                   // wavecrest-worker; empty = next to this binary
  std::string emulate = "h100-sxm";            // kind the emulating worker predicts for
  std::string worker_backend;                  // force a backend for local workers ("analytic")
  std::vector<std::string> worker_extra_args;  // test-only: appended to each local worker
  absl::Duration worker_job_timeout = absl::Seconds(60);  // watchdog per GEMM
  std::string worker_socket_dir;                          // unix sockets; empty = a temp dir
  // A calibration file (wavecrest calibrate --out) applied over the built-in one; empty = none.
  std::string calibration_file;
  // GPU measurements in the measurement store a (kind, dtype) needs before the server refits it at
  // start (and by default for Recalibrate); 0 = never at start.
  int64_t self_calibrate_min_rows = 64;
  // TLS of the Advisor port: cert and key turn it on; ca (a client CA) makes it mutual.
  TlsFiles tls;
  // Bearer tokens ("<token> <role>" lines; server/auth.h); empty = no authentication.
  std::string auth_tokens_file;
  // TLS to remote workers: ca verifies them; cert and key are the server's client certificate.
  TlsFiles worker_tls;
  // "user:password" that /metrics requires (HTTP basic auth); empty = open.
  std::string metrics_auth_file;
  // A quarantine ends this long after the GEMM's last crash; 0 = never (until cleared).
  absl::Duration quarantine_for = absl::Hours(1);
  // Streaming calls (TimeGemms, Recommend, ExportMeasurements) at once: in all, and per client
  // address. Beyond them: RESOURCE_EXHAUSTED with a retry hint.
  int max_streams = 256;
  int max_streams_per_client = 64;
};

// Applies a calibration file (wavecrest calibrate --out) over the current catalog.
absl::Status ApplyCalibrationFile(const std::string& path);

// Whether `listen` is reachable only from this host (loopback or a unix socket).
bool LocalListen(absl::string_view listen);

// The shutdown's grace: polls `in_flight()` every 10 ms on `clock` until it is 0 or `grace` has
// passed; returns what is still in flight.
int DrainInFlight(const std::function<int()>& in_flight, absl::Duration grace, Clock& clock);

// Runs until SIGTERM or SIGINT, then shuts down gracefully: health NOT_SERVING, in-flight work
// finishes (up to shutdown_grace), exit. Returns OK on a clean shutdown. `clock` is the one clock
// every part of the server reads (the wall clock).
absl::Status RunServer(const ServerOptions& options, Clock* clock = &Clock::Real());

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_SERVER_H_
