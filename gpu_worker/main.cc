// wavecrest-worker: times GEMMs on one GPU, for wavecrest-server (serve) or alone (bench).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gpu_worker/bench.h"
#include "gpu_worker/faults.h"
#include "gpu_worker/worker_service.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "service/env_flags.h"
#include "service/log.h"
#include "service/spec_io.h"
#include "service/tls.h"

ABSL_FLAG(std::string, log_level, "info",
          "Lowest level logged: debug, info, warning or error. Every flag can also be set as "
          "WAVECREST_<FLAG> in the environment (the command line wins)");
ABSL_FLAG(int, device, 0, "CUDA device index to time on (cublaslt backend)");
ABSL_FLAG(std::string, listen, "",
          "serve: address to listen on: unix:/path/to.sock, or host:port (port 0 picks one; see "
          "--port_file)");
ABSL_FLAG(std::string, port_file, "", "serve: write {\"port\": P} here once listening (TCP)");
ABSL_FLAG(std::string, tls_cert, "", "serve: TLS certificate chain of this worker (PEM)");
ABSL_FLAG(std::string, tls_key, "", "serve: its private key (PEM)");
ABSL_FLAG(std::string, tls_client_ca, "",
          "serve: accept only clients (the server) with a certificate this CA (PEM) signed");
ABSL_FLAG(std::string, backend, "cublaslt",
          "'cublaslt' (measure on the GPU; fails at start where there is none) or 'analytic' "
          "(the cost model for --emulate; every result PREDICTED)");
ABSL_FLAG(std::string, emulate, "h100-sxm", "analytic backend: the catalogued GPU to predict for");
ABSL_FLAG(std::string, request_log, "",
          "Append one JSON line per GEMM the device is asked to time (audit; tests count it)");
ABSL_FLAG(std::string, gemms, "", "bench: CSV of GEMMs, one per line: m,n,k[,batch[,layout]]");
ABSL_FLAG(std::string, model, "", "bench: a model spec (wavecrest JSON or HF config.json)");
ABSL_FLAG(std::string, dtype, "bf16",
          "bench: operand type for --gemms: bf16 fp16 tf32 fp32 fp8_e4m3");
ABSL_FLAG(std::string, json, "", "bench: write the results here as JSON ('-' = stdout)");
ABSL_FLAG(bool, layers, false,
          "bench --model: time the model's layers whole (its attention and the whole layer) "
          "instead of its GEMMs");
ABSL_FLAG(bool, autotune, false, "bench: also time the heuristic's top-k algorithms");
ABSL_FLAG(int, top_k, 8, "bench: k for --autotune");
ABSL_FLAG(bool, warm_l2, false, "bench: time with warm L2 (default: cold, inputs rotated)");
ABSL_FLAG(double, target_spread, 0.01, "bench: stop sampling below this relative spread");
ABSL_FLAG(double, max_seconds, 2.0, "bench: sampling budget per GEMM, seconds");
ABSL_FLAG(double, hot_window_s, 2.0,
          "bench: a GEMM that starts within this many seconds of the last timed one gets the hot "
          "schedule (short warm-up and minimum sampled time); 0 = every GEMM cold");
ABSL_FLAG(double, hot_warmup_s, 0.005, "bench: the hot schedule's warm-up per GEMM, seconds");
ABSL_FLAG(double, hot_min_sampled_s, 0.01,
          "bench: the hot schedule's least sampled time per GEMM, seconds");
ABSL_FLAG(std::string, samples_log, "",
          "bench: append every timed GEMM's (or layer's) raw samples here, one JSON line each; "
          "replay: the file to replay the stopping rule over");
ABSL_FLAG(std::string, fault, "", "TESTING ONLY: inject a fault: crash, hang, sticky, oom or slow");
ABSL_FLAG(std::string, fault_shape, "", "TESTING ONLY: inject only on GEMMs of this MxNxK");
ABSL_FLAG(int64_t, fault_after, 0, "TESTING ONLY: inject only after this many GEMMs");
ABSL_FLAG(int, fault_slow_ms, 500, "TESTING ONLY: --fault=slow adds this many ms per GEMM");

