// Journal lines, torn-line recovery, fingerprints, and the CSV / JSON-lines result files.
#include "cli/sweep_journal.hpp"

#include "cli/results_csv.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/output_file.hpp"
#include "model/input_error.hpp"

namespace tpsim::cli {
namespace {

using Json = nlohmann::ordered_json;
constexpr const char* kJournal = "journal.jsonl";

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
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

JournalEntry entry_of(const Json& line) {
  JournalEntry entry;
  entry.index = line.at("index").get<size_t>();
  for (const auto& [axis, value] : line.at("point").items()) entry.values.emplace_back(axis, value.get<std::string>());
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
      const size_t points = line.at("points").get<size_t>();
      if (!out.fingerprint.empty() && (fingerprint != out.fingerprint || points != out.points)) {
        throw InputError(path + ":" + std::to_string(line_no) + ": lines of two different sweeps in one journal");
      }
      out.fingerprint = fingerprint;
      out.points = points;
      JournalEntry entry = entry_of(line);
      out.entries.try_emplace(entry.index, std::move(entry));
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& error) {
      if (end + 1 < text.size()) {
        throw InputError(path + ":" + std::to_string(line_no) + ": not a tpsim sweep journal line (" + error.what() +
                         ")");
      }
      break;  // a damaged last line: treated as torn
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
  if (!std::filesystem::exists(path_)) return {};
  const std::string text = read_all(path_);
  JournalFile file;
  const size_t good = parse_lines(text, path_, file);
  if (!file.fingerprint.empty() && (file.fingerprint != fingerprint_ || file.points != points_)) {
    throw InputError(path_ + ": this folder holds a sweep of another scenario (or an edited one); use another --out");
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
  if (!std::filesystem::exists(path))
    throw InputError(path + ": no sweep journal here (is it a tpsim sweep --out folder?)");
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
  write_output(dir + "/results.csv", results_csv(points));
  write_output(dir + "/results.jsonl", jsonl);
}

}  // namespace tpsim::cli
