#include "service/tls.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace wavecrest {

absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream s;
  s << in.rdbuf();
  if (s.str().size() > (1 << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": larger than 1 MiB"));
  }
  return s.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(const TlsFiles& tls) {
  if (tls.cert.empty() && tls.key.empty()) {
    if (!tls.ca.empty()) {
      return absl::InvalidArgumentError(
          "a client CA needs the server's own --tls_cert and --tls_key");
    }
    return grpc::InsecureServerCredentials();
  }
  if (tls.cert.empty() || tls.key.empty()) {
    return absl::InvalidArgumentError("give both a TLS certificate and its key");
  }
  grpc::SslServerCredentialsOptions options;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  absl::StatusOr<std::string> cert = ReadSecretFile(tls.cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadSecretFile(tls.key);
  if (!key.ok()) return key.status();
  // gRPC reports a certificate or key it cannot use only as a failure to listen: say which file.
  if (!absl::StrContains(*cert, "-----BEGIN CERTIFICATE-----")) {
    return absl::InvalidArgumentError(absl::StrCat(
        tls.cert, ": no PEM certificate in it (\"-----BEGIN CERTIFICATE-----\")"));
  }
  if (!absl::StrContains(*key, "PRIVATE KEY-----")) {
    return absl::InvalidArgumentError(absl::StrCat(
        tls.key, ": no PEM private key in it (\"-----BEGIN ... PRIVATE KEY-----\")"));
  }
  pair.cert_chain = *cert;
  pair.private_key = *key;
  options.pem_key_cert_pairs.push_back(pair);
  if (!tls.ca.empty()) {
    absl::StatusOr<std::string> ca = ReadSecretFile(tls.ca);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsFor(
    const TlsFiles& tls) {
  if (tls.ca.empty()) {
    if (!tls.cert.empty() || !tls.key.empty()) {
      return absl::InvalidArgumentError(
          "a client certificate needs the CA of the server (--tls_ca)");
    }
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions options;
  absl::StatusOr<std::string> ca = ReadSecretFile(tls.ca);
  if (!ca.ok()) return ca.status();
  options.pem_root_certs = *ca;
  if (!tls.cert.empty() || !tls.key.empty()) {
    if (tls.cert.empty() || tls.key.empty()) {
      return absl::InvalidArgumentError("give both a client certificate and its key");
    }
    absl::StatusOr<std::string> cert = ReadSecretFile(tls.cert);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadSecretFile(tls.key);
    if (!key.ok()) return key.status();
    options.pem_cert_chain = *cert;
    options.pem_private_key = *key;
  }
  return grpc::SslCredentials(options);
}

}  // namespace wavecrest
