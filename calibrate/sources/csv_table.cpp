// CSV parsing with quoted fields; errors name file:line.
#include "calibrate/sources/csv_table.hpp"

#include <cstdint>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/limits.hpp"

namespace tpsim::calibrate {
namespace {

std::vector<std::vector<std::string>> split_records(const std::string& text) {
  std::vector<std::vector<std::string>> records(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      records.back().push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      records.back().push_back(std::move(field));
      field.clear();
      records.emplace_back();
    } else if (c != '\r') {
      field += c;
    }
  }
  if (!field.empty() || !records.back().empty()) records.back().push_back(field);
  if (records.back().empty()) records.pop_back();
  return records;
}

}  // namespace

CsvTable CsvTable::read_file(const std::string& path) {
  return parse(read_input_file(path, "CSV", model::kMaxTextFileBytes), path);
}

CsvTable CsvTable::parse(const std::string& text, const std::string& origin) {
  CsvTable table;
  table.origin_ = origin;
  auto records = split_records(text);
  if (records.empty()) throw InputError(origin + ": empty CSV file (expected a header line)");
  table.header_ = records.front();
  for (size_t i = 1; i < records.size(); ++i) {
    if (records[i].size() != table.header_.size()) {
      throw InputError(origin + ":" + std::to_string(i + 1) + ": " + std::to_string(records[i].size()) +
                       " fields, the header has " + std::to_string(table.header_.size()));
    }
    std::map<std::string, std::string> row;
    for (size_t c = 0; c < table.header_.size(); ++c) row[table.header_[c]] = records[i][c];
    table.rows_.push_back(std::move(row));
  }
  return table;
}

const std::string& CsvTable::at(size_t row, const std::string& column) const {
  const auto& cells = rows_.at(row);
  const auto it = cells.find(column);
  if (it == cells.end()) throw InputError(origin_ + ": no column '" + column + "'");
  return it->second;
}

double CsvTable::number(size_t row, const std::string& column) const {
  const std::string& cell = at(row, column);
  try {
    size_t used = 0;
    const double value = std::stod(cell, &used);
    if (used == cell.size()) return value;
  } catch (const std::exception&) {
  }
  throw InputError(origin_ + ":" + std::to_string(row + 2) + ": column '" + column + "' is not a number: '" + cell +
                   "'");
}

int CsvTable::integer(size_t row, const std::string& column) const {
  const double value = number(row, column);
  if (!(value >= 1 && value <= INT32_MAX) || value != static_cast<double>(static_cast<int>(value))) {
    throw InputError(origin_ + ":" + std::to_string(row + 2) + ": column '" + column +
                     "' is not a whole number >= 1: '" + at(row, column) + "'");
  }
  return static_cast<int>(value);
}

}  // namespace tpsim::calibrate
