#include "service/env_flags.h"

#include <cstdlib>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

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

}  // namespace wavecrest
