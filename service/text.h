// Text that crosses a trust boundary: bytes a client sent that the service echoes back (HTTP
// error replies, logs) and bytes a server sent that the CLI prints to a terminal.
#ifndef WAVECREST_SERVICE_TEXT_H_
#define WAVECREST_SERVICE_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "nlohmann/json_fwd.hpp"

namespace wavecrest {

// The offset of the first byte that does not begin a well-formed UTF-8 sequence (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF, no truncated sequence), or npos when
// all of `s` is UTF-8.
size_t FirstInvalidUtf8(absl::string_view s);
inline bool IsValidUtf8(absl::string_view s) { return FirstInvalidUtf8(s) == absl::string_view::npos; }

// `s` with each maximal ill-formed subsequence replaced by U+FFFD, as the Unicode standard's
// "substitution of maximal subparts" recommends. Valid input comes back unchanged.
std::string ToValidUtf8(absl::string_view s);

// `s` made safe to print on a terminal: C0 controls other than '\n' and '\t', DEL, C1 controls
// (U+0080..U+009F, which some terminals honour as CSI) and bytes that are not UTF-8 become
// visible escapes ("\x1b", "\u009b"). Printable text, UTF-8 included, is unchanged.
std::string ForTerminal(absl::string_view s);

// JSON text of `j` (indent as nlohmann::json::dump takes it: -1 for one line). Strings that are
// not UTF-8 (a name or path a client sent) get U+FFFD where dump() alone would throw
// (type_error 316).
std::string JsonText(const nlohmann::json& j, int indent = -1);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_TEXT_H_
