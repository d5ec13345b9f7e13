// Flags from the environment: WAVECREST_<FLAG> (upper case) sets --<flag> of this program before
// the command line is read, so the command line wins. For containers and orchestrators that
// configure by environment (deploy/k8s, deploy/compose).
#ifndef WAVECREST_SERVICE_ENV_FLAGS_H_
#define WAVECREST_SERVICE_ENV_FLAGS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace wavecrest {

// Applies WAVECREST_<NAME> for every flag defined in a source file whose path contains
// `defined_in` (e.g. "server/"), so Abseil's own flags are never touched. INVALID_ARGUMENT naming
// the variable and the flag when a value does not parse. `applied` gets "VAR=flag" entries.
absl::Status ApplyFlagsFromEnvironment(absl::string_view defined_in,
                                       std::vector<std::string>* applied = nullptr);

// A program's start: WAVECREST_<FLAG> for the flags defined under `defined_in`, then the command
// line (which wins), then the level from `log_level` (its --log_level flag, read after parsing).
// A bad variable or level prints "`program`: ..." and exits 2. Returns the positional arguments.
std::vector<char*> ParseFlagsWithEnvironment(int argc, char** argv, absl::string_view program,
                                             absl::string_view defined_in,
                                             const std::function<std::string()>& log_level);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_ENV_FLAGS_H_
