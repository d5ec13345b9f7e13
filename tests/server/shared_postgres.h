// One throwaway PostgreSQL cluster for the server unit tests of the PostgreSQL store
// (pg_*_test.cc), started by the first test that asks for it and stopped when the binary exits,
// and a fresh database for each test. Where no cluster can start, SharedPostgres().why_not()
// says why and those tests skip (SKIP_WITHOUT_POSTGRES).
#ifndef WAVECREST_TESTS_SERVER_SHARED_POSTGRES_H_
#define WAVECREST_TESTS_SERVER_SHARED_POSTGRES_H_

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/fleet.h"
#include "tests/integration/postgres.h"

namespace wavecrest::testing {

inline TempPostgres& SharedPostgres() {
  static TempPostgres cluster;
  return cluster;
}

// A new, empty database named after the running test (within PostgreSQL's 63 characters).
inline std::string NewTestDatabase() {
  static int made = 0;
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name =
      absl::AsciiStrToLower(absl::StrCat("t", ++made, "_", test ? test->name() : "db"));
  return SharedPostgres().NewDatabase(name.substr(0, 50));
}

}  // namespace wavecrest::testing

#endif  // WAVECREST_TESTS_SERVER_SHARED_POSTGRES_H_
