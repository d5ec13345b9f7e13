// A plain text table for the CLI: the first column left-aligned, the rest right-aligned, a rule
// under the header.
#ifndef WAVECREST_CLIENT_TEXT_TABLE_H_
#define WAVECREST_CLIENT_TEXT_TABLE_H_

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace wavecrest {

// A plain left/right aligned text table.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : rows_{std::move(header)} {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render() const {
    std::vector<size_t> width(rows_[0].size(), 0);
    for (const auto& r : rows_) {
      for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
    }
    std::string out;
    for (size_t ri = 0; ri < rows_.size(); ++ri) {
      const auto& r = rows_[ri];
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        const size_t pad = width[i] - r[i].size();
        if (i == 0) {
          absl::StrAppend(&line, r[i], std::string(pad, ' '));
        } else {
          absl::StrAppend(&line, "  ", std::string(pad, ' '), r[i]);
        }
      }
      absl::StrAppend(&out, line, "\n");
      if (ri == 0) {
        size_t total = 0;
        for (size_t w : width) total += w + 2;
        absl::StrAppend(&out, std::string(total - 2, '-'), "\n");
      }
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace wavecrest

#endif  // WAVECREST_CLIENT_TEXT_TABLE_H_
