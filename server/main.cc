// wavecrest-server: the Advisor gRPC service.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "server/http_routes.h"
#include "server/measurement_store.h"
#include "server/server.h"
#include "server/worker_setup.h"
#include "service/env_flags.h"
#include "service/log.h"

ABSL_FLAG(std::string, log_level, "info",
          "Lowest level logged: debug, info, warning or error. Every flag can also be set as "
          "WAVECREST_<FLAG> in the environment (the command line wins)");
ABSL_FLAG(int, log_flush_ms, 100,
          "Info and debug log lines (the access log) wait up to this long and are written "
          "together; warnings and errors go out at once, after them. 0 = write every line at once");
ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "gRPC address to listen on (host:port; port 0 picks a free port, see --port_file)");
ABSL_FLAG(std::string, http_listen, "",
          "HTTP/JSON gateway and dashboard address (e.g. 127.0.0.1:8080; port 0 picks one); empty "
          "= none. The API's routes are the Advisor's RPCs (listed above, and in answer to a "
          "request for another /v1/ path); the dashboard at /");
ABSL_FLAG(std::string, http_static_dir, "",
          "The dashboard's built files (web/dist) served at / by --http_listen; empty = none");
ABSL_FLAG(std::string, http_models_dir, "",
          "Example model specs the dashboard offers (examples/models); empty = none");
ABSL_FLAG(std::string, http_allowed_origins, "",
          "Origins (scheme://host[:port]) other than the gateway's own whose pages may call the "
          "HTTP API, comma-separated; empty = same-origin only (no CORS)");
ABSL_FLAG(std::string, http_allowed_hosts, "",
          "Host header names the HTTP gateway answers to (stops DNS rebinding), comma-separated; "
          "empty = localhost, 127.0.0.1, ::1 and the --http_listen host (any when it is a "
          "wildcard such as 0.0.0.0)");
ABSL_FLAG(int, http_threads, 128,
          "HTTP connections served at once (one thread each; a stream holds one)");
ABSL_FLAG(int, http_request_timeout_ms, 10000,
          "HTTP: longest wait for a request's whole body (408); a body also keeps up 16 KiB/s "
          "after its first second");
ABSL_FLAG(int, http_io_timeout_ms, 2000,
          "HTTP: longest wait for a request's headers, and for each read and write (slow "
          "clients are dropped)");
ABSL_FLAG(bool, http_allow_plaintext, false,
          "Serve --http_listen in plain HTTP although gRPC uses TLS (for a TLS-terminating proxy "
          "in front of it); refused with --tls_client_ca, which HTTP cannot check");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464",
          "Prometheus /metrics address (host:port; port 0 picks one); empty disables it");
ABSL_FLAG(std::string, store, "",
          "Where measurements live: a SQLite file (created if missing; a corrupt one is moved "
          "aside), or postgresql://user@host:5432/db, one database every replica shares (each GEMM "
          "measured once across them, calibrations versioned there; the password from "
          "$PGPASSWORD or ~/.pgpass rather than the URI). Empty: no store (nothing is kept "
          "between runs)");
ABSL_FLAG(std::string, cache, "",
          "Deprecated alias of --store FILE, kept for one release (it warns): give --store");
ABSL_FLAG(int, store_timeout_ms, 2000,
          "PostgreSQL store: the longest any one store operation may take (waiting for a pooled "
          "connection included); past it the operation fails, and when a quick probe finds the "
          "database silent too (a slow query alone is not an outage) the store counts as down, "
          "answers go on without it, and it is tried again every second. A database unreachable "
          "at start is waited for the same way: the server starts and serves without it");
ABSL_FLAG(std::string, store_spool, "",
          "PostgreSQL store: a SQLite file where results wait while the database is unreachable, "
          "copied into it when it is back (empty = $XDG_CACHE_HOME or ~/.cache/wavecrest/"
          "spool-<hash of the URI>.db; \"none\" = no spool: such results are lost and the "
          "answers say so)");
ABSL_FLAG(double, store_poll_s, 30,
          "With a shared store: how often to look for a calibration another replica refitted");
ABSL_FLAG(std::string, port_file, "",
          "Write {\"grpc\": PORT, \"metrics\": PORT} here once listening (for scripts and tests)");
ABSL_FLAG(int, threads, 0, "Threads running TimeGemms and Recommend jobs; 0 = number of CPUs");
ABSL_FLAG(int, queue_capacity, 64,
          "Jobs that may wait for a thread; more are refused with RESOURCE_EXHAUSTED");
