// TLS, mutual TLS, bearer tokens, admin calls, port sharing, stream limits and stale socket
// directories, against the real binaries. Certificates are made at test time with openssl.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "service/errors.h"
#include "tests/integration/process.h"

namespace wavecrest {
namespace {

using testing::BinaryPath;
using ::testing::HasSubstr;
using testing::Process;
using testing::ServerUnderTest;
using testing::Shell;
using testing::TempDir;

// A test CA, a server certificate for 127.0.0.1 and a client certificate, in `dir`.
class Certs {
 public:
  Certs() {
    const std::string d = dir_.path();
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    auto run = [](const std::string& cmd) {
      auto [code, out] = Shell(cmd);
      EXPECT_EQ(code, 0) << cmd << "\n" << out;
    };
    run(absl::StrCat("cd ", d, " && openssl req -x509 ", ec,
                     " -keyout ca.key -out ca.pem -days 1 -subj /CN=wavecrest-test-ca"));
    for (const char* who : {"server", "client", "other"}) {
      run(absl::StrCat("cd ", d, " && openssl req ", ec, " -keyout ", who, ".key -out ", who,
                       ".csr -subj /CN=wavecrest-", who));
      std::ofstream(d + "/ext.cnf") << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
      const std::string signer = std::string(who) == "other" ? "other-ca" : "ca";
      if (signer == "other-ca") {
        run(absl::StrCat("cd ", d, " && openssl req -x509 ", ec,
                         " -keyout other-ca.key -out other-ca.pem -days 1 -subj /CN=other-ca"));
      }
      run(absl::StrCat("cd ", d, " && openssl x509 -req -in ", who, ".csr -CA ", signer,
                       ".pem -CAkey ", signer, ".key -CAcreateserial -out ", who,
                       ".pem -days 1 -extfile ext.cnf"));
    }
  }
  std::string File(const std::string& name) const { return dir_.File(name); }

 private:
  TempDir dir_;
};

std::vector<std::string> ServerTls(const Certs& c, bool mutual) {
  std::vector<std::string> a = {"--tls_cert=" + c.File("server.pem"),
                                "--tls_key=" + c.File("server.key")};
  if (mutual) a.push_back("--tls_client_ca=" + c.File("ca.pem"));
  return a;
}

ClientSecurity ClientTls(const Certs& c, bool with_cert) {
  ClientSecurity s;
  s.tls.ca = c.File("ca.pem");
  if (with_cert) {
    s.tls.cert = c.File("client.pem");
    s.tls.key = c.File("client.key");
  }
  return s;
}

TEST(SecurityTest, TlsAndMutualTlsEndToEndAndPlaintextIsRefused) {
  Certs certs;
  ServerUnderTest server(ServerTls(certs, /*mutual=*/true));
  ASSERT_TRUE(server.WaitReady(absl::Seconds(30), ClientTls(certs, true))) << server.Log();
  v1::AnalyzeRequest req;
  req.mutable_model()->set_hidden_size(2048);
  req.mutable_model()->set_num_attention_heads(16);
  req.mutable_model()->set_num_layers(4);
  req.mutable_model()->set_vocab_size(50304);
  req.set_gpu("h100-sxm");
  // Mutual TLS: health and Analyze.
  AdvisorClient good(server.address(), absl::Seconds(5), ClientTls(certs, true));
  EXPECT_EQ(*good.Health("wavecrest.v1.Advisor"), "SERVING");
  EXPECT_TRUE(good.Analyze(req).ok());
  // TLS without a client certificate: refused by the mutual-TLS server.
  AdvisorClient no_cert(server.address(), absl::Seconds(5), ClientTls(certs, false));
  EXPECT_FALSE(no_cert.Analyze(req).ok());
  // Plaintext: refused.
  AdvisorClient plain(server.address(), absl::Seconds(5));
  absl::Status st = plain.Analyze(req).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable) << st;
  // The CLI speaks TLS too.
  auto [code, out] = Shell(absl::StrCat(
      BinaryPath("client/wavecrest"), " health --server ", server.address(),
      " --service=wavecrest.v1.Advisor --tls_ca ", certs.File("ca.pem"), " --tls_cert ",
      certs.File("client.pem"), " --tls_key ", certs.File("client.key")));
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("wavecrest.v1.Advisor: SERVING"));
}

