// Test helpers: HTTP requests to a server under test, with curl (Http) or over a raw socket
// (RawStatus, for framing no client library would send).
#ifndef WAVECREST_TESTS_INTEGRATION_HTTP_CLIENT_H_
#define WAVECREST_TESTS_INTEGRATION_HTTP_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "tests/integration/process.h"

namespace wavecrest::testing {

struct HttpReply {
  int status = 0;
  std::string body;
};

// curl: `method` `path` with `body` (a file, so that any JSON passes the shell unharmed).
inline HttpReply Http(int port, const std::string& method, const std::string& path,
               const std::string& body = "", const std::string& headers = "") {
  TempDir dir;
  std::ofstream(dir.File("body")) << body;
  // A JSON body says so (the gateway refuses other types), unless the test sets its own.
  const std::string type = body.empty() || absl::StrContains(headers, "Content-Type")
                               ? ""
                               : " -H 'Content-Type: application/json'";
  auto [code, out] = Shell(absl::StrCat("curl -s -N -X ", method, " ", headers, type,
                                        body.empty() ? "" : " --data-binary @" + dir.File("body"),
                                        " -w '\\n%{http_code}' http://127.0.0.1:", port, path));
  HttpReply r;
  const size_t nl = out.rfind('\n');
  if (code != 0 || nl == std::string::npos) return r;
  r.status = std::atoi(out.c_str() + nl + 1);
  r.body = out.substr(0, nl);
  return r;
}

inline nlohmann::json Json(const std::string& text) { return nlohmann::json::parse(text, nullptr, false); }

inline std::vector<nlohmann::json> Lines(const std::string& ndjson) {
  std::vector<nlohmann::json> out;
  for (absl::string_view line : absl::StrSplit(ndjson, '\n', absl::SkipEmpty())) {
    out.push_back(Json(std::string(line)));
  }
  return out;
}

// A dashboard of one page under `dir` (its "static" folder), for --http_static_dir.
inline std::string MakeDashboard(const TempDir& dir) {
  std::filesystem::create_directories(dir.File("static"));
  std::ofstream(dir.File("static/index.html")) << "<!doctype html><title>wavecrest</title>";
  return dir.File("static");
}

// A TCP connection to 127.0.0.1:`port`, or -1.
inline int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `raw` on a new connection, closes the writing side, and returns the status of the reply's
// first line (0: the server closed the connection without a reply; 999: a malformed status line).
inline int RawStatus(int port, const std::string& raw) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return -1;
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  size_t sent = 0;
  while (sent < raw.size()) {
    const ssize_t n = send(fd, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may close early on a bad request
    sent += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  std::string reply;
  char buf[512];
  ssize_t n;
  while (reply.size() < 64 && (n = recv(fd, buf, sizeof(buf), 0)) > 0) reply.append(buf, n);
  close(fd);
  if (reply.empty()) return 0;
  // A well-formed status line, never the request's bytes echoed into it (999: malformed).
  if (!absl::StartsWith(reply, "HTTP/1.1 ") && !absl::StartsWith(reply, "HTTP/1.0 ")) return 999;
  return std::atoi(reply.c_str() + 9);
}

// Sends `raw` on a new connection (its writing side closed after when `close_write`) and returns
// the whole reply the server writes within `timeout_s` (empty: none).
inline std::string RawReply(int port, const std::string& raw, int timeout_s = 5,
                            bool close_write = true) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  timeval tv{timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  size_t sent = 0;
  while (sent < raw.size()) {
    const ssize_t n = send(fd, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  if (close_write) shutdown(fd, SHUT_WR);
  std::string reply;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) reply.append(buf, n);
  close(fd);
  return reply;
}

}  // namespace wavecrest::testing

#endif  // WAVECREST_TESTS_INTEGRATION_HTTP_CLIENT_H_