ABSL_FLAG(int, max_request_bytes, 4 << 20, "Largest request message accepted, bytes");
ABSL_FLAG(double, shutdown_grace_s, 20,
          "On SIGTERM/SIGINT: seconds in-flight work may take to finish before it is cancelled");
ABSL_FLAG(std::string, workers, "none",
          "Local GPU workers to start and supervise: 'auto' (one wavecrest-worker per visible GPU; "
          "with no GPU, one worker emulating --emulate with the analytic model, every answer "
          "PREDICTED), a number N, or 'none'");
ABSL_FLAG(std::string, worker_address, "",
          "Remote wavecrest-worker addresses to use as well (host:port, comma-separated); they "
          "are heartbeated and reconnected, not restarted");
ABSL_FLAG(std::string, worker_dns, "",
          "Remote workers found by DNS: NAME:PORT (in Kubernetes the workers' headless Service, "
          "wavecrest-worker.NAMESPACE.svc:50061); every address it resolves to is a worker, "
          "added when it appears and retired when it goes, re-resolved every "
          "--worker_dns_interval_s");
ABSL_FLAG(double, worker_dns_interval_s, 10, "How often --worker_dns is resolved again");
ABSL_FLAG(std::string, worker_binary, "", "Path of wavecrest-worker; empty = next to this binary");
ABSL_FLAG(std::string, emulate, "h100-sxm",
          "GPU kind an emulating (analytic) worker stands in for when there is no GPU");
ABSL_FLAG(std::string, worker_backend, "",
          "Force the backend of local workers: 'analytic' or 'cublaslt'; empty = by hardware");
ABSL_FLAG(std::string, worker_extra_args, "",
          "Testing only: space-separated extra arguments for each local worker");
ABSL_FLAG(double, worker_job_timeout_s, 60,
          "Watchdog: a worker that takes longer than this for one GEMM is killed and restarted");
ABSL_FLAG(std::string, worker_socket_dir, "",
          "Directory for local workers' unix sockets; empty = a private temporary directory");

ABSL_FLAG(std::string, calibration, "",
          "A calibration file (wavecrest calibrate --out) to use over the built-in one");
ABSL_FLAG(int64_t, self_calibrate_min_rows, 64,
          "Refit a device kind's cost model from the measurement store's GPU measurements at start "
          "when it has at least this many for a dtype; 0 = never at start (the Recalibrate RPC "
          "still can)");

ABSL_FLAG(std::string, tls_cert, "", "TLS: this server's certificate chain (PEM); with --tls_key");
ABSL_FLAG(std::string, tls_key, "", "TLS: this server's private key (PEM)");
ABSL_FLAG(std::string, tls_client_ca, "",
          "Mutual TLS: clients must present a certificate this CA (PEM) signed");
ABSL_FLAG(std::string, auth_tokens_file, "",
          "Bearer tokens, one \"<token> <role>\" per line (role client or admin); every call "
          "then needs one (the health service stays open). Empty = no authentication");
ABSL_FLAG(std::string, worker_tls_ca, "",
          "TLS to remote workers: the CA (PEM) that signed their certificates");
ABSL_FLAG(std::string, worker_tls_cert, "",
          "Mutual TLS to remote workers: this server's client certificate (PEM)");
ABSL_FLAG(std::string, worker_tls_key, "", "Mutual TLS to remote workers: its private key (PEM)");
ABSL_FLAG(std::string, metrics_auth_file, "",
          "A file holding \"user:password\" that /metrics then requires (HTTP basic auth)");
ABSL_FLAG(double, quarantine_s, 3600,
          "A GEMM that stopped a worker twice is not sent to workers for this long after its last "
          "crash (0 = until ClearQuarantine)");
ABSL_FLAG(int, max_streams, 256,
          "Streaming calls (TimeGemms, Recommend, ExportMeasurements) open at once; 0 = no limit");
ABSL_FLAG(int, max_streams_per_client, 64,
          "Streaming calls one client address may have open at once; 0 = no limit");