namespace wavecrest {
namespace {

constexpr int kExitUsage = 2;
constexpr int kExitSticky = 3;

absl::StatusOr<std::unique_ptr<TimingBackend>> MakeBackend() {
  absl::StatusOr<std::unique_ptr<TimingBackend>> b;
  const std::string backend = absl::GetFlag(FLAGS_backend);
  if (backend == "analytic") {
    b = MakeAnalyticBackend(absl::GetFlag(FLAGS_emulate));
  } else if (backend == "cublaslt") {
    b = MakeCublasLtBackend(absl::GetFlag(FLAGS_device));
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--backend: \"", backend, "\" is not 'cublaslt' or 'analytic'"));
  }
  if (!b.ok()) return b.status();
  absl::StatusOr<FaultPlan> plan =
      ParseFaultPlan(absl::GetFlag(FLAGS_fault), absl::GetFlag(FLAGS_fault_shape),
                     absl::GetFlag(FLAGS_fault_after), absl::GetFlag(FLAGS_fault_slow_ms));
  if (!plan.ok()) return plan.status();
  return WithFaults(std::move(*b), *plan);
}

int Devices() {
  std::string why;
  std::vector<CudaDeviceInfo> devices = ListCudaDevices(&why);
  nlohmann::json j = {{"count", devices.size()}, {"devices", nlohmann::json::array()}};
  if (devices.empty()) j["why_none"] = why;
  for (const CudaDeviceInfo& d : devices) {
    j["devices"].push_back(
        {{"index", d.index}, {"name", d.name}, {"catalog_name", d.catalog_name}});
  }
  std::cout << j.dump() << "\n";
  return 0;
}

// Writes a bench document (--json FILE, or '-' for stdout) and the table for people.
int WriteBench(const nlohmann::json& doc, const std::string& table, bool broken) {
  const std::string json = absl::GetFlag(FLAGS_json);
  if (json == "-") {
    std::cout << doc.dump(2) << "\n";
  } else {
    if (!json.empty()) {
      std::ofstream out(json);
      out << doc.dump(2) << "\n";
      if (!out) {
        std::cerr << "wavecrest-worker bench: cannot write " << json << "\n";
        return 1;
      }
    }
    std::cout << table;
  }
  return broken ? kExitSticky : 0;
}

// The hot schedule's flags into `params`; INVALID_ARGUMENT naming a flag out of its range.
absl::Status ReadHotSchedule(TimingParams* params) {
  params->hot_window_s = absl::GetFlag(FLAGS_hot_window_s);
  params->hot_warmup_s = absl::GetFlag(FLAGS_hot_warmup_s);
  params->hot_min_sampled_s = absl::GetFlag(FLAGS_hot_min_sampled_s);
  for (auto [name, value, most] : {std::tuple<const char*, double, double>{
                                       "hot_window_s", params->hot_window_s, 600},
                                   {"hot_warmup_s", params->hot_warmup_s, 10},
                                   {"hot_min_sampled_s", params->hot_min_sampled_s, 10}}) {
    if (!(value >= 0 && value <= most)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " ", value, " is outside [0, ", most, "]"));
    }
  }
  return absl::OkStatus();
}

// What bench times: the GEMMs of --gemms or --model, or (--layers) the model's layers.
struct BenchWork {
  bool layers = false;
  std::vector<BenchGemm> gemms;
  std::vector<LayerKey> layer_keys;
};

// --gemms FILE.csv's GEMMs in --dtype; the error names the flag.
absl::StatusOr<std::vector<BenchGemm>> ReadGemmsFlag(const std::string& csv) {
  absl::StatusOr<DType> dtype = ParseDType(absl::GetFlag(FLAGS_dtype));
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--dtype: ", dtype.status().message()));
  }
  absl::StatusOr<std::string> text = ReadFile(csv, int64_t{16} << 20);
  if (!text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--gemms: ", text.status().message()));
  }
  absl::StatusOr<std::vector<BenchGemm>> gemms = ParseGemmCsv(*text, *dtype);
  if (!gemms.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--gemms ", gemms.status().message()));
  }
  return gemms;
}

