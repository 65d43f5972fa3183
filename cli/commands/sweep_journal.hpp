// The durable state of a sweep: journal.jsonl in the output folder holds one line per finished point
// (its index and result rows), appended and fsync'ed as points finish, so a killed sweep resumes
// where it stopped. results.csv and results.jsonl are rewritten from it, sorted by point.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/report/report_json.hpp"

namespace tpsim::cli {

struct JournalEntry {
  size_t index = 0;
  AxisValues values;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
};

class SweepJournal {
 public:
  // `fingerprint` identifies the scenario; `points` is the sweep's total point count.
  SweepJournal(std::string dir, std::string fingerprint, size_t points);

  // Entries already in the journal. A torn last line (a kill during a write) is cut off; a journal
  // of another scenario is an error.
  std::map<size_t, JournalEntry> load();
  // Appends one entry durably (write + fsync).
  void append(const JournalEntry& entry);

  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
  std::string fingerprint_;
  size_t points_;
};

// A stable identifier of a scenario file's bytes (64-bit FNV-1a, hex).
std::string fingerprint_of(const std::string& bytes);

// Reads a journal without knowing its scenario (for merge): entries plus fingerprint and point count.
struct JournalFile {
  std::string fingerprint;
  size_t points = 0;
  std::map<size_t, JournalEntry> entries;
};
JournalFile read_journal(const std::string& dir);

// Writes DIR/results.csv and DIR/results.jsonl (one row per point and variant, by point index).
void write_results(const std::string& dir, const std::map<size_t, JournalEntry>& entries);

}  // namespace tpsim::cli
