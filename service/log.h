// Structured logs: one JSON object per line on stderr ({"ts":..., "level":..., "msg":..., ...}).
#ifndef WAVECREST_SERVICE_LOG_H_
#define WAVECREST_SERVICE_LOG_H_

#include <initializer_list>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"

namespace wavecrest {

using LogField = std::pair<absl::string_view, std::string>;

void LogInfo(absl::string_view msg, std::initializer_list<LogField> fields = {});
void LogWarning(absl::string_view msg, std::initializer_list<LogField> fields = {});
void LogError(absl::string_view msg, std::initializer_list<LogField> fields = {});

// Sets the "component" field of every line ("server", "worker").
void SetLogComponent(absl::string_view component);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_LOG_H_
