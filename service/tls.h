// TLS credentials of the server, its workers and its clients, from PEM files.
#ifndef WAVECREST_SERVICE_TLS_H_
#define WAVECREST_SERVICE_TLS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/security/server_credentials.h"

namespace wavecrest {

// TLS material, PEM files; empty paths = not used.
struct TlsFiles {
  std::string cert;  // this side's certificate chain
  std::string key;   // its private key
  std::string ca;    // CA that signs the other side's certificate (a client CA on a server)
};

// Server credentials: TLS when cert and key are given (mutual TLS when ca is given too: clients
// must present a certificate the CA signed), insecure otherwise.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(const TlsFiles& tls);
// Channel credentials: TLS when ca is given (with a client certificate when cert and key are).
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsFor(
    const TlsFiles& tls);

// The contents of a small file (PEM, tokens).
absl::StatusOr<std::string> ReadSecretFile(const std::string& path);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_TLS_H_