TEST(SecurityTest, TokensGateEveryCallAndAdminCalls) {
  TempDir dir;
  const std::string client_token = "client-token-0123456789abcdef";
  const std::string admin_token = "admin-token-0123456789abcdef";
  std::ofstream(dir.File("tokens")) << "# test tokens\n"
                                    << client_token << " client\n"
                                    << admin_token << " admin\n";
  // A tokens file every user can read is refused, naming the fix.
  {
    auto [code, out] = Shell(absl::StrCat(BinaryPath("server/wavecrest-server"),
                                          " --listen=127.0.0.1:0 --metrics_listen= ",
                                          "--auth_tokens_file=", dir.File("tokens"), " 2>&1"));
    EXPECT_NE(code, 0) << out;
    EXPECT_THAT(out, HasSubstr("chmod 600"));
  }
  std::filesystem::permissions(dir.File("tokens"), std::filesystem::perms::owner_read |
                                                       std::filesystem::perms::owner_write);
  ServerUnderTest server({"--auth_tokens_file=" + dir.File("tokens")});
  ASSERT_TRUE(server.WaitReady()) << server.Log();  // health stays open
  ClientSecurity as_client, as_admin;
  as_client.token = client_token;
  as_admin.token = admin_token;
  AdvisorClient none(server.address(), absl::Seconds(5));
  AdvisorClient client(server.address(), absl::Seconds(5), as_client);
  AdvisorClient admin(server.address(), absl::Seconds(5), as_admin);
  ClientSecurity wrong;
  wrong.token = "not-a-token-not-a-token";
  AdvisorClient bad(server.address(), absl::Seconds(5), wrong);
  EXPECT_EQ(none.ListDevices().status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(bad.ListDevices().status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(client.ListDevices().ok());
  EXPECT_EQ(client.ListDevices(/*include_internal=*/true).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(client.ClearQuarantine(v1::ClearQuarantineRequest()).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(admin.ListDevices(true).ok());
  EXPECT_TRUE(admin.ClearQuarantine(v1::ClearQuarantineRequest()).ok());
  v1::TimeGemmsRequest time;
  time.set_gpu("h100-sxm");
  time.set_mode(v1::MODE_PREDICTED);
  auto* g = time.add_gemms();
  g->set_m(512);
  g->set_n(512);
  g->set_k(512);
  EXPECT_EQ(none.TimeGemms(time, [](const v1::TimeGemmsResponse&) {}).code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(client.TimeGemms(time, [](const v1::TimeGemmsResponse&) {}).ok());
  // The CLI reads the token from the environment.
  auto [code, out] =
      Shell(absl::StrCat("WAVECREST_TOKEN=", client_token, " ", BinaryPath("client/wavecrest"),
                         " devices --server ", server.address()));
  EXPECT_EQ(code, 0) << out;
  // Reflection cannot check tokens: with tokens on it is not served at all.
  auto reflection = grpc::reflection::v1alpha::ServerReflection::NewStub(none.channel());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = reflection->ServerReflectionInfo(&ctx);
  grpc::reflection::v1alpha::ServerReflectionRequest list;
  list.set_list_services("");
  stream->Write(list);
  stream->WritesDone();
  grpc::reflection::v1alpha::ServerReflectionResponse resp;
  EXPECT_FALSE(stream->Read(&resp));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

// One posture for both ports: the plain-HTTP gateway does not start beside mutual TLS, nor beside
// TLS unless a proxy is declared to terminate it; TLS files that are not PEM are named.
TEST(SecurityTest, TheHttpGatewayFollowsTheGrpcPostureAndTlsErrorsNameTheFile) {
  Certs certs;
  const std::string server = BinaryPath("server/wavecrest-server");
  auto start = [&](const std::vector<std::string>& args) {
    std::string cmd = absl::StrCat("timeout 20 ", server,
                                   " --listen=127.0.0.1:0 --metrics_listen= --http_listen=127.0.0.1:0");
    for (const std::string& a : args) absl::StrAppend(&cmd, " ", a);
    return Shell(cmd + " 2>&1");
  };
  std::vector<std::string> mtls = ServerTls(certs, true);
  auto [c1, o1] = start(mtls);
  EXPECT_NE(c1, 0);
  EXPECT_THAT(o1, HasSubstr("--tls_client_ca"));
  EXPECT_THAT(o1, HasSubstr("cannot check client certificates"));
  mtls.push_back("--http_allow_plaintext");
  auto [c2, o2] = start(mtls);  // never with a client CA
  EXPECT_NE(c2, 0) << o2;
  auto [c3, o3] = start(ServerTls(certs, false));
  EXPECT_NE(c3, 0);
  EXPECT_THAT(o3, HasSubstr("--http_allow_plaintext"));
  // With the proxy declared it starts (and stays up until `timeout` ends it).
  std::vector<std::string> proxied = ServerTls(certs, false);
  proxied.push_back("--http_allow_plaintext");
  proxied.push_back("--port_file=" + certs.File("ports.json"));
  std::string cmd = absl::StrCat("timeout 3 ", server,
                                 " --listen=127.0.0.1:0 --metrics_listen= --http_listen=127.0.0.1:0");
  for (const std::string& a : proxied) absl::StrAppend(&cmd, " ", a);
  auto [c4, o4] = Shell(cmd + " 2>&1");
  EXPECT_EQ(c4, 124) << o4;  // killed by timeout, not failed
  // A key file that holds no key is named as such (it used to read as "port taken").
  std::ofstream(certs.File("bad.key")) << "not a key\n";
  auto [c5, o5] = Shell(absl::StrCat("timeout 20 ", server,
                                     " --listen=127.0.0.1:0 --metrics_listen= --tls_cert=",
                                     certs.File("server.pem"), " --tls_key=",
                                     certs.File("bad.key"), " 2>&1"));
  EXPECT_NE(c5, 0);
  EXPECT_THAT(o5, HasSubstr("bad.key: no PEM private key"));
}

TEST(SecurityTest, ListDevicesHidesWorkerInternalsUnlessAnAdminAsks) {
  TempDir dir;
  ServerUnderTest server(
      {"--workers=1", "--worker_backend=analytic", "--worker_socket_dir=" + dir.File("sockets")});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  ASSERT_TRUE(server.WaitHealth("wavecrest.v1.Advisor/measure", "SERVING"));
  AdvisorClient c(server.address(), absl::Seconds(5));
  absl::StatusOr<v1::ListDevicesResponse> plain = c.ListDevices();
  ASSERT_TRUE(plain.ok());
  ASSERT_EQ(plain->workers_size(), 1);
  EXPECT_TRUE(plain->workers(0).address().empty());
  EXPECT_EQ(plain->workers(0).pid(), 0);
  absl::StatusOr<v1::ListDevicesResponse> internal = c.ListDevices(true);  // this host: admin
  ASSERT_TRUE(internal.ok());
  EXPECT_THAT(internal->workers(0).address(), HasSubstr("sockets"));
  EXPECT_GT(internal->workers(0).pid(), 0);
  // The socket directory is private to this user.
  struct stat st;
  ASSERT_EQ(stat(dir.File("sockets").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(SecurityTest, RemoteWorkerOverMutualTlsAcceptsOnlyTheServersCertificate) {
  Certs certs;
  TempDir dir;
  Process worker(
      {BinaryPath("gpu_worker/wavecrest-worker"), "--backend=analytic", "--emulate=h100-sxm",
       "--listen=127.0.0.1:0", "--port_file=" + dir.File("worker.json"),
       "--tls_cert=" + certs.File("server.pem"), "--tls_key=" + certs.File("server.key"),
       "--tls_client_ca=" + certs.File("ca.pem")},
      dir.File("worker.log"));
  int port = 0;
  for (int i = 0; i < 600 && port == 0; ++i) {
    std::ifstream in(dir.File("worker.json"));
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_discarded() && j.contains("port")) port = j["port"].get<int>();
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_GT(port, 0);
  const std::string address = absl::StrCat("127.0.0.1:", port);
  // With the server's client certificate: the worker is used.
  ServerUnderTest server({"--worker_address=" + address, "--worker_tls_ca=" + certs.File("ca.pem"),
                          "--worker_tls_cert=" + certs.File("client.pem"),
                          "--worker_tls_key=" + certs.File("client.key")});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  ASSERT_TRUE(server.WaitHealth("wavecrest.v1.Advisor/measure", "SERVING")) << server.Log();
  // With a certificate from another CA: the worker refuses it, so it never comes up.
  ServerUnderTest stranger({"--worker_address=" + address,
                            "--worker_tls_ca=" + certs.File("ca.pem"),
                            "--worker_tls_cert=" + certs.File("other.pem"),
                            "--worker_tls_key=" + certs.File("other.key")});
  ASSERT_TRUE(stranger.WaitReady()) << stranger.Log();
  EXPECT_FALSE(stranger.WaitHealth("wavecrest.v1.Advisor/measure", "SERVING", absl::Seconds(3)));
}

TEST(SecurityTest, ASecondServerOnAServedPortExitsNonZero) {
  ServerUnderTest first;
  ASSERT_TRUE(first.WaitReady()) << first.Log();
  TempDir dir;
  Process second(
      {BinaryPath("server/wavecrest-server"), "--listen=" + first.address(), "--metrics_listen="},
      dir.File("second.log"));
  const int code = second.Wait(absl::Seconds(20));
  EXPECT_NE(code, 0);
  EXPECT_NE(code, -1);  // it exited, it did not start serving
  std::ifstream in(dir.File("second.log"));
  std::stringstream log;
  log << in.rdbuf();
  EXPECT_THAT(log.str(), HasSubstr("cannot listen"));
  // The first still answers every call.
  AdvisorClient c(first.address(), absl::Seconds(5));
  EXPECT_EQ(*c.Health(""), "SERVING");
}

TEST(SecurityTest, StreamsPerClientAreLimitedWithARetryHint) {
  TempDir dir;
  ServerUnderTest server(
      {"--workers=1", "--worker_backend=analytic", "--worker_socket_dir=" + dir.File("sockets"),
       "--worker_extra_args=--fault=slow --fault_slow_ms=3000", "--max_streams_per_client=1"});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  ASSERT_TRUE(server.WaitHealth("wavecrest.v1.Advisor/measure", "SERVING"));
  v1::TimeGemmsRequest slow;
  slow.set_gpu("h100-sxm");
  slow.set_mode(v1::MODE_MEASURED);
  auto* g = slow.add_gemms();
  g->set_m(256);
  g->set_n(256);
  g->set_k(256);
  std::atomic<bool> started{false};
  std::thread first([&] {
    AdvisorClient c(server.address(), absl::Seconds(30));
    c.TimeGemms(slow, [&](const v1::TimeGemmsResponse&) { started.store(true); }).IgnoreError();
  });
  while (!started.load()) absl::SleepFor(absl::Milliseconds(10));
  AdvisorClient c(server.address(), absl::Seconds(30));
  absl::Status second = c.TimeGemms(slow, [](const v1::TimeGemmsResponse&) {});
  EXPECT_EQ(second.code(), absl::StatusCode::kResourceExhausted) << second;
  EXPECT_GT(RetryDelayOf(second), absl::ZeroDuration());
  first.join();
  // Once the first ended, the slot is free again. The server gives it back in OnDone, which gRPC
  // runs after the client has its final status: allow that moment (a bounded wait).
  slow.set_mode(v1::MODE_PREDICTED);
  absl::Status again = c.TimeGemms(slow, [](const v1::TimeGemmsResponse&) {});
  for (int i = 0; i < 100 && again.code() == absl::StatusCode::kResourceExhausted; ++i) {
    absl::SleepFor(absl::Milliseconds(20));
    again = c.TimeGemms(slow, [](const v1::TimeGemmsResponse&) {});
  }
  EXPECT_TRUE(again.ok()) << again;
}

TEST(SecurityTest, StaleWorkerSocketDirectoriesAreRemovedAtStart) {
  TempDir tmp;
  setenv("TMPDIR", tmp.path().c_str(), 1);
  const std::string stale = tmp.File("wavecrest-workers-stale1");
  std::filesystem::create_directories(stale);
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  int status;
  waitpid(dead, &status, 0);  // a pid that no longer runs
  std::ofstream(stale + "/server.pid") << dead << "\n";
  const std::string live = tmp.File("wavecrest-workers-live1");
  std::filesystem::create_directories(live);
  std::ofstream(live + "/server.pid") << getpid() << "\n";
  {
    ServerUnderTest server({"--workers=1", "--worker_backend=analytic"});
    ASSERT_TRUE(server.WaitReady()) << server.Log();
    EXPECT_FALSE(std::filesystem::exists(stale));
    EXPECT_TRUE(std::filesystem::exists(live));  // its server (this test) still runs
  }
  unsetenv("TMPDIR");
}

}  // namespace
}  // namespace wavecrest