// `wavecrest-server copy-store FROM TO`: moves a store (a SQLite file into PostgreSQL, or back).
int CopyStoreCommand(const std::vector<char*>& positional) {
  if (std::string(positional[1]) != "copy-store" || positional.size() != 4) {
    std::cerr << "wavecrest-server: unknown arguments; the one command is\n"
                 "  wavecrest-server copy-store FROM TO   (each a SQLite file or a "
                 "postgresql:// URI)\n";
    return 2;
  }
  const std::string owner = wavecrest::StoreOwner();
  wavecrest::StoreOptions direct;
  direct.spool = "none";  // a copy reports what it could not copy instead of spooling it
  auto from = wavecrest::OpenStore(positional[2], owner, direct);
  if (!from.ok()) {
    std::cerr << "wavecrest-server copy-store: FROM: " << from.status().message() << "\n";
    return 1;
  }
  auto to = wavecrest::OpenStore(positional[3], owner, direct);
  if (!to.ok()) {
    std::cerr << "wavecrest-server copy-store: TO: " << to.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<int64_t> rows = wavecrest::CopyStore(**from, **to);
  if (!rows.ok()) {
    std::cerr << "wavecrest-server copy-store: " << rows.status().message() << "\n";
    return 1;
  }
  std::cout << "copied " << *rows << " results from " << (*from)->Describe() << " to "
            << (*to)->Describe() << " (" << (*to)->Count() << " there now)\n";
  return 0;
}

// The worker flags: which workers, how they are started, found and timed out.
void WorkerOptionsFromFlags(wavecrest::ServerOptions& o) {
  o.workers = absl::GetFlag(FLAGS_workers);
  for (absl::string_view a :
       absl::StrSplit(absl::GetFlag(FLAGS_worker_address), ',', absl::SkipWhitespace())) {
    o.worker_addresses.emplace_back(a);
  }
  o.worker_dns = absl::GetFlag(FLAGS_worker_dns);
  o.worker_dns_interval = absl::Seconds(absl::GetFlag(FLAGS_worker_dns_interval_s));
  o.worker_binary = absl::GetFlag(FLAGS_worker_binary);
  o.emulate = absl::GetFlag(FLAGS_emulate);
  o.worker_backend = absl::GetFlag(FLAGS_worker_backend);
  for (absl::string_view a :
       absl::StrSplit(absl::GetFlag(FLAGS_worker_extra_args), ' ', absl::SkipWhitespace())) {
    o.worker_extra_args.emplace_back(a);
  }
  o.worker_job_timeout = absl::Seconds(absl::GetFlag(FLAGS_worker_job_timeout_s));
  o.worker_socket_dir = absl::GetFlag(FLAGS_worker_socket_dir);
}

// The server's options from its flags; an error names the flag.
absl::StatusOr<wavecrest::ServerOptions> OptionsFromFlags() {
  wavecrest::ServerOptions o;
  o.listen = absl::GetFlag(FLAGS_listen);
  o.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  o.http_listen = absl::GetFlag(FLAGS_http_listen);
  o.http_static_dir = absl::GetFlag(FLAGS_http_static_dir);
  o.http_models_dir = absl::GetFlag(FLAGS_http_models_dir);
  o.http_allowed_origins =
      absl::StrSplit(absl::GetFlag(FLAGS_http_allowed_origins), ',', absl::SkipWhitespace());
  o.http_allowed_hosts =
      absl::StrSplit(absl::GetFlag(FLAGS_http_allowed_hosts), ',', absl::SkipWhitespace());
  o.http_threads = absl::GetFlag(FLAGS_http_threads);
  o.http_request_timeout_ms = absl::GetFlag(FLAGS_http_request_timeout_ms);
  o.http_io_timeout_ms = absl::GetFlag(FLAGS_http_io_timeout_ms);
  o.http_allow_plaintext = absl::GetFlag(FLAGS_http_allow_plaintext);
  o.store = absl::GetFlag(FLAGS_store);
  if (!o.store.empty() && !absl::GetFlag(FLAGS_cache).empty()) {
    return absl::InvalidArgumentError(
        "give --store or --cache, not both (--cache FILE is the deprecated spelling of --store "
        "FILE)");
  }
  if (o.store.empty() && !absl::GetFlag(FLAGS_cache).empty()) {
    o.store = absl::GetFlag(FLAGS_cache);
    wavecrest::LogWarning("--cache is deprecated: give --store (the same file)",
                          {{"store", o.store}});
  }
  o.store_poll = absl::Seconds(absl::GetFlag(FLAGS_store_poll_s));
  o.store_options.op_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_store_timeout_ms));
  o.store_options.spool = absl::GetFlag(FLAGS_store_spool);
  // A server starts without its database (predictions, its spool) and connects when it answers.
  o.store_options.start_unavailable = true;
  if (o.store_options.op_timeout < absl::Milliseconds(50)) {
    return absl::InvalidArgumentError("--store_timeout_ms must be at least 50");
  }
  WorkerOptionsFromFlags(o);
  o.port_file = absl::GetFlag(FLAGS_port_file);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.queue_capacity = absl::GetFlag(FLAGS_queue_capacity);
  o.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  o.shutdown_grace = absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace_s));
  o.calibration_file = absl::GetFlag(FLAGS_calibration);
  o.self_calibrate_min_rows = absl::GetFlag(FLAGS_self_calibrate_min_rows);
  o.tls = {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
           absl::GetFlag(FLAGS_tls_client_ca)};
  o.auth_tokens_file = absl::GetFlag(FLAGS_auth_tokens_file);
  o.worker_tls = {absl::GetFlag(FLAGS_worker_tls_cert), absl::GetFlag(FLAGS_worker_tls_key),
                  absl::GetFlag(FLAGS_worker_tls_ca)};
  o.metrics_auth_file = absl::GetFlag(FLAGS_metrics_auth_file);
  o.quarantine_for = absl::Seconds(absl::GetFlag(FLAGS_quarantine_s));
  o.max_streams = absl::GetFlag(FLAGS_max_streams);
  o.max_streams_per_client = absl::GetFlag(FLAGS_max_streams_per_client);
  if (o.queue_capacity < 1 || o.threads < 0 || o.max_request_bytes < 1024) {
    return absl::InvalidArgumentError(
        "--queue_capacity must be >= 1, --threads >= 0, --max_request_bytes >= 1024");
  }
  return o;
}

