// Runs one of the CLI's commands in-process for the tests of tests/client/: its exit code and
// what it wrote to stdout and stderr.
#ifndef WAVECREST_TESTS_CLIENT_CLI_RUN_H_
#define WAVECREST_TESTS_CLIENT_CLI_RUN_H_

#include <ostream>
#include <sstream>
#include <string>

#include "client/cli.h"

namespace wavecrest {

struct CommandRun {
  int code = 0;
  std::string out, err;
};

// `command` is a cli::Do* entry point (client/cli_commands.h), or RunCli.
inline CommandRun RunCommandForTest(int (*command)(const CliOptions&, std::ostream&,
                                                   std::ostream&),
                                    const CliOptions& o) {
  std::ostringstream out, err;
  const int code = command(o, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace wavecrest

#endif  // WAVECREST_TESTS_CLIENT_CLI_RUN_H_
