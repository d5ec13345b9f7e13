#include "server/http_policy.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "service/errors.h"
#include "service/text.h"

namespace wavecrest {
namespace {

// "host:port", "[v6]:port", "host" -> the host, lowercase, without brackets.
std::string HostOnly(absl::string_view hostport) {
  std::string h(absl::AsciiStrToLower(absl::StripAsciiWhitespace(hostport)));
  if (!h.empty() && h[0] == '[') {
    const size_t end = h.find(']');
    return end == std::string::npos ? h : h.substr(1, end - 1);
  }
  if (std::count(h.begin(), h.end(), ':') == 1) h = h.substr(0, h.find(':'));
  return h;
}

bool ListIncludes(const std::vector<std::string>& list, absl::string_view x) {
  return std::any_of(list.begin(), list.end(),
                     [&](const std::string& y) { return absl::EqualsIgnoreCase(x, y); });
}

constexpr std::pair<const char*, const char*> kMimeTypes[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".json", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".map", "application/json"},
    {".txt", "text/plain; charset=utf-8"},
    {".woff2", "font/woff2"},
};

}  // namespace

std::vector<std::string> DefaultAllowedHosts(const std::string& listen) {
  const std::string host = HostOnly(listen);
  if (host.empty() || host == "0.0.0.0" || host == "::" || host == "*") return {};
  std::vector<std::string> out = {"localhost", "127.0.0.1", "::1"};
  if (!ListIncludes(out, host)) out.push_back(host);
  return out;
}

absl::Status CheckBrowserPolicy(const HttpHeaders& h, const HttpPolicy& p,
                                std::string* cors_origin) {
  cors_origin->clear();
  if (h.content_length_count > 1) {
    return FieldError("Content-Length", absl::StrCat("sent ", h.content_length_count,
                                                     " times; a request has one length"));
  }
  if (h.host_count > 1) {
    return FieldError("Host", absl::StrCat("sent ", h.host_count, " times; a request has one"));
  }
  if (!h.host.empty() && !p.allowed_hosts.empty() &&
      !ListIncludes(p.allowed_hosts, HostOnly(h.host))) {
    return FieldError("Host", absl::StrCat("\"", ForTerminal(h.host),
                                           "\" is not a name this server answers to (allowed: ",
                                           absl::StrJoin(p.allowed_hosts, ", "),
                                           "; add one with --http_allowed_hosts)"));
  }
  if (!h.origin.empty()) {
    const bool same = !h.host.empty() && (absl::EqualsIgnoreCase(h.origin, "http://" + h.host) ||
                                          absl::EqualsIgnoreCase(h.origin, "https://" + h.host));
    if (!same) {
      if (!ListIncludes(p.allowed_origins, h.origin)) {
        return absl::PermissionDeniedError(
            absl::StrCat("cross-origin request from ", ForTerminal(h.origin),
                         " refused; allow an origin with --http_allowed_origins"));
      }
      *cors_origin = h.origin;
    }
  }
  if (h.method == "POST" && (h.has_body || !h.content_type.empty())) {
    const std::string type = absl::AsciiStrToLower(absl::StripAsciiWhitespace(
        absl::string_view(h.content_type)
            .substr(0, std::min(h.content_type.find(';'), h.content_type.size()))));
    if (type != "application/json") {
      return FieldError("Content-Type", absl::StrCat("\"", ForTerminal(h.content_type),
                                                     "\": POST bodies must be application/json"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckFraming(const HttpHeaders& h) {
  if (h.content_length_count > 1) {
    return FieldError("Content-Length", absl::StrCat("sent ", h.content_length_count,
                                                     " times; a request has one length"));
  }
  for (const std::string& v : h.content_lengths) {
    // Digits only (RFC 9112 section 6.3): "+5", "5, 5", " 5" and "0x5" each read two ways.
    if (v.empty() || v.size() > 18 || !std::all_of(v.begin(), v.end(), absl::ascii_isdigit)) {
      return FieldError("Content-Length",
                        absl::StrCat("\"", ForTerminal(v), "\": a length is decimal digits only"));
    }
  }
  if (h.transfer_encoding && h.content_length_count > 0) {
    return FieldError("Transfer-Encoding",
                      "sent with Content-Length; a request has one way to say its length");
  }
  if (h.host_count > 1) {
    return FieldError("Host", absl::StrCat("sent ", h.host_count, " times; a request has one"));
  }
  if (h.host_count == 0 && h.http_version == "1.1") {
    return FieldError("Host", "missing; an HTTP/1.1 request names its host");
  }
  if (h.space_before_colon) {
    return FieldError("headers", "a header name is followed by a space before its colon");
  }
  return absl::OkStatus();
}

std::string BearerAuthorization(absl::string_view header) {
  absl::string_view v = absl::StripAsciiWhitespace(header);
  if (!absl::ConsumePrefix(&v, "Basic ")) return std::string(header);
  std::string decoded;
  if (!absl::Base64Unescape(absl::StripAsciiWhitespace(v), &decoded)) return std::string(header);
  const size_t colon = decoded.find(':');
  if (colon == std::string::npos) return std::string(header);
  std::string out = absl::StrCat("Bearer ", decoded.substr(colon + 1));
  // The token goes on as gRPC metadata: printable ASCII only (ReadRequest's rule).
  for (unsigned char ch : out) {
    if (ch < 0x20 || ch > 0x7E) return std::string(header);
  }
  return out;
}

absl::StatusOr<std::string> StaticFileFor(const std::string& root, const std::string& path,
                                          std::string* mime) {
  std::string rel = path == "/" || path.empty() ? "/index.html" : path;
  if (rel.find('\0') != std::string::npos || rel[0] != '/') {
    return absl::NotFoundError("no such file");
  }
  std::filesystem::path file(root);
  for (absl::string_view seg : absl::StrSplit(absl::string_view(rel).substr(1), '/')) {
    if (seg.empty() || seg[0] == '.' || absl::StrContains(seg, '\\')) {
      return absl::NotFoundError("no such file");  // dotfiles, "..", "//" and Windows separators
    }
    file /= std::string(seg);
    std::error_code ec;
    const auto st = std::filesystem::symlink_status(file, ec);
    if (ec || std::filesystem::is_symlink(st)) return absl::NotFoundError("no such file");
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(file, ec)) || ec) {
    return absl::NotFoundError("no such file");
  }
  const std::string ext = absl::AsciiStrToLower(file.extension().string());
  for (const auto& [e, m] : kMimeTypes) {
    if (ext == e) {
      *mime = m;
      return file.string();
    }
  }
  return absl::NotFoundError("no such file");
}

}  // namespace wavecrest
