// A small CSV reader (RFC 4180 quoting) for the public data tables: rows as column-name maps.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tpsim::calibrate {

class CsvTable {
 public:
  static CsvTable read_file(const std::string& path);
  static CsvTable parse(const std::string& text, const std::string& origin);

  size_t rows() const { return rows_.size(); }
  // The cell of `column` in `row`; throws InputError naming the file and line if the column is missing.
  const std::string& at(size_t row, const std::string& column) const;
  double number(size_t row, const std::string& column) const;
  // A whole number from 1 to 2^31 - 1 (a count or a dimension).
  int integer(size_t row, const std::string& column) const;

 private:
  std::string origin_;
  std::vector<std::string> header_;
  std::vector<std::map<std::string, std::string>> rows_;
};

}  // namespace tpsim::calibrate
