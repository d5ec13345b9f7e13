// The CLI's command line: commands, the flags each takes, per-command help, and parsing against
// the program's Abseil flags with every usage error reported as such (exit 2 in main), never as
// Abseil's own exit 1.
#ifndef WAVECREST_CLIENT_ARGS_H_
#define WAVECREST_CLIENT_ARGS_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace wavecrest {

struct CommandInfo {
  std::string name;
  std::string summary;             // one paragraph for the global help
  std::string usage;               // e.g. "wavecrest analyze --model FILE [flags]"
  std::vector<std::string> flags;  // the flags it takes (Abseil names, '_' spelling)
};

// Every command, in the order the global help lists them.
const std::vector<CommandInfo>& Commands();
const CommandInfo* FindCommand(const std::string& name);

struct ParsedArgs {
  std::string command;                  // empty when only --help or --version was asked
  std::vector<std::string> positional;  // after the command
  std::set<std::string> given;          // flags on the command line ('_' spelling)
  bool help = false;
  bool version = false;
};

// Parses argv (argv[0] is the program): "--name=value", "--name value", "--flag"/"--noflag" for
// booleans, '-' or '_' inside names, "--" ends the flags. Sets each flag through Abseil's
// reflection. INVALID_ARGUMENT, naming the flag, for an unknown flag (with the nearest known
// name), a flag the command does not take (with the commands that do), a missing or bad value.
absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& argv);

// `wavecrest --help`: the commands. `wavecrest COMMAND --help`: that command's flags only.
std::string GlobalHelp();
std::string CommandHelp(const CommandInfo& command);

// "wavecrest 0.1.0 (commit ..., RelWithDebInfo, CUDA 13.0.88)".
std::string VersionLine();

}  // namespace wavecrest

#endif  // WAVECREST_CLIENT_ARGS_H_
