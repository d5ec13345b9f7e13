#include "service/text.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace wavecrest {
namespace {

// The well-formed UTF-8 byte sequences (Unicode 15, table 3-7): the allowed range of the second
// byte depends on the first; later bytes are 80..BF.
struct Lead {
  int length;  // 0: not a lead byte
  uint8_t second_lo, second_hi;
};

Lead LeadOf(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};  // no surrogates
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};  // nothing above U+10FFFF
  return {0, 0, 0};
}

// The sequence at s[i]: its length when well-formed (returns true), else the length of its
// maximal ill-formed subpart, at least 1 (returns false).
bool Sequence(absl::string_view s, size_t i, size_t* length) {
  const Lead lead = LeadOf(static_cast<uint8_t>(s[i]));
  if (lead.length == 0) {
    *length = 1;
    return false;
  }
  size_t n = 1;
  for (; n < static_cast<size_t>(lead.length); ++n) {
    if (i + n >= s.size()) break;
    const uint8_t b = static_cast<uint8_t>(s[i + n]);
    const uint8_t lo = n == 1 ? lead.second_lo : 0x80, hi = n == 1 ? lead.second_hi : 0xBF;
    if (b < lo || b > hi) break;
  }
  *length = n;
  return n == static_cast<size_t>(lead.length);
}

// The code point of the well-formed sequence s[i, i+length).
uint32_t CodePoint(absl::string_view s, size_t i, size_t length) {
  const auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(s[i + k])); };
  switch (length) {
    case 1:
      return byte(0);
    case 2:
      return (byte(0) & 0x1F) << 6 | (byte(1) & 0x3F);
    case 3:
      return (byte(0) & 0x0F) << 12 | (byte(1) & 0x3F) << 6 | (byte(2) & 0x3F);
    default:
      return (byte(0) & 0x07) << 18 | (byte(1) & 0x3F) << 12 | (byte(2) & 0x3F) << 6 |
             (byte(3) & 0x3F);
  }
}

constexpr absl::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

size_t FirstInvalidUtf8(absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = 0;
    if (!Sequence(s, i, &n)) return i;
    i += n;
  }
  return absl::string_view::npos;
}

std::string ToValidUtf8(absl::string_view s) {
  if (IsValidUtf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    size_t n = 0;
    if (Sequence(s, i, &n)) {
      absl::StrAppend(&out, s.substr(i, n));
    } else {
      absl::StrAppend(&out, kReplacement);
    }
    i += n;
  }
  return out;
}

std::string ForTerminal(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = 0;
    if (!Sequence(s, i, &n)) {
      for (size_t k = 0; k < n; ++k) {
        absl::StrAppendFormat(&out, "\\x%02x", static_cast<uint8_t>(s[i + k]));
      }
    } else {
      const uint32_t c = CodePoint(s, i, n);
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
        absl::StrAppendFormat(&out, "\\x%02x", c);
      } else if (c >= 0x80 && c <= 0x9F) {
        absl::StrAppendFormat(&out, "\\u%04x", c);
      } else {
        absl::StrAppend(&out, s.substr(i, n));
      }
    }
    i += n;
  }
  return out;
}

std::string JsonText(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace wavecrest
