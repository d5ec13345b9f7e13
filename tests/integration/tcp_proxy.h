// Test helper: a TCP forwarder on loopback between one client and its server, which a test can
// partition. Hold() stops forwarding (connections stay open and silent, as when packets are
// dropped); Heal() resumes. Used to take one replica's database away while another keeps it.
#ifndef WAVECREST_TESTS_INTEGRATION_TCP_PROXY_H_
#define WAVECREST_TESTS_INTEGRATION_TCP_PROXY_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "tests/integration/http_client.h"

namespace wavecrest::testing {

class TcpProxy {
 public:
  explicit TcpProxy(int upstream_port) : upstream_(upstream_port) {
    listen_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(listen_, 64);
    thread_ = std::thread([this] { Loop(); });
  }
  ~TcpProxy() {
    stop_ = true;
    thread_.join();
    close(listen_);
    for (auto [a, b] : pairs_) {
      close(a);
      close(b);
    }
  }
  int port() const { return port_; }
  void Hold() { held_ = true; }
  void Heal() { held_ = false; }

 private:
  int Upstream() const { return ConnectLoopback(upstream_); }
  void Loop() {
    while (!stop_) {
      const bool held = held_.load();  // one answer for this round
      std::vector<pollfd> fds = {{listen_, POLLIN, 0}};
      if (!held) {
        for (auto [a, b] : pairs_) {
          fds.push_back({a, POLLIN, 0});
          fds.push_back({b, POLLIN, 0});
        }
      }
      if (poll(fds.data(), fds.size(), 50) <= 0) continue;
      const size_t polled = held ? 0 : pairs_.size();  // a pair accepted below was not polled
      if (fds[0].revents & POLLIN) {
        const int client = accept(listen_, nullptr, nullptr);
        const int server = client >= 0 ? Upstream() : -1;
        if (server >= 0) {
          pairs_.emplace_back(client, server);
        } else if (client >= 0) {
          close(client);
        }
      }
      std::vector<std::pair<int, int>> alive;
      for (size_t i = 0; i < pairs_.size(); ++i) {
        auto [a, b] = pairs_[i];
        const bool open =
            i >= polled || (Forward(fds[1 + 2 * i], a, b) && Forward(fds[2 + 2 * i], b, a));
        if (open) {
          alive.emplace_back(a, b);
        } else {
          close(a);
          close(b);
        }
      }
      pairs_ = std::move(alive);
    }
  }
  // Copies what `from` has to `to`; false when either side closed.
  static bool Forward(const pollfd& p, int from, int to) {
    if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) return true;
    char buf[16384];
    const ssize_t n = read(from, buf, sizeof(buf));
    if (n <= 0) return false;
    for (ssize_t sent = 0; sent < n;) {
      const ssize_t w = send(to, buf + sent, n - sent, MSG_NOSIGNAL);
      if (w <= 0) return false;
      sent += w;
    }
    return true;
  }

  int upstream_;
  int listen_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false}, held_{false};
  std::vector<std::pair<int, int>> pairs_;  // (client, server), the loop thread's
  std::thread thread_;
};

}  // namespace wavecrest::testing

#endif  // WAVECREST_TESTS_INTEGRATION_TCP_PROXY_H_
