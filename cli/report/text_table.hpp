// Fixed-width text tables for the reports: each column as wide as its widest cell or header.
#pragma once

#include <string>
#include <vector>

namespace tpsim::cli {

// `text` padded with spaces to `width`, on the right (`left`: left-aligned) or on the left.
std::string pad(const std::string& text, size_t width, bool left);

// The header line and one line per row, columns two spaces apart; the first `left_columns` columns
// left-aligned (names, axis values), the rest right-aligned (numbers). Every row has the headers' cells.
std::string text_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows,
                       size_t left_columns = 1);

}  // namespace tpsim::cli
