// Journal lines, torn-line recovery, fingerprints, and the CSV / JSON-lines result files.
#include "cli/commands/sweep_journal.hpp"

#include "cli/report/results_csv.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/limits.hpp"
#include "cli/output_file.hpp"

namespace tpsim::cli {
namespace {

using Json = nlohmann::ordered_json;
constexpr const char* kJournal = "journal.jsonl";

std::string read_all(const std::string& path) {
  return read_input_file(path, "sweep journal", model::kMaxTextFileBytes);
}

// Result columns that hold a non-negative number (or null: not applicable).
const std::vector<std::string> kMeasureColumns = {
    "time_s", "compute_s", "comm_s", "exposed_comm_s",      "idle_s", "speedup", "tokens_per_s",
    "ttft_s", "tpot_s",    "chunks", "memory_per_gpu_bytes"};

// A plan candidate's first-run answer (plan/search_steps.hpp): the least rank value its first run allows.
bool first_run_answer(const Json& row) {
  if (!row.is_object() || row.size() != 1 || !row.contains("first_run_bound")) return false;
  const Json& value = row["first_run_bound"];
  if (!value.is_number() || !std::isfinite(value.get<double>())) {
    throw std::runtime_error("\"first_run_bound\" is " + echo_value(value.dump()) + ", not a finite number");
  }
  return true;
}

// A journal's rows as the sweep wrote them: objects with a variant name and non-negative finite times, or a plan
// candidate's first-run answer.
void check_rows(const Json& rows) {
  if (!rows.is_array()) throw std::runtime_error("\"rows\" is not a list");
  for (const Json& row : rows) {
    if (first_run_answer(row)) continue;
    if (!row.is_object() || !row.contains("variant") || !row["variant"].is_string()) {
      throw std::runtime_error("a row is not an object with a \"variant\" name");
    }
    if (!row.contains("time_s") || row["time_s"].is_null()) throw std::runtime_error("a row has no \"time_s\"");
    for (const std::string& column : kMeasureColumns) {
      if (!row.contains(column) || row[column].is_null()) continue;
      const Json& value = row[column];
      if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) {
        throw std::runtime_error("\"" + column + "\" is " + echo_value(value.dump()) + ", not a number >= 0");
      }
    }
  }
}

Json entry_json(const std::string& fingerprint, size_t points, const JournalEntry& entry) {
  Json line;
  line["tpsim_sweep"] = 1;
  line["fingerprint"] = fingerprint;
  line["points"] = points;
  line["index"] = entry.index;
  Json values = Json::object();
  for (const auto& [axis, value] : entry.values) values[axis] = value;
  line["point"] = values;
  line["rows"] = entry.rows;
  return line;
}

// A count the journal states: a non-negative JSON integer below `end`.
size_t count_below(const Json& line, const char* key, size_t end) {
  const Json& value = line.at(key);
  if (!value.is_number_unsigned() || value.get<uint64_t>() >= end) {
    throw std::runtime_error("\"" + std::string(key) + "\" is " + echo_value(value.dump()) + ", not an integer below " +
                             std::to_string(end));
  }
  return value.get<size_t>();
}

JournalEntry entry_of(const Json& line, size_t points) {
  JournalEntry entry;
  entry.index = count_below(line, "index", points);
  if (!line.at("point").is_object()) throw std::runtime_error("\"point\" is not an object");
  for (const auto& [axis, value] : line.at("point").items()) entry.values.emplace_back(axis, value.get<std::string>());
  check_rows(line.at("rows"));
  entry.rows = line.at("rows");
  return entry;
}

// Parses the journal text; returns the byte length of its complete, valid lines.
size_t parse_lines(const std::string& text, const std::string& path, JournalFile& out) {
  size_t good = 0, line_no = 0, start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    ++line_no;
    if (end == std::string::npos) break;  // torn: no newline yet
    Json line;
    try {
      line = Json::parse(text.substr(start, end - start));
      if (line.value("tpsim_sweep", 0) != 1) throw std::runtime_error("not a sweep journal line");
      const std::string fingerprint = line.at("fingerprint").get<std::string>();
      const size_t points = count_below(line, "points", model::kMaxSweepPoints + 1);
      if (!out.fingerprint.empty() && (fingerprint != out.fingerprint || points != out.points)) {
        throw InputError(echo_path(path) + ":" + std::to_string(line_no) +
                         ": lines of two different sweeps in one journal");
      }
      out.fingerprint = fingerprint;
      out.points = points;
      JournalEntry entry = entry_of(line, points);
      // A point's last line is its latest state (a plan's candidate: a first run's bound, then its row).
      out.entries.insert_or_assign(entry.index, std::move(entry));
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& error) {  // a whole line (a torn one has no newline) that is no journal line
      throw InputError(echo_path(path) + ":" + std::to_string(line_no) + ": not a tpsim sweep journal line (" +
                       error.what() + ")");
    }
    good = end + 1;
    start = end + 1;
  }
  return good;
}

}  // namespace

std::string fingerprint_of(const std::string& bytes) {
  uint64_t hash = 1469598103934665603ULL;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

SweepJournal::SweepJournal(std::string dir, std::string fingerprint, size_t points)
    : dir_(std::move(dir)), path_(dir_ + "/" + kJournal), fingerprint_(std::move(fingerprint)), points_(points) {}

std::map<size_t, JournalEntry> SweepJournal::load() {
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error) throw InputError(dir_ + ": cannot create the output folder: " + error.message());
  if (!std::filesystem::exists(path_, error)) return {};
  const std::string text = read_all(path_);
  JournalFile file;
  const size_t good = parse_lines(text, path_, file);
  if (!file.fingerprint.empty() && (file.fingerprint != fingerprint_ || file.points != points_)) {
    throw InputError(echo_path(path_) +
                     ": this folder holds a sweep of another scenario (or an edited one); use another --out");
  }
  if (good < text.size()) std::filesystem::resize_file(path_, good);  // drop a torn last line
  return file.entries;
}

void SweepJournal::append(const JournalEntry& entry) {
  const std::string line = entry_json(fingerprint_, points_, entry).dump() + "\n";
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) throw InputError(path_ + ": cannot append: " + std::strerror(errno));
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(fd, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw InputError(path_ + ": write failed: " + std::strerror(errno));
    }
    written += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
}

JournalFile read_journal(const std::string& dir) {
  const std::string path = dir + "/" + kJournal;
  if (!is_regular_file(path)) {
    throw InputError(echo_path(path) + ": no sweep journal here (is it a tpsim sweep --out folder?)");
  }
  JournalFile file;
  parse_lines(read_all(path), path, file);
  return file;
}

void write_results(const std::string& dir, const std::map<size_t, JournalEntry>& entries) {
  std::vector<CsvPoint> points;
  std::string jsonl;
  for (const auto& [index, entry] : entries) {
    CsvPoint point{index, entry.values, {}};
    for (const auto& row : entry.rows) {
      point.rows.push_back(row);
      Json line = row;
      line["point_index"] = index;
      jsonl += line.dump() + "\n";
    }
    points.push_back(std::move(point));
  }
  write_outputs({{dir + "/results.csv", results_csv(points)}, {dir + "/results.jsonl", jsonl}});
}

}  // namespace tpsim::cli
