// The HTTP gateway's browser-safety rules and static-file rules (server/http_gateway.h), without
// a socket: which requests are refused and why, and which files may be served.
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/http_policy.h"
#include "service/errors.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

HttpHeaders Post(const std::string& content_type, const std::string& origin = "",
                 const std::string& host = "127.0.0.1:8080") {
  HttpHeaders h;
  h.method = "POST";
  h.path = "/v1/analyze";
  h.host = host;
  h.origin = origin;
  h.content_type = content_type;
  h.has_body = true;
  return h;
}

TEST(HttpPolicyTest, PostBodiesMustBeJson) {
  HttpPolicy p{{}, DefaultAllowedHosts("127.0.0.1:8080")};
  std::string cors;
  EXPECT_TRUE(CheckBrowserPolicy(Post("application/json"), p, &cors).ok());
  EXPECT_TRUE(CheckBrowserPolicy(Post("Application/JSON; charset=utf-8"), p, &cors).ok());
  for (const char* type : {"text/plain", "text/plain;charset=UTF-8",
                           "application/x-www-form-urlencoded", "multipart/form-data", ""}) {
    const absl::Status st = CheckBrowserPolicy(Post(type), p, &cors);
    ASSERT_FALSE(st.ok()) << type;
    EXPECT_EQ(ViolationsOf(st).at(0).field, "Content-Type") << type;
  }
  HttpHeaders get = Post("");
  get.method = "GET";
  get.has_body = false;
  EXPECT_TRUE(CheckBrowserPolicy(get, p, &cors).ok());
}

TEST(HttpPolicyTest, ARequestStatesItsLengthAndHostOnce) {
  HttpPolicy p{{}, DefaultAllowedHosts("127.0.0.1:8080")};
  std::string cors;
  HttpHeaders h = Post("application/json");
  h.content_length_count = 1;
  h.host_count = 1;
  EXPECT_TRUE(CheckBrowserPolicy(h, p, &cors).ok());
  h.content_length_count = 2;
  absl::Status st = CheckBrowserPolicy(h, p, &cors);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ViolationsOf(st).at(0).field, "Content-Length");
  EXPECT_THAT(st.message(), HasSubstr("sent 2 times"));
  h.content_length_count = 1;
  h.host_count = 3;
  st = CheckBrowserPolicy(h, p, &cors);
  EXPECT_EQ(ViolationsOf(st).at(0).field, "Host");
  EXPECT_THAT(st.message(), HasSubstr("sent 3 times"));
}

