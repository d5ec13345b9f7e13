// Who may call what: bearer tokens (optional) and the admin role, checked for every RPC in one
// place (Auth::Check). TLS is service/tls.h.
//
// Tokens file: one "<token> <role>" per line, role "client" or "admin", '#' starts a comment.
// With a tokens file, every call must carry "authorization: Bearer <token>" (UNAUTHENTICATED
// otherwise), admin calls need an admin token (PERMISSION_DENIED otherwise), and the health
// service stays open unless --auth_health. Without one, no call is authenticated: admin calls are
// allowed only from the same host (loopback or a unix socket).
#ifndef WAVECREST_SERVER_AUTH_H_
#define WAVECREST_SERVER_AUTH_H_

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "service/tls.h"

namespace wavecrest {

enum class Role { kClient, kAdmin };

class Auth {
 public:
  // No tokens: nothing authenticated.
  Auth() = default;
  // Reads a tokens file; INVALID_ARGUMENT names the line.
  static absl::StatusOr<Auth> FromTokensFile(const std::string& path);

  bool enabled() const { return !tokens_.empty(); }

  // OK when the call may proceed as `needed`; UNAUTHENTICATED or PERMISSION_DENIED otherwise.
  absl::Status Check(const grpc::ServerContextBase& ctx, Role needed) const;
  // The same check of an authorization value ("Bearer <token>"; nullptr: none sent) for a caller
  // whose address is `peer` (server/auth.h PeerOf's form).
  absl::Status CheckAuthorization(const absl::string_view* authorization, absl::string_view peer,
                                  Role needed) const;

 private:
  absl::flat_hash_map<std::string, Role> tokens_;
};

// Metadata the HTTP gateway (server/http_gateway.h) sets to its caller's address. Trusted only on
// in-process calls, which no network client can make.
inline constexpr absl::string_view kHttpPeerMetadata = "x-wavecrest-http-peer";

// The caller's address ("ipv4:10.0.0.7:51234", "unix:..."): ctx.peer(), or for the gateway's
// in-process calls the HTTP caller's address it passed on.
std::string PeerOf(const grpc::ServerContextBase& ctx);

// The peer is on this host: a unix socket, or a loopback address.
bool LocalPeer(absl::string_view peer);

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_AUTH_H_
