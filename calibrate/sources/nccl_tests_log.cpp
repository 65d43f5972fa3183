// nccl-tests stdout: header lines start with '#'; data rows are "size count type [redop root]
// oop_time oop_algbw oop_busbw oop_wrong ip_time ip_algbw ip_busbw ip_wrong" (times in us, GB/s).
// Tolerated: NCCL INFO / WARN lines, "N/A" in #wrong, the trailing averages, blank lines.
#include "calibrate/sources/nccl_tests_log.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>

#include "base/device_names.hpp"
#include "base/input_error.hpp"
#include "base/limits.hpp"

namespace tpsim::calibrate {
namespace {

struct Header {
  std::string collective;  // allreduce, allgather, reducescatter, alltoall, sendrecv
  int ranks = 0;
  std::set<std::string> hosts;
  std::string device;
  int device_line = 0;       // where `device` was read
  std::string other_device;  // a second device name, where ranks differ
  int other_device_line = 0;
  std::string nccl_version;
  std::string arguments;  // the "# nThread ..." line
  // NCCL_ALGO / NCCL_PROTO as NCCL logged them ("NCCL INFO NCCL_PROTO set by environment to LL",
  // with NCCL_DEBUG=INFO); empty when unset or not logged.
  std::string nccl_algo;
  std::string nccl_proto;
  // From the column header ("#  size  count  type  redop  root  time  algbw  busbw  #wrong ..."): the column
  // of the first time (-1: no header seen), and whether the check column counts wrong elements (#wrong,
  // nccl-tests 2.11 on) or gives the largest error (error, before).
  int first_time_column = -1;
  bool wrong_is_count = true;
};

// Older nccl-tests print the largest relative error of the results instead of a count of wrong
// elements; a float sum over 8 to 64 ranks stays near 1e-7 when right. Assumed: above 1e-3 is wrong.
constexpr double kMaxCorrectError = 1e-3;

std::string collective_named_in(const std::string& text) {
  const std::vector<std::pair<std::string, std::string>> names = {{"all_reduce", "allreduce"},
                                                                  {"all_gather", "allgather"},
                                                                  {"reduce_scatter", "reducescatter"},
                                                                  {"alltoall", "alltoall"},
                                                                  {"sendrecv", "sendrecv"}};
  for (const auto& [token, name] : names) {
    if (text.find(token) != std::string::npos) return name;
  }
  return "";
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// nccl-tests' CUDA-graph launches (-G N, printed "graph: N" in the "# nThread" line): above 0, its iterations are
// replayed from CUDA graphs and its times are the device's.
int graph_launches(const std::string& arguments) {
  const size_t at = arguments.find("graph:");
  if (at == std::string::npos) return 0;
  try {
    return std::stoi(arguments.substr(at + 6));
  } catch (const std::exception&) {
    return 0;
  }
}

bool is_number(const std::string& w, double* value) {
  try {
    size_t used = 0;
    *value = std::stod(w, &used);
    return used == w.size();
  } catch (const std::exception&) {
    return false;
  }
}

// An "NCCL INFO <VARIABLE> set by environment to <value>" line's value for `variable`, if it is one.
bool environment_value(const std::string& line, const std::string& variable, std::string* value) {
  const std::string marker = variable + " set by environment to ";
  const size_t at = line.find(marker);
  if (at == std::string::npos || line.find("NCCL INFO") == std::string::npos) return false;
  const std::vector<std::string> rest = words(line.substr(at + marker.size()));
  if (rest.empty()) return false;
  *value = rest.front();
  return true;
}

void read_header_line(const std::string& line, int number, Header& h) {
  const std::vector<std::string> columns = words(line.substr(line.find('#') + 1));
  if (h.first_time_column < 0 && columns.size() >= 8 && columns[0] == "size" && columns[1] == "count") {
    const auto time = std::find(columns.begin(), columns.end(), "time");
    if (time != columns.end()) h.first_time_column = static_cast<int>(time - columns.begin());
    h.wrong_is_count = std::find(columns.begin(), columns.end(), "error") == columns.end();
  }
  if (line.find("Collective test starting:") != std::string::npos) h.collective = collective_named_in(line);
  if (line.find("nThread") != std::string::npos) h.arguments = line.substr(line.find("nThread"));
  const size_t version = line.find("NCCL version");
  if (version != std::string::npos) {
    const std::vector<std::string> rest = words(line.substr(version + 12));
    if (!rest.empty()) h.nccl_version = rest.front();
  }
  // "#  Rank  0 Group  0 Pid 1234 on host1 device  0 [0x07] NVIDIA H100 80GB HBM3"
  if (line.find(" Rank ") != std::string::npos && line.find(" device ") != std::string::npos) {
    ++h.ranks;
    const std::vector<std::string> w = words(line);
    for (size_t i = 0; i + 1 < w.size(); ++i) {
      if (w[i] == "on") h.hosts.insert(w[i + 1]);
    }
    const size_t bracket = line.find(']');
    if (bracket != std::string::npos) {
      std::string device = line.substr(bracket + 1);
      device.erase(0, device.find_first_not_of(' '));
      device.erase(device.find_last_not_of(" \r") + 1);
      if (h.device.empty()) {
        h.device = device;
        h.device_line = number;
      } else if (device != h.device && h.other_device.empty()) {
        h.other_device = device;
        h.other_device_line = number;
      }
    }
  }
}

// The GPU preset the log's device lines name: every rank's device must be one part with a preset.
std::string gpu_of_log(const Header& h, const std::string& origin) {
  if (h.device.empty()) {
    throw InputError(origin +
                     ": its \"#  Rank ... device\" lines name no device; pass --measured-on PRESET (e.g. h100-sxm)");
  }
  if (!h.other_device.empty()) {
    throw InputError(origin + ":" + std::to_string(h.other_device_line) + ": ranks run on different GPUs ('" +
                     h.device + "' and '" + h.other_device + "'); tpsim models one GPU kind per group");
  }
  const std::optional<std::string> preset = gpu_preset_of_device(h.device);
  if (!preset) {
    std::string known;
    for (const auto& [name, device] : device_name_examples())
      known += (known.empty() ? "" : ", ") + name + " (" + device + ")";
    throw InputError(origin + ":" + std::to_string(h.device_line) + ": device '" + h.device +
                     "' is no GPU tpsim has a preset for; presets: " + known +
                     "; pass --measured-on PRESET to attribute the log to one");
  }
  return *preset;
}

using DataRow = std::pair<int, std::vector<std::string>>;  // (line number, words)

// Reads the log's header lines and NCCL's environment lines into h; returns its data rows.
std::vector<DataRow> read_log_lines(const std::string& text, Header& h) {
  std::vector<DataRow> rows;
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos) continue;
    if (line[start] == '#') {
      read_header_line(line, number, h);
      continue;
    }
    if (environment_value(line, "NCCL_ALGO", &h.nccl_algo) || environment_value(line, "NCCL_PROTO", &h.nccl_proto)) {
      continue;
    }
    std::vector<std::string> w = words(line);
    double size = 0, count = 0;
    // Data rows start with two integers; anything else (NCCL INFO/WARN lines, messages) is skipped.
    if (w.size() >= 11 && is_number(w[0], &size) && is_number(w[1], &count)) rows.emplace_back(number, std::move(w));
  }
  return rows;
}

// A data row's size and one placement's time and bus bandwidth (its columns from c), checked.
struct PlacementValues {
  double size = 0;
  double time_us = 0;
  double busbw = 0;
};

PlacementValues read_placement_values(const std::vector<std::string>& w, size_t c, const std::string& where) {
  PlacementValues v;
  if (!is_number(w[0], &v.size) || v.size < 0 || v.size != std::floor(v.size) || v.size > model::kMaxSimulatedBytes) {
    throw InputError(where + ": column 1 is not a size in bytes (a whole number up to 1 PiB): '" + echo_value(w[0]) +
                     "'");
  }
  if (!is_number(w[c], &v.time_us) || !std::isfinite(v.time_us) || v.time_us <= 0 ||
      v.time_us > model::kMaxMeasuredSeconds * 1e6) {
    throw InputError(where + ": column " + std::to_string(c + 1) +
                     " is not a time in microseconds (a positive number up to an hour): '" + echo_value(w[c]) + "'");
  }
  if (!is_number(w[c + 2], &v.busbw) || !std::isfinite(v.busbw) || v.busbw < 0) {
    throw InputError(where + ": column " + std::to_string(c + 3) + " is not a bus bandwidth in GB/s: '" + w[c + 2] +
                     "'");
  }
  return v;
}

// Whether a placement's check column (c + 3) says its results were right. "N/A": not checked; before nccl-tests 2.11
// the column is the largest error, taken as correct up to kMaxCorrectError.
bool results_correct(const Header& h, const std::vector<std::string>& w, size_t c, const std::string& where) {
  double wrong = 0;
  const bool checked = w[c + 3] != "N/A";
  const bool readable = is_number(w[c + 3], &wrong) && std::isfinite(wrong) && wrong >= 0;
  if (checked && (!readable || (h.wrong_is_count && wrong != std::floor(wrong)))) {
    throw InputError(where + ": column " + std::to_string(c + 4) + " is not " +
                     (h.wrong_is_count ? "a count of wrong elements (a whole number" : "an error (a number >= 0") +
                     ", or N/A): '" + w[c + 3] + "'");
  }
  return !checked || (h.wrong_is_count ? wrong == 0 : wrong <= kMaxCorrectError);
}

// Where the point comes from, and the log's header values, into m's provenance; its nodes from the hosts.
void add_log_provenance(const Header& h, const std::string& where, int placement, double busbw, Measurement& m) {
  m.origin = where;
  m.provenance["tool"] = "nccl-tests";
  m.provenance["converted_from"] = where;
  m.provenance["placement"] = placement == 0 ? "out-of-place" : "in-place";
  m.provenance["busbw_GBps_printed"] = busbw;
  m.provenance["nodes"] = h.hosts.size();
  if (h.hosts.size() > 1) {
    if (h.ranks % static_cast<int>(h.hosts.size()) != 0) {
      throw InputError(where + ": " + std::to_string(h.ranks) + " ranks over " + std::to_string(h.hosts.size()) +
                       " hosts: tpsim models nodes with the same GPU count each");
    }
    m.nodes = static_cast<int>(h.hosts.size());
  }
  if (!h.device.empty()) m.provenance["device"] = h.device;
  if (!h.nccl_version.empty()) m.provenance["nccl_version"] = h.nccl_version;
  if (!h.arguments.empty()) m.provenance["arguments"] = h.arguments;
  if (!h.nccl_algo.empty()) m.provenance["nccl_algo"] = h.nccl_algo;
  if (!h.nccl_proto.empty()) m.provenance["nccl_proto"] = h.nccl_proto;
  m.provenance["spread"] = "nccl-tests prints a mean over its iterations: p10 = p90 = median";
}

// One placement (0: out of place, 1: in place) of a data row whose timing columns start at first: its measurement,
// none for a row of 0 bytes.
std::optional<Measurement> placement_measurement(const Header& h, const std::string& preset,
                                                 const std::vector<std::string>& w, size_t first, int placement,
                                                 const std::string& where) {
  const size_t c = first + 4 * placement;
  const PlacementValues v = read_placement_values(w, c, where);
  if (v.size == 0) return std::nullopt;  // nccl-tests prints zero-byte rows for some collectives
  Measurement m;
  m.kind = "collective";
  m.gpu = preset;
  m.collective = h.collective;
  m.algorithm = h.nccl_algo.empty() ? "unknown" : algorithm_forced_by(h.nccl_algo);
  m.protocol = h.nccl_proto.empty() ? "unknown" : protocol_forced_by(h.nccl_proto);
  m.ranks = h.ranks;
  m.bytes = v.size;
  m.median_s = m.p10_s = m.p90_s = v.time_us * 1e-6;
  if (graph_launches(h.arguments) > 0) m.timed_as = kTimedAsGraph;
  m.correct = results_correct(h, w, c, where);
  add_log_provenance(h, where, placement, v.busbw, m);
  return m;
}

}  // namespace