// What --help says before the flags: the common ways to run the server, and the HTTP API's routes
// from the one route table (server/http_routes.h).
std::string UsageMessage() {
  return absl::StrCat(
      "wavecrest-server: the wavecrest Advisor gRPC service.\n\n"
      "  wavecrest-server --listen 127.0.0.1:50051 --metrics_listen 127.0.0.1:9464 \\\n"
      "                   --store ~/.cache/wavecrest/results.db\n\n"
      "  wavecrest-server --workers auto --store ~/.cache/wavecrest/results.db\n"
      "      one supervised wavecrest-worker per GPU (or one emulating worker without a GPU)\n"
      "  wavecrest-server --worker_address gpu-node-3:50061,gpu-node-4:50061\n"
      "      remote workers\n"
      "  wavecrest-server --store postgresql://wavecrest@db:5432/wavecrest \\\n"
      "                   --worker_dns wavecrest-worker.wavecrest.svc:50061\n"
      "      one replica of a fleet: a shared store, workers found by DNS\n"
      "  wavecrest-server copy-store results.db postgresql://wavecrest@db:5432/wavecrest\n"
      "      move a SQLite cache into PostgreSQL (or back)\n\n"
      "Workers that exit, hang (--worker_job_timeout_s) or miss heartbeats are killed and\n"
      "restarted with exponential backoff; a GEMM that stops a worker twice is quarantined.\n"
      "While no worker of a GPU kind is up, answers come from the cache or the analytic model\n"
      "and say so; health \"wavecrest.v1.Advisor/measure\" is NOT_SERVING.\n\n"
      "SIGTERM or SIGINT: health goes NOT_SERVING, in-flight work finishes (up to\n"
      "--shutdown_grace_s), exit 0. Logs are JSON lines on stderr.",
      "\n\nHTTP/JSON API (--http_listen): ", wavecrest::HttpRouteList(), ".");
}

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(UsageMessage());
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view path) {
    return path.find("server/") != absl::string_view::npos;
  };
  config.contains_helpshort_flags = config.contains_help_flags;
  absl::SetFlagsUsageConfig(config);
  wavecrest::SetLogComponent("server");
  // Debian builds Abseil without NDEBUG, which leaves absl::Mutex's deadlock detection on: every
  // lock (gRPC's and ours) updated a process-wide lock graph under one global mutex, 3-5% of the
  // server's CPU under load and a point of contention (perf, bench/results/profile.txt). The
  // lock order is checked by the sanitizer builds' TSan run instead.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const std::vector<char*> positional = wavecrest::ParseFlagsWithEnvironment(
      argc, argv, "wavecrest-server", "server/", [] { return absl::GetFlag(FLAGS_log_level); });
  if (positional.size() > 1) return CopyStoreCommand(positional);
  if (const int ms = absl::GetFlag(FLAGS_log_flush_ms); ms < 0 || ms > 10000) {
    std::cerr << "wavecrest-server: --log_flush_ms " << ms << " is outside [0, 10000]\n";
    return 2;
  } else {
    wavecrest::SetLogFlushInterval(absl::Milliseconds(ms));
  }

  absl::StatusOr<wavecrest::ServerOptions> o = OptionsFromFlags();
  if (!o.ok()) {
    std::cerr << "wavecrest-server: " << o.status().message() << "\n";
    return 2;
  }
  absl::Status st = wavecrest::RunServer(*o);
  if (!st.ok()) {
    wavecrest::LogError("server failed", {{"error", std::string(st.ToString())}});
    return 1;
  }
  return 0;
}