// bench's work from --gemms, --model and --layers; the error says which flag is wrong.
absl::StatusOr<BenchWork> ReadBenchWork() {
  const std::string csv = absl::GetFlag(FLAGS_gemms), model = absl::GetFlag(FLAGS_model);
  BenchWork work;
  work.layers = absl::GetFlag(FLAGS_layers);
  if (csv.empty() == model.empty()) {
    return absl::InvalidArgumentError("give exactly one of --gemms FILE.csv or --model FILE");
  }
  if (work.layers && model.empty()) {
    return absl::InvalidArgumentError("--layers times a model's layers: give --model FILE");
  }
  if (!csv.empty()) {
    absl::StatusOr<std::vector<BenchGemm>> gemms = ReadGemmsFlag(csv);
    if (!gemms.ok()) return gemms.status();
    work.gemms = *std::move(gemms);
    return work;
  }
  absl::Status read;
  if (work.layers) {
    absl::StatusOr<std::vector<LayerKey>> keys = ModelLayers(model);
    if (keys.ok()) work.layer_keys = *std::move(keys);
    read = keys.status();
  } else {
    absl::StatusOr<std::vector<BenchGemm>> gemms = ModelGemms(model);
    if (gemms.ok()) work.gemms = *std::move(gemms);
    read = gemms.status();
  }
  if (!read.ok()) return absl::InvalidArgumentError(absl::StrCat("--model ", read.message()));
  return work;
}

// bench's timing parameters from its flags (the hot schedule's included).
absl::StatusOr<TimingParams> ReadBenchParams() {
  v1::TimingOptions o;
  o.set_autotune(absl::GetFlag(FLAGS_autotune));
  o.set_autotune_top_k(absl::GetFlag(FLAGS_top_k));
  o.set_warm_l2(absl::GetFlag(FLAGS_warm_l2));
  o.set_target_relative_spread(absl::GetFlag(FLAGS_target_spread));
  o.set_max_seconds_per_gemm(absl::GetFlag(FLAGS_max_seconds));
  absl::StatusOr<TimingParams> params = ParamsFromProto(o);
  if (!params.ok()) return params.status();
  if (absl::Status st = ReadHotSchedule(&*params); !st.ok()) return st;
  return params;
}

// With --samples_log, opens it in `log` (appending) and points params->samples_sink at it.
absl::Status OpenSamplesLog(std::ofstream* log, TimingParams* params) {
  const std::string path = absl::GetFlag(FLAGS_samples_log);
  if (path.empty()) return absl::OkStatus();
  log->open(path, std::ios::app);
  if (!*log) {
    return absl::InvalidArgumentError(absl::StrCat("--samples_log ", path, ": cannot open"));
  }
  params->samples_sink = [log](absl::string_view key, const std::vector<double>& s,
                               const StoppingRule& rule, double wall, absl::string_view stopped,
                               const std::vector<int>& nvml_mhz,
                               const std::vector<int>& probe_mhz) {
    *log << SamplesLogLine(key, s, rule, wall, stopped, nvml_mhz, probe_mhz) << std::flush;
  };
  return absl::OkStatus();
}

// `bench`: times the GEMMs or layers of the flags without a server and writes what it measured.
int Bench() {
  auto usage_error = [](absl::string_view message) {
    std::cerr << "wavecrest-worker bench: " << message << "\n";
    return kExitUsage;
  };
  absl::StatusOr<BenchWork> work = ReadBenchWork();
  if (!work.ok()) return usage_error(work.status().message());
  absl::StatusOr<TimingParams> params = ReadBenchParams();
  if (!params.ok()) return usage_error(params.status().message());
  std::ofstream samples_log;
  if (absl::Status st = OpenSamplesLog(&samples_log, &*params); !st.ok()) {
    return usage_error(st.message());
  }
  absl::StatusOr<std::unique_ptr<TimingBackend>> backend = MakeBackend();
  if (!backend.ok()) return usage_error(backend.status().message());
  if (work->layers) {
    const nlohmann::json doc = RunLayerBench(**backend, work->layer_keys, *params, &std::cerr);
    return WriteBench(doc, LayerBenchTable(doc), (*backend)->Broken());
  }
  const nlohmann::json doc = RunBench(**backend, work->gemms, *params, &std::cerr);
  return WriteBench(doc, BenchTable(doc), (*backend)->Broken());
}