bool looks_like_nccl_tests_log(const std::string& text) {
  return text.find("# nThread") != std::string::npos || text.find("# Collective test starting") != std::string::npos;
}

std::vector<Measurement> parse_nccl_tests_log(const std::string& text, const std::string& origin,
                                              const std::string& gpu) {
  if (!looks_like_nccl_tests_log(text)) {
    throw InputError(origin +
                     ": not an nccl-tests log (no \"# nThread\" header); give the stdout of all_reduce_perf, "
                     "all_gather_perf, reduce_scatter_perf, alltoall_perf or sendrecv_perf");
  }
  Header h;
  const std::vector<DataRow> rows = read_log_lines(text, h);
  if (h.collective.empty()) h.collective = collective_named_in(origin);
  if (h.collective.empty()) {
    throw InputError(origin +
                     ": cannot tell which collective this log measured; keep its \"# Collective test "
                     "starting\" line or name the file after the test (all_reduce_perf.log)");
  }
  if (h.ranks < 1) throw InputError(origin + ": no \"#  Rank ... device\" lines: cannot tell the number of GPUs");
  const std::string preset = gpu.empty() ? gpu_of_log(h, origin) : gpu;
  if (rows.empty()) throw InputError(origin + ": an nccl-tests header but no result rows");
  std::vector<Measurement> out;
  for (const auto& [line_no, w] : rows) {
    const std::string where = origin + ":" + std::to_string(line_no);
    // Where the column header says; without one, after redop and root when the row has them.
    const size_t first = h.first_time_column >= 0 ? static_cast<size_t>(h.first_time_column) : w.size() >= 13 ? 5 : 3;
    if (w.size() < first + 8) throw InputError(where + ": expected 8 timing columns after the size, count and type");
    for (int placement = 0; placement < 2; ++placement) {
      std::optional<Measurement> m = placement_measurement(h, preset, w, first, placement, where);
      if (m) out.push_back(std::move(*m));
    }
  }
  if (out.empty()) throw InputError(origin + ": no result rows of more than 0 bytes");
  return out;
}

}  // namespace tpsim::calibrate
