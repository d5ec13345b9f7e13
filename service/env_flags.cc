#include "service/env_flags.h"

#include <cstdio>
#include <cstdlib>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "service/log.h"

namespace wavecrest {

absl::Status ApplyFlagsFromEnvironment(absl::string_view defined_in,
                                       std::vector<std::string>* applied) {
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!absl::StrContains(flag->Filename(), defined_in)) continue;
    const std::string var = absl::StrCat("WAVECREST_", absl::AsciiStrToUpper(name));
    const char* value = std::getenv(var.c_str());
    if (value == nullptr) continue;
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat(var, " (--", name, "): \"", value, "\" is not a valid value: ", error));
    }
    if (applied != nullptr) applied->push_back(absl::StrCat(var, "=--", name));
  }
  return absl::OkStatus();
}

std::vector<char*> ParseFlagsWithEnvironment(int argc, char** argv, absl::string_view program,
                                             absl::string_view defined_in,
                                             const std::function<std::string()>& log_level) {
  auto fail = [&](const absl::Status& st) {
    std::fprintf(stderr, "%s: %s\n", std::string(program).c_str(),
                 std::string(st.message()).c_str());
    std::exit(2);
  };
  std::vector<std::string> from_env;
  if (absl::Status st = ApplyFlagsFromEnvironment(defined_in, &from_env); !st.ok()) fail(st);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (absl::Status st = ConfigureLogging(log_level()); !st.ok()) fail(st);
  for (const std::string& e : from_env) LogInfo("flag from the environment", {{"set", e}});
  return args;
}

}  // namespace wavecrest
