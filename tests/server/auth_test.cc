// Who may call what (server/auth.h): the tokens file and its refusals, the bearer check for each
// role, and which peers count as this host when there are no tokens.
#include "server/auth.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

constexpr char kClient[] = "client-token-0123456789";
constexpr char kAdmin[] = "admin-token-0123456789";

class AuthTest : public ::testing::Test {
 protected:
  AuthTest()
      : dir_(std::filesystem::temp_directory_path() /
             ("wavecrest-auth-test-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::create_directories(dir_);
  }
  ~AuthTest() override { std::filesystem::remove_all(dir_); }

  // A tokens file holding `text`, with `mode`.
  std::string TokensFile(const std::string& text, mode_t mode = 0600) {
    const std::string path = (dir_ / "tokens").string();
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
    return path;
  }

  std::filesystem::path dir_;
};

absl::Status CheckBearer(const Auth& auth, const std::string& value, Role role,
                         absl::string_view peer = "ipv4:10.0.0.7:1234") {
  const absl::string_view v(value);
  return auth.CheckAuthorization(&v, peer, role);
}

TEST_F(AuthTest, ATokensFileGivesEachTokenItsRole) {
  absl::StatusOr<Auth> auth = Auth::FromTokensFile(TokensFile(
      absl::StrCat("# the team's tokens\n\n", kClient, " client\n  ", kAdmin, "   admin  \n")));
  ASSERT_TRUE(auth.ok()) << auth.status();
  EXPECT_TRUE(auth->enabled());
  EXPECT_TRUE(CheckBearer(*auth, absl::StrCat("Bearer ", kClient), Role::kClient).ok());
  EXPECT_TRUE(CheckBearer(*auth, absl::StrCat("Bearer ", kAdmin), Role::kClient).ok());
  EXPECT_TRUE(CheckBearer(*auth, absl::StrCat("Bearer ", kAdmin), Role::kAdmin).ok());
  EXPECT_EQ(CheckBearer(*auth, absl::StrCat("Bearer ", kClient), Role::kAdmin).code(),
            absl::StatusCode::kPermissionDenied);
}

TEST_F(AuthTest, WithTokensEveryCallNeedsAKnownBearerToken) {
  const Auth auth = *Auth::FromTokensFile(TokensFile(absl::StrCat(kClient, " client\n")));
  // From this host too: tokens on means tokens for everyone.
  EXPECT_EQ(auth.CheckAuthorization(nullptr, "ipv4:127.0.0.1:1", Role::kClient).code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(CheckBearer(auth, kClient, Role::kClient).code(), absl::StatusCode::kUnauthenticated)
      << "no Bearer prefix";
  EXPECT_EQ(CheckBearer(auth, absl::StrCat("Basic ", kClient), Role::kClient).code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(CheckBearer(auth, "Bearer someone-elses-token-000", Role::kClient).code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(CheckBearer(auth, absl::StrCat("Bearer ", kClient, "x"), Role::kClient).code(),
            absl::StatusCode::kUnauthenticated);
}

TEST_F(AuthTest, BadTokensFilesAreRefusedNamingTheLine) {
  absl::StatusOr<Auth> bad =
      Auth::FromTokensFile(TokensFile(absl::StrCat(kClient, " client\n", kAdmin, " superuser\n")));
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("tokens:2:"));

  bad = Auth::FromTokensFile(TokensFile("short-token client\n"));
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("at least 16 characters"));

  bad = Auth::FromTokensFile(TokensFile("# nobody\n\n"));
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("no tokens"));

  EXPECT_FALSE(Auth::FromTokensFile((dir_ / "missing").string()).ok());
}

TEST_F(AuthTest, ATokensFileEveryUserCanReadIsRefusedWithTheFix) {
  absl::StatusOr<Auth> open =
      Auth::FromTokensFile(TokensFile(absl::StrCat(kClient, " client\n"), 0644));
  ASSERT_EQ(open.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(open.status().message(), HasSubstr("chmod 600"));
}

TEST(AuthNoTokensTest, AnyoneIsAClientAndOnlyThisHostAnAdmin) {
  const Auth none;
  EXPECT_FALSE(none.enabled());
  EXPECT_TRUE(none.CheckAuthorization(nullptr, "ipv4:10.0.0.7:1234", Role::kClient).ok());
  EXPECT_TRUE(none.CheckAuthorization(nullptr, "ipv4:127.0.0.1:1234", Role::kAdmin).ok());
  EXPECT_TRUE(none.CheckAuthorization(nullptr, "unix:/tmp/wavecrest.sock", Role::kAdmin).ok());
  EXPECT_EQ(none.CheckAuthorization(nullptr, "ipv4:10.0.0.7:1234", Role::kAdmin).code(),
            absl::StatusCode::kPermissionDenied);
  // A token sent to a server without tokens changes nothing.
  EXPECT_EQ(CheckBearer(none, "Bearer whatever-token-000000", Role::kAdmin).code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(AuthNoTokensTest, LocalPeersAreLoopbackAndUnixSocketsOnly) {
  for (const char* peer : {"unix:/run/wavecrest.sock", "ipv4:127.0.0.1:5", "ipv4:127.8.9.1:5",
                           "ipv6:[::1]:5", "ipv6:%5B::1%5D:5"}) {
    EXPECT_TRUE(LocalPeer(peer)) << peer;
  }
  for (const char* peer : {"ipv4:10.0.0.7:5", "ipv4:128.0.0.1:5", "ipv6:[::2]:5",
                           "ipv6:[fe80::1]:5", "inproc:0x1234", "", "127.0.0.1"}) {
    EXPECT_FALSE(LocalPeer(peer)) << peer;
  }
}

}  // namespace
}  // namespace wavecrest
