// CSV cells quoted where they hold a comma, a quote or a newline; absent values left empty.
#include "cli/report/results_csv.hpp"

namespace tpsim::cli {
namespace {

using Json = nlohmann::ordered_json;

const std::vector<std::string>& columns() {
  static const std::vector<std::string> names = {"variant",
                                                 "tp_mode",
                                                 "chunks",
                                                 "chunks_chosen_by",
                                                 "time_s",
                                                 "compute_s",
                                                 "comm_s",
                                                 "exposed_comm_s",
                                                 "overlap",
                                                 "idle_s",
                                                 "speedup",
                                                 "tokens_per_s",
                                                 "tokens_per_s_per_gpu",
                                                 "mfu",
                                                 "pipeline_bubble_fraction",
                                                 "exposed_data_comm_s",
                                                 "ttft_s",
                                                 "tpot_s",
                                                 "skewed_time_s",
                                                 "memory_per_gpu_bytes",
                                                 "fits_memory"};
  return names;
}

std::string csv_cell(const Json& value) {
  if (value.is_null()) return "";
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

std::string results_csv(const std::vector<CsvPoint>& points) {
  std::string csv = "point";
  if (!points.empty()) {
    for (const auto& [axis, value] : points.front().values) csv += "," + csv_cell(axis);
  }
  for (const std::string& column : columns()) csv += "," + column;
  csv += "\n";
  for (const CsvPoint& point : points) {
    for (const Json& row : point.rows) {
      csv += std::to_string(point.index);
      for (const auto& [axis, value] : point.values) csv += "," + csv_cell(Json(value));
      for (const std::string& column : columns()) csv += "," + csv_cell(row.contains(column) ? row[column] : Json());
      csv += "\n";
    }
  }
  return csv;
}

}  // namespace tpsim::cli