// `replay --samples_log FILE`: the stopping rule (with --target_spread and --max_seconds)
// replayed over streams a device run recorded.
int Replay() {
  const std::string path = absl::GetFlag(FLAGS_samples_log);
  if (path.empty()) {
    std::cerr << "wavecrest-worker replay: give --samples_log FILE (from bench --samples_log)\n";
    return kExitUsage;
  }
  std::ifstream in(path);
  if (!in) {
    std::cerr << "wavecrest-worker replay: --samples_log " << path << ": cannot open\n";
    return kExitUsage;
  }
  std::stringstream text;
  text << in.rdbuf();
  v1::TimingOptions o;
  o.set_target_relative_spread(absl::GetFlag(FLAGS_target_spread));
  o.set_max_seconds_per_gemm(absl::GetFlag(FLAGS_max_seconds));
  absl::StatusOr<TimingParams> params = ParamsFromProto(o);
  absl::StatusOr<std::string> table =
      params.ok() ? ReplaySamplesLog(text.str(), *params) : params.status();
  if (!table.ok()) {
    std::cerr << "wavecrest-worker replay: " << table.status().message() << "\n";
    return kExitUsage;
  }
  std::cout << *table;
  return 0;
}

// A socket left at --listen's path by a worker that died is removed; anything else there is an
// error (false, said on stderr).
bool ClearStaleSocket(const std::string& listen) {
  if (!absl::StartsWith(listen, "unix:")) return true;
  const std::string path = listen.substr(5);
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return true;
  if (!S_ISSOCK(st.st_mode)) {
    std::cerr << "wavecrest-worker: --listen: " << path << " exists and is not a socket\n";
    return false;
  }
  unlink(path.c_str());
  return true;
}

// The worker's gRPC server on `listen` (TLS from the flags); null, said on stderr, when it
// cannot start. `port` is the TCP port taken (0 for a unix socket).
std::unique_ptr<grpc::Server> StartGrpc(const std::string& listen, WorkerService& service,
                                        int* port) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      ServerCredentialsFor({absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                            absl::GetFlag(FLAGS_tls_client_ca)});
  if (!credentials.ok()) {
    std::cerr << "wavecrest-worker: --tls_*: " << credentials.status().message() << "\n";
    return nullptr;
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, *credentials,
                           absl::StartsWith(listen, "unix:") ? nullptr : port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) std::cerr << "wavecrest-worker: cannot listen on " << listen << "\n";
  return server;
}

// The port file (--port_file) and the "worker ready" log line.
void AnnounceReady(const std::string& listen, int port, TimingBackend& backend) {
  const std::string port_file = absl::GetFlag(FLAGS_port_file);
  if (!port_file.empty()) {
    std::ofstream(port_file + ".tmp") << nlohmann::json({{"port", port}}).dump() << "\n";
    std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  }
  const v1::DeviceFingerprint fp = backend.Fingerprint();
  LogInfo("worker ready", {{"listen", listen},
                           {"port", port},
                           {"device", fp.name()},
                           {"kind", fp.catalog_name()},
                           {"backend", fp.backend()},
                           {"pid", getpid()}});
}

