// Fixed-width text tables: pads each column to its widest cell.
#include "cli/report/text_table.hpp"

#include <algorithm>
#include <stdexcept>

namespace tpsim::cli {

std::string pad(const std::string& text, size_t width, bool left) {
  if (text.size() >= width) return text;
  const std::string fill(width - text.size(), ' ');
  return left ? text + fill : fill + text;
}

std::string text_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows,
                       size_t left_columns) {
  std::vector<size_t> widths(headers.size());
  for (size_t c = 0; c < headers.size(); ++c) widths[c] = headers[c].size();
  for (const auto& row : rows) {
    if (row.size() != headers.size()) throw std::logic_error("text_table: a row's cells differ from its headers");
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      const bool last = c + 1 == cells.size();
      const bool left = c < left_columns;
      out += (c == 0 ? "" : "  ") + (left && last ? cells[c] : pad(cells[c], widths[c], left));
    }
    return out + "\n";
  };
  std::string out = line(headers);
  for (const auto& row : rows) out += line(row);
  return out;
}

}  // namespace tpsim::cli
