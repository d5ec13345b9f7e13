// Paths into the source and build trees (WAVECREST_SOURCE_DIR, WAVECREST_BINARY_DIR: every test
// target defines both), for tests that read committed files or start the programs.
#ifndef WAVECREST_TESTS_TEST_PATHS_H_
#define WAVECREST_TESTS_TEST_PATHS_H_

#include <string>

namespace wavecrest::testing {

inline std::string BinaryPath(const std::string& rel) {
  return std::string(WAVECREST_BINARY_DIR) + "/" + rel;
}
inline std::string SourcePath(const std::string& rel) {
  return std::string(WAVECREST_SOURCE_DIR) + "/" + rel;
}

}  // namespace wavecrest::testing

#endif  // WAVECREST_TESTS_TEST_PATHS_H_