int Serve() {
  std::string listen = absl::GetFlag(FLAGS_listen);
  if (listen.empty()) {
    std::cerr << "wavecrest-worker: --listen is required (unix:/path.sock or host:port)\n";
    return kExitUsage;
  }
  // Signals are taken by one thread with sigwait; every other thread has them blocked.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<TimingBackend>> backend = MakeBackend();
  if (!backend.ok()) {
    LogError("worker cannot start", {{"error", std::string(backend.status().message())}});
    std::cerr << "wavecrest-worker: " << backend.status().message() << "\n";
    return kExitUsage;
  }
  if (!ClearStaleSocket(listen)) return kExitUsage;

  std::mutex mu;
  std::condition_variable cv;
  int exit_code = -1;
  auto stop = [&](int code) {
    std::lock_guard<std::mutex> lock(mu);
    if (exit_code < 0) exit_code = code;
    cv.notify_all();
  };
  grpc::HealthCheckServiceInterface* health = nullptr;
  WorkerService service((*backend).get(), absl::GetFlag(FLAGS_request_log), [&] {
    LogError("sticky CUDA error: exiting so that the supervisor restarts this worker");
    if (health) health->SetServingStatus(false);
    stop(kExitSticky);
  });
  int port = 0;
  std::unique_ptr<grpc::Server> server = StartGrpc(listen, service, &port);
  if (!server) return kExitUsage;
  health = server->GetHealthCheckService();
  health->SetServingStatus("wavecrest.v1.GemmWorker", true);
  AnnounceReady(listen, port, **backend);

  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    LogInfo("worker stopping", {{"signal", sig}});
    stop(0);
  });
  signal_thread.detach();
  int code;
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return exit_code >= 0; });
    code = exit_code;
  }
  health->SetServingStatus(false);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (code == kExitSticky) std::_Exit(kExitSticky);  // the CUDA context cannot be torn down
  return code;
}

}  // namespace
}  // namespace wavecrest

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "wavecrest-worker: times GEMMs with cuBLASLt on one GPU.\n\n"
      "  wavecrest-worker --device 0 --listen unix:/run/wavecrest/w0.sock\n"
      "      serve wavecrest.v1.GemmWorker (wavecrest-server starts and supervises these)\n"
      "  wavecrest-worker --backend analytic --emulate h100-sxm --listen unix:/tmp/w.sock\n"
      "      no GPU: answer with the analytic model; every result PREDICTED\n"
      "  wavecrest-worker bench --device 0 --gemms shapes.csv --dtype bf16 --json out.json\n"
      "  wavecrest-worker bench --model examples/models/llama-2-7b.json --json out.json\n"
      "  wavecrest-worker bench --model examples/models/llama-3-8b.json --layers\n"
      "      time GEMMs without a server; CSV lines are m,n,k[,batch[,layout]]\n"
      "  wavecrest-worker bench ... --samples_log samples.jsonl\n"
      "  wavecrest-worker replay --samples_log samples.jsonl [--target_spread 0.01]\n"
      "      record each GEMM's raw samples; replay the stopping rule over them (no GPU)\n"
      "  wavecrest-worker devices\n"
      "      list visible CUDA devices as JSON\n\n"
      "Exit codes: 0 done, 2 bad flags or no usable device, 3 sticky CUDA error (restart me).");
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view path) {
    return path.find("gpu_worker/") != absl::string_view::npos;
  };
  config.contains_helpshort_flags = config.contains_help_flags;
  absl::SetFlagsUsageConfig(config);
  wavecrest::SetLogComponent("worker");
  std::vector<char*> args = wavecrest::ParseFlagsWithEnvironment(
      argc, argv, "wavecrest-worker", "gpu_worker/", [] { return absl::GetFlag(FLAGS_log_level); });
  const std::string command = args.size() > 1 ? args[1] : "serve";
  if (args.size() > 2) {
    std::cerr << "wavecrest-worker: unexpected argument " << args[2] << "\n";
    return 2;
  }
  if (command == "serve") return wavecrest::Serve();
  if (command == "bench") return wavecrest::Bench();
  if (command == "devices") return wavecrest::Devices();
  if (command == "replay") return wavecrest::Replay();
  std::cerr << "wavecrest-worker: unknown command \"" << command
            << "\"; use serve, bench, replay or devices (see --help)\n";
  return 2;
}
