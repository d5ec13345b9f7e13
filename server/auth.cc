#include "server/auth.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace wavecrest {

absl::StatusOr<Auth> Auth::FromTokensFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadSecretFile(path);
  if (!text.ok()) return text.status();
  // Secrets readable by every user of the machine are not secrets: refuse, and say how to fix.
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IROTH | S_IWOTH)) != 0) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "%s: readable or writable by every user (mode %04o); chmod 600 it (a Kubernetes Secret: "
        "defaultMode 0400)",
        path, st.st_mode & 07777));
  }
  Auth auth;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> parts = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (parts.size() != 2 || (parts[1] != "client" && parts[1] != "admin") ||
        parts[0].size() < 16) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", line_no,
          ": expected \"<token> <role>\" with a token of at least 16 characters and role "
          "client or admin"));
    }
    auth.tokens_[std::string(parts[0])] = parts[1] == "admin" ? Role::kAdmin : Role::kClient;
  }
  if (auth.tokens_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no tokens"));
  }
  return auth;
}

bool LocalPeer(absl::string_view peer) {
  return absl::StartsWith(peer, "unix:") || absl::StartsWith(peer, "ipv4:127.") ||
         absl::StartsWith(peer, "ipv6:[::1]") || absl::StartsWith(peer, "ipv6:%5B::1%5D");
}

std::string PeerOf(const grpc::ServerContextBase& ctx) {
  std::string peer = ctx.peer();
  const bool network = absl::StartsWith(peer, "ipv4:") || absl::StartsWith(peer, "ipv6:") ||
                       absl::StartsWith(peer, "unix:");
  if (network) return peer;
  // In-process: the HTTP gateway, which says who its caller is (an unknown one is not local).
  const auto& md = ctx.client_metadata();
  auto it = md.find(std::string(kHttpPeerMetadata));
  if (it == md.end()) return absl::StrCat("inproc:", peer);
  const std::string forwarded(it->second.data(), it->second.size());
  if (absl::StartsWith(forwarded, "ipv4:") || absl::StartsWith(forwarded, "ipv6:")) {
    return forwarded;
  }
  return absl::StrCat("inproc:", peer);
}

absl::Status Auth::Check(const grpc::ServerContextBase& ctx, Role needed) const {
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return CheckAuthorization(nullptr, enabled() ? "" : PeerOf(ctx), needed);
  const absl::string_view value(it->second.data(), it->second.size());
  return CheckAuthorization(&value, enabled() ? "" : PeerOf(ctx), needed);
}

absl::Status Auth::CheckAuthorization(const absl::string_view* authorization,
                                      absl::string_view peer, Role needed) const {
  if (!enabled()) {
    if (needed == Role::kAdmin && !LocalPeer(peer)) {
      return absl::PermissionDeniedError(
          "admin calls come from this host only when the server has no --auth_tokens_file");
    }
    return absl::OkStatus();
  }
  if (authorization == nullptr) {
    return absl::UnauthenticatedError(
        "missing \"authorization: Bearer <token>\" (the server has --auth_tokens_file)");
  }
  absl::string_view value = *authorization;
  if (!absl::ConsumePrefix(&value, "Bearer ")) {
    return absl::UnauthenticatedError("authorization must be \"Bearer <token>\"");
  }
  auto t = tokens_.find(value);
  if (t == tokens_.end()) return absl::UnauthenticatedError("unknown token");
  if (needed == Role::kAdmin && t->second != Role::kAdmin) {
    return absl::PermissionDeniedError("this call needs an admin token");
  }
  return absl::OkStatus();
}

}  // namespace wavecrest
