// libFuzzer target: what the HTTP gateway does with a request before it reaches the service (no
// socket): the framing rules, the UTF-8 check, the browser policy (Host, Origin, Content-Type),
// the static-file rules, the JSON limits and decoding of each route (parse-model and export-model
// handled whole), and the error reply every refusal is rendered as.
// Input: six fields separated by '\n' (method, path, host, origin, content type), then the body.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "server/http_gateway.h"
#include "server/http_reply.h"
#include "service/advisor_logic.h"
#include "service/text.h"

namespace {

const std::string& StaticRoot() {
  static const std::string root = [] {
    const auto dir = std::filesystem::temp_directory_path() / "wavecrest-fuzz-static";
    std::filesystem::create_directories(dir / "assets");
    std::ofstream(dir / "index.html") << "<!doctype html>";
    std::ofstream(dir / "assets" / "app.js") << "1";
    std::ofstream(dir / ".secret") << "x";
    std::error_code ec;
    std::filesystem::create_symlink("/etc/hostname", dir / "link.txt", ec);
    return dir.string();
  }();
  return root;
}

// Every error body is JSON that parses back, whatever bytes the status holds.
void CheckErrorBody(const absl::Status& st) {
  const std::string body = wavecrest::ErrorBody(st);
  if (nlohmann::json::parse(body, nullptr, false).is_discarded()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> f = absl::StrSplit(input, absl::MaxSplits('\n', 5));
  f.resize(6);
  wavecrest::HttpHeaders h;
  h.method = f[0];
  h.path = f[1];
  h.host = f[2];
  h.origin = f[3];
  h.content_type = f[4];
  const std::string& body = f[5];
  h.has_body = !body.empty();
  const bool utf8 = wavecrest::IsValidUtf8(h.path) && wavecrest::IsValidUtf8(body);
  wavecrest::HttpPolicy policy{{"https://dash.example.com"},
                               wavecrest::DefaultAllowedHosts("127.0.0.1:8080")};
  // The content type's field doubles as Content-Length values (comma-separated) for the framing
  // rules.
  h.content_lengths = absl::StrSplit(f[4], ',');
  h.content_length_count = static_cast<int>(h.content_lengths.size());
  h.host_count = h.host.empty() ? 0 : 1;
  h.http_version = "1.1";
  const absl::Status framed = wavecrest::CheckFraming(h);
  if (!framed.ok()) CheckErrorBody(framed);
  h.content_length_count = 1;
  std::string cors;
  const absl::Status allowed = wavecrest::CheckBrowserPolicy(h, policy, &cors);
  if (!allowed.ok()) CheckErrorBody(allowed);
  if (!cors.empty() && cors != h.origin) __builtin_trap();  // only the caller's own origin
  std::string mime;
  absl::StatusOr<std::string> file = wavecrest::StaticFileFor(StaticRoot(), h.path, &mime);
  if (file.ok()) {
    // Never outside the root, never a dotfile or a link.
    if (file->rfind(StaticRoot() + "/", 0) != 0) __builtin_trap();
    if (file->find("/.") != std::string::npos || file->find("link.txt") != std::string::npos) {
      __builtin_trap();
    }
  }
  if (!utf8) return 0;  // the gateway answers 400 before decoding
  absl::StatusOr<std::unique_ptr<google::protobuf::Message>> req =
      wavecrest::DecodeApiRequest(h.path, body);
  if (!req.ok()) {
    CheckErrorBody(req.status());
    return 0;
  }
  if (auto* a = dynamic_cast<wavecrest::v1::AnalyzeRequest*>(req->get())) {
    absl::StatusOr<wavecrest::v1::AnalyzeResponse> r = wavecrest::HandleAnalyze(*a);
    if (!r.ok()) CheckErrorBody(r.status());
  }
  if (auto* p = dynamic_cast<wavecrest::v1::ParseModelRequest*>(req->get())) {
    absl::StatusOr<wavecrest::v1::ParseModelResponse> r = wavecrest::HandleParseModel(*p);
    if (!r.ok()) CheckErrorBody(r.status());
  }
  if (auto* e = dynamic_cast<wavecrest::v1::ExportModelRequest*>(req->get())) {
    absl::StatusOr<wavecrest::v1::ExportModelResponse> r = wavecrest::HandleExportModel(*e);
    if (!r.ok()) CheckErrorBody(r.status());
  }
  return 0;
}
