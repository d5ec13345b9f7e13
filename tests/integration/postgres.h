// Test helper: a throwaway PostgreSQL cluster on a loopback port (initdb + pg_ctl from Debian's
// postgresql package, which scripts/install-deps.sh installs), removed with the object. initdb
// refuses to run as root: as root, the cluster is run as the `postgres` user the package creates.
#ifndef WAVECREST_TESTS_INTEGRATION_POSTGRES_H_
#define WAVECREST_TESTS_INTEGRATION_POSTGRES_H_

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/process.h"

namespace wavecrest::testing {

class TempPostgres {
 public:
  TempPostgres() {
    bin_ = FindBin();
    if (bin_.empty()) {
      why_not_ = "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb)";
      return;
    }
    as_ = getuid() == 0 ? "runuser -u postgres -- " : "";
    if (!as_.empty() && Shell("id postgres").first != 0) {
      why_not_ = "running as root and there is no postgres user to run the cluster as";
      return;
    }
    data_ = dir_.File("data");
    std::filesystem::create_directories(data_);
    if (!as_.empty()) Shell(absl::StrCat("chown -R postgres ", dir_.path()));
    auto [rc, out] = Shell(absl::StrCat(as_, bin_, "/initdb -D ", data_,
                                        " --auth=trust -U wavecrest -E UTF8 --no-sync 2>&1"));
    if (rc != 0) {
      why_not_ = "initdb failed: " + out;
      return;
    }
    port_ = FreePort();
    auto [src, sout] = Shell(absl::StrCat(
        as_, bin_, "/pg_ctl -D ", data_, " -l ", data_, "/server.log -w -t 30 -o \"-p ", port_,
        " -k ", dir_.path(), " -c listen_addresses=127.0.0.1 -c fsync=off\" start 2>&1"));
    if (src != 0) {
      why_not_ = "pg_ctl start failed: " + sout;
      return;
    }
    started_ = true;
    // Servers and stores under test keep their spools (server/spooled_store.h) here, not in the
    // user's ~/.cache.
    setenv("XDG_CACHE_HOME", dir_.File("cache").c_str(), 1);
  }
  ~TempPostgres() {
    if (started_) Thaw();
    if (started_) Shell(absl::StrCat(as_, bin_, "/pg_ctl -D ", data_, " -m immediate stop 2>&1"));
  }

  // Empty when the cluster runs; else why not (a test skips with it).
  const std::string& why_not() const { return why_not_; }
  // A new, empty database on the cluster.
  std::string NewDatabase(const std::string& name) {
    Shell(absl::StrCat(as_, bin_, "/createdb -h 127.0.0.1 -p ", port_, " -U wavecrest ", name));
    return Uri(name);
  }
  std::string Uri(const std::string& db) const {
    return absl::StrCat("postgresql://wavecrest@127.0.0.1:", port_, "/", db);
  }
  // Faults, for the store's fault tests. Stop: "fast" (sessions ended cleanly) or "immediate"
  // (as a crash); Start brings the cluster back on the same port.
  void Stop(const std::string& mode = "fast") {
    Shell(absl::StrCat(as_, bin_, "/pg_ctl -D ", data_, " -m ", mode, " -w stop 2>&1"));
  }
  bool Start() {
    return Shell(absl::StrCat(as_, bin_, "/pg_ctl -D ", data_, " -l ", data_,
                              "/server.log -w -t 30 -o \"-p ", port_, " -k ", dir_.path(),
                              " -c listen_addresses=127.0.0.1 -c fsync=off\" start 2>&1"))
               .first == 0;
  }
  // SIGSTOP (freeze) or SIGCONT (thaw) to the postmaster and every process it started: the
  // database is there, its sockets accept, and nothing answers.
  void Signal(int sig) {
    std::ifstream pid_file(data_ + "/postmaster.pid");
    pid_t postmaster = 0;
    pid_file >> postmaster;
    if (postmaster <= 0) return;
    kill(postmaster, sig);
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
      std::ifstream stat(e.path() / "stat");
      std::string line;
      if (!std::getline(stat, line)) continue;
      const size_t close = line.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(line.substr(close + 2));
      char state;
      pid_t ppid = 0;
      rest >> state >> ppid;
      if (ppid == postmaster) kill(std::atoi(e.path().filename().c_str()), sig);
    }
  }
  void Freeze() { Signal(SIGSTOP); }
  void Thaw() { Signal(SIGCONT); }
  int port() const { return port_; }
  // The cluster's log (every statement, once a database has log_statement = 'all').
  std::string ServerLog() const {
    std::ifstream in(data_ + "/server.log");
    std::stringstream out;
    out << in.rdbuf();
    return out.str();
  }

  // The rows of `table` in `db` (-1 when it cannot be read).
  int64_t Rows(const std::string& db, const std::string& table = "results") const {
    std::string out = Psql(db, "SELECT COUNT(*) FROM " + table);
    int64_t n = -1;
    return absl::SimpleAtoi(absl::StripAsciiWhitespace(out), &n) ? n : -1;
  }

  // Runs SQL through psql against `db`; returns its output.
  std::string Psql(const std::string& db, const std::string& sql) const {
    return Shell(absl::StrCat("psql -X -A -t -h 127.0.0.1 -p ", port_, " -U wavecrest -d ", db,
                              " -c \"", sql, "\" 2>&1"))
        .second;
  }

 private:
  static std::string FindBin() {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
      if (std::filesystem::exists(e.path() / "bin" / "initdb")) return (e.path() / "bin").string();
    }
    return "";
  }
  static int FreePort() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    const int port = ntohs(a.sin_port);
    close(fd);
    return port;
  }

  TempDir dir_;
  std::string bin_, as_, data_, why_not_;
  int port_ = 0;
  bool started_ = false;
};

}  // namespace wavecrest::testing

#endif  // WAVECREST_TESTS_INTEGRATION_POSTGRES_H_
