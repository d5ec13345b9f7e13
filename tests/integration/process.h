// Test helper: start a real program, talk to it, stop it. No sleeps to wait for readiness: the
// server writes a port file and the helper polls health with a deadline.
#ifndef WAVECREST_TESTS_INTEGRATION_PROCESS_H_
#define WAVECREST_TESTS_INTEGRATION_PROCESS_H_

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/advisor_client.h"
#include "nlohmann/json.hpp"
#include "tests/test_paths.h"

namespace wavecrest::testing {

// A fresh directory under the system temp dir, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "wavecrest-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

class Process {
 public:
  // Starts `argv` with stdout and stderr appended to `log_path`.
  Process(std::vector<std::string> argv, const std::string& log_path) {
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      FILE* log = std::fopen(log_path.c_str(), "a");
      if (log) {
        dup2(fileno(log), STDOUT_FILENO);
        dup2(fileno(log), STDERR_FILENO);
      }
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~Process() {
    if (pid_ > 0 && !exited_) {
      kill(-pid_, SIGKILL);
      kill(pid_, SIGKILL);
      int status;
      waitpid(pid_, &status, 0);
    }
  }
  pid_t pid() const { return pid_; }
  void Signal(int sig) { kill(pid_, sig); }
  // A memory figure of /proc/<pid>/status in bytes ("VmHWM": peak resident, "VmRSS": resident
  // now); 0 when unknown.
  int64_t StatusBytes(const std::string& field) const {
    std::ifstream in(absl::StrCat("/proc/", pid_, "/status"));
    std::string line;
    while (std::getline(in, line)) {
      if (absl::StartsWith(line, field + ":")) {
        return std::atoll(line.c_str() + field.size() + 1) * 1024;
      }
    }
    return 0;
  }
  // Waits up to `timeout` for the exit; returns the exit code, or -1 on timeout, or 128+signal.
  int Wait(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      int status = 0;
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        if (WIFEXITED(status)) return WEXITSTATUS(status);
        if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
};

// A wavecrest-server on loopback ports chosen at run time.
class ServerUnderTest {
 public:
  explicit ServerUnderTest(std::vector<std::string> extra_args = {},
                           const std::string& dir_override = "") {
    dir_ = dir_override.empty() ? tmp_.path() : dir_override;
    std::filesystem::remove(port_file());
    std::vector<std::string> argv = {BinaryPath("server/wavecrest-server"), "--listen=127.0.0.1:0",
                                     "--metrics_listen=127.0.0.1:0", "--port_file=" + port_file()};
    // Tests read the log right after what should have written it: every line at once, unless
    // the test is about buffering (it passes its own --log_flush_ms).
    if (std::none_of(extra_args.begin(), extra_args.end(),
                     [](const std::string& a) { return a.rfind("--log_flush_ms", 0) == 0; })) {
      argv.push_back("--log_flush_ms=0");
    }
    for (auto& a : extra_args) argv.push_back(a);
    process_ = std::make_unique<Process>(argv, log_file());
  }

  std::string port_file() const { return dir_ + "/ports.json"; }
  std::string log_file() const { return dir_ + "/server.log"; }
  const std::string& dir() const { return dir_; }

  // Waits for the port file and for health SERVING (asked with `security`); false on timeout.
  bool WaitReady(absl::Duration timeout = absl::Seconds(30), const ClientSecurity& security = {}) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      std::ifstream in(port_file());
      if (in) {
        nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
        if (!j.is_discarded() && j.contains("grpc")) {
          grpc_port_ = j["grpc"].get<int>();
          metrics_port_ = j["metrics"].get<int>();
          http_port_ = j.value("http", 0);
          break;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (grpc_port_ == 0) return false;
    AdvisorClient client(address(), absl::Seconds(2), security);
    while (absl::Now() < deadline) {
      auto h = client.Health("");
      if (h.ok() && *h == "SERVING") return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // Polls `service` health until it equals `want` or the timeout passes.
  bool WaitHealth(const std::string& service, const std::string& want,
                  absl::Duration timeout = absl::Seconds(30)) {
    AdvisorClient client(address(), absl::Seconds(2));
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      auto h = client.Health(service);
      if (h.ok() && *h == want) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  std::string address() const { return absl::StrCat("127.0.0.1:", grpc_port_); }
  int metrics_port() const { return metrics_port_; }
  int http_port() const { return http_port_; }
  Process& process() { return *process_; }
  std::string Log() const {
    std::ifstream in(log_file());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  TempDir tmp_;
  std::string dir_;
  std::unique_ptr<Process> process_;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  int http_port_ = 0;
};

// Runs a shell command; returns {exit code, stdout+stderr}.
inline std::pair<int, std::string> Shell(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return {-1, ""};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// The Prometheus text a server's metrics listener serves.
inline std::string Metrics(int port) {
  return Shell(absl::StrCat("curl -s http://127.0.0.1:", port, "/metrics")).second;
}

// The value of the first sample of `name` whose labels include every one of `labels`
// (`result="hit"`), in Prometheus text; 0 when there is none.
inline double MetricValue(const std::string& text, const std::string& name,
                          const std::vector<std::string>& labels) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, name + "{") && !absl::StartsWith(line, name + " ")) continue;
    bool all = true;
    for (const auto& l : labels) all = all && absl::StrContains(line, l);
    if (!all) continue;
    double v = 0;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) return v;
  }
  return 0;
}

}  // namespace wavecrest::testing

#endif  // WAVECREST_TESTS_INTEGRATION_PROCESS_H_
