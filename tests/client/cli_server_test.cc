// The commands that only ask a server (client/cli_server.cc): each says it needs --server, naming
// itself, before it dials anything.
#include <string>

#include "client/cli_commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/client/cli_run.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

TEST(CliServerTest, EveryServerCommandNeedsAServer) {
  const std::pair<const char*, int (*)(const CliOptions&, std::ostream&, std::ostream&)>
      commands[] = {{"devices", cli::DoDevices},
                    {"health", cli::DoHealth},
                    {"export-measurements", cli::DoExportMeasurements},
                    {"recalibrate", cli::DoRecalibrate}};
  for (const auto& [name, command] : commands) {
    CliOptions o;
    o.command = name;
    const CommandRun r = RunCommandForTest(command, o);
    EXPECT_EQ(r.code, 2) << name;
    EXPECT_THAT(r.err, HasSubstr(std::string("--server: required for '") + name + "'")) << name;
    EXPECT_EQ(r.out, "") << name;
  }
}

}  // namespace
}  // namespace wavecrest
