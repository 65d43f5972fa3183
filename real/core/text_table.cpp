// Column widths from the widest cell; two spaces between columns.
#include "real/core/text_table.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace tpsim::real {

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != headers_.size()) throw std::invalid_argument("table row with the wrong number of cells");
  rows_.push_back(std::move(cells));
}

std::string TextTable::str() const {
  std::vector<size_t> widths(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) {
    widths[c] = headers_[c].size();
    for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
  }
  auto line = [&widths](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      out += (c == 0 ? "" : "  ") + std::string(widths[c] - cells[c].size(), ' ') + cells[c];
    }
    return out + "\n";
  };
  std::string out = line(headers_);
  for (const auto& row : rows_) out += line(row);
  return out;
}

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

}  // namespace tpsim::real