TEST(HttpPolicyTest, OnlyThisOriginAndTheAllowedOnesAndNeverAWildcard) {
  HttpPolicy p{{"https://dash.example.com"}, DefaultAllowedHosts("127.0.0.1:8080")};
  std::string cors = "stale";
  EXPECT_TRUE(CheckBrowserPolicy(Post("application/json", "http://127.0.0.1:8080"), p, &cors).ok());
  EXPECT_EQ(cors, "");  // same origin: no CORS header needed
  const absl::Status evil =
      CheckBrowserPolicy(Post("text/plain", "http://evil.example"), p, &cors);
  EXPECT_EQ(evil.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(evil.message(), HasSubstr("--http_allowed_origins"));
  EXPECT_EQ(CheckBrowserPolicy(Post("application/json", "null"), p, &cors).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(
      CheckBrowserPolicy(Post("application/json", "https://dash.example.com"), p, &cors).ok());
  EXPECT_EQ(cors, "https://dash.example.com");
}

TEST(HttpPolicyTest, HostMustBeOneThisServerAnswersTo) {
  HttpPolicy p{{}, DefaultAllowedHosts("127.0.0.1:8080")};
  std::string cors;
  for (const char* host : {"127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080"}) {
    EXPECT_TRUE(CheckBrowserPolicy(Post("application/json", "", host), p, &cors).ok()) << host;
  }
  // DNS rebinding: an attacker's name resolving to 127.0.0.1.
  const absl::Status st =
      CheckBrowserPolicy(Post("application/json", "", "rebind.attacker.example:8080"), p, &cors);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(ViolationsOf(st).at(0).field, "Host");
  // A wildcard listen address cannot know its names: any Host, unless the flag lists them.
  EXPECT_TRUE(DefaultAllowedHosts("0.0.0.0:8080").empty());
  EXPECT_THAT(DefaultAllowedHosts("10.1.2.3:8080"), ::testing::Contains("10.1.2.3"));
}

TEST(HttpPolicyTest, OnlyRegularFilesWithAKnownTypeUnderTheRootAreServed) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("wavecrest-static-" + std::to_string(getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "assets");
  std::ofstream(root / "index.html") << "<!doctype html>";
  std::ofstream(root / "assets" / "app.js") << "1";
  std::ofstream(root / ".env") << "SECRET=1";
  std::ofstream(root / "run.cgi") << "#!/bin/sh\necho hi\n";
  std::ofstream(root / "page.shtml") << "<!--#exec cmd=\"id\" -->";
  std::filesystem::create_symlink("/etc/hostname", root / "host.txt");
  std::filesystem::create_directory_symlink("/etc", root / "etc");
  std::string mime;
  EXPECT_EQ(*StaticFileFor(root, "/", &mime), (root / "index.html").string());
  EXPECT_THAT(mime, HasSubstr("text/html"));
  EXPECT_TRUE(StaticFileFor(root, "/assets/app.js", &mime).ok());
  EXPECT_THAT(mime, HasSubstr("javascript"));
  for (const char* bad : {"/.env", "/run.cgi", "/page.shtml", "/host.txt", "/etc/hostname",
                          "/assets", "/assets/", "/../etc/hostname", "/assets/../index.html",
                          "//index.html", "/missing.html", "/assets/.", "index.html"}) {
    EXPECT_FALSE(StaticFileFor(root, bad, &mime).ok()) << bad;
  }
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace wavecrest

namespace wavecrest {
namespace {

HttpHeaders Framed(std::vector<std::string> lengths, int hosts = 1, bool chunked = false) {
  HttpHeaders h;
  h.method = "POST";
  h.http_version = "1.1";
  h.content_lengths = std::move(lengths);
  h.content_length_count = static_cast<int>(h.content_lengths.size());
  h.host_count = hosts;
  h.transfer_encoding = chunked;
  return h;
}

std::string FramingField(const HttpHeaders& h) {
  const absl::Status st = CheckFraming(h);
  if (st.ok()) return "ok";
  const auto v = ViolationsOf(st);
  return v.empty() ? "?" : v[0].field;
}

TEST(HttpFramingTest, ALengthIsDigitsOnceAndNeverBesideChunked) {
  EXPECT_EQ(FramingField(Framed({"42"})), "ok");
  EXPECT_EQ(FramingField(Framed({})), "ok");
  EXPECT_EQ(FramingField(Framed({}, 1, /*chunked=*/true)), "ok");
  for (const char* bad : {"+42", "42, 42", " 42", "0x2a", "", "-1", "4 2", "1234567890123456789"}) {
    EXPECT_EQ(FramingField(Framed({bad})), "Content-Length") << bad;
  }
  EXPECT_EQ(FramingField(Framed({"42", "42"})), "Content-Length");
  EXPECT_EQ(FramingField(Framed({"42"}, 1, /*chunked=*/true)), "Transfer-Encoding");
}

TEST(HttpFramingTest, OneHostRequiredInHttp11AndNoSpaceBeforeAColon) {
  EXPECT_EQ(FramingField(Framed({}, 0)), "Host");
  EXPECT_EQ(FramingField(Framed({}, 2)), "Host");
  HttpHeaders old = Framed({}, 0);
  old.http_version = "1.0";
  EXPECT_EQ(FramingField(old), "ok");  // HTTP/1.0 has no Host requirement
  HttpHeaders spaced = Framed({"42"});
  spaced.space_before_colon = true;
  EXPECT_EQ(FramingField(spaced), "headers");
}

TEST(HttpFramingTest, BasicCredentialsBecomeTheBearerTokenTheServiceChecks) {
  EXPECT_EQ(BearerAuthorization("Bearer abc"), "Bearer abc");
  // base64("me:token-0123456789") and base64(":token") (no user name)
  EXPECT_EQ(BearerAuthorization("Basic bWU6dG9rZW4tMDEyMzQ1Njc4OQ=="), "Bearer token-0123456789");
  EXPECT_EQ(BearerAuthorization("Basic OnRva2Vu"), "Bearer token");
  // Not base64, no colon, or a token that is not printable: passed on as sent (and refused).
  EXPECT_EQ(BearerAuthorization("Basic !!!"), "Basic !!!");
  EXPECT_EQ(BearerAuthorization("Basic bm9jb2xvbg=="), "Basic bm9jb2xvbg==");
  EXPECT_EQ(BearerAuthorization("Basic OgE="), "Basic OgE=");  // ":\x01"
}

}  // namespace
}  // namespace wavecrest
