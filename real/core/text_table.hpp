// A plain-text table with right-aligned columns, for the readable output of each subcommand.
#pragma once

#include <string>
#include <vector>

namespace tpsim::real {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  // A row must have one cell per header (std::invalid_argument otherwise: a caller bug).
  void add_row(std::vector<std::string> cells);
  std::string str() const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// "%.2f"-style formatting of one number.
std::string fixed(double value, int decimals);

}  // namespace tpsim::real
