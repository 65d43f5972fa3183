// Measurement JSON lines: strict reading with located errors, canonical writing.
#include "base/measurement.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/json_keys.hpp"
#include "base/limits.hpp"
#include "base/size_checks.hpp"
#include "base/units.hpp"

namespace tpsim::calibrate {
namespace {

using Json = nlohmann::ordered_json;

class LineReader {
 public:
  LineReader(const Json& j, const std::string& origin) : j_(j), origin_(origin) {}

  [[noreturn]] void fail(const std::string& what) const { throw InputError(origin_ + ": " + what); }

  const Json& field(const std::string& key) const {
    if (!j_.contains(key) || j_.at(key).is_null()) fail("missing field \"" + key + "\"");
    return j_.at(key);
  }
  std::string text(const std::string& key) const {
    const Json& v = field(key);
    if (!v.is_string()) fail("\"" + key + "\" must be a string, got " + shown(v));
    return v.get<std::string>();
  }
  // A finite number in (0, max]: times up to kMaxMeasuredSeconds, sizes up to kMaxSimulatedBytes.
  double positive(const std::string& key, double max) const {
    const Json& v = field(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0) {
      fail("\"" + key + "\" must be a positive number, got " + shown(v));
    }
    if (v.get<double>() > max) {
      fail("\"" + key + "\" is " + shown(v) + ", over tpsim's limit of " + model::format_number("%g", max) +
           " (docs/reliability.md)");
    }
    return v.get<double>();
  }
  double seconds(const std::string& key) const { return positive(key, model::kMaxMeasuredSeconds); }
  double bytes(const std::string& key) const { return positive(key, model::kMaxSimulatedBytes); }
  double positive_or(const std::string& key, double max, double fallback) const {
    return j_.contains(key) && !j_.at(key).is_null() ? positive(key, max) : fallback;
  }
  // A GEMM dimension: a positive JSON integer (a fraction would truncate to another shape, or to 0).
  int64_t dimension(const std::string& key) const {
    const Json& v = field(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX)) {
      fail("\"" + key + "\" must be a positive integer (a GEMM dimension), got " + shown(v));
    }
    return v.get<int64_t>();
  }
  static std::string shown(const Json& v) { return echo_value(v.dump()); }
  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  std::string text_or(const std::string& key, const std::string& fallback) const {
    return j_.contains(key) && !j_.at(key).is_null() ? text(key) : fallback;
  }
  std::string one_of(const std::string& key, const std::vector<std::string>& valid) const {
    const std::string value = text(key);
    if (std::find(valid.begin(), valid.end(), value) != valid.end()) return value;
    std::string list;
    for (const std::string& v : valid) list += (list.empty() ? "" : ", ") + v;
    fail("\"" + key + "\" must be one of " + list + ", got \"" + echo_value(value) + "\"");
  }
  int count_or(const std::string& key, int minimum, int fallback) const {
    return j_.contains(key) && !j_.at(key).is_null() ? count(key, minimum) : fallback;
  }
  int count(const std::string& key, int minimum) const {
    const Json& v = field(key);
    if (!v.is_number_integer() || v.get<int64_t>() < minimum || v.get<int64_t>() > (1 << 30)) {
      fail("\"" + key + "\" must be an integer of at least " + std::to_string(minimum) + " (at most 2^30), got " +
           shown(v));
    }
    return v.get<int>();
  }

 private:
  const Json& j_;
  const std::string& origin_;
};

const std::vector<std::string> kCollectives = {"allreduce", "allgather", "reducescatter", "alltoall", "sendrecv"};

void read_gemm_shape(const LineReader& in, Measurement& m) {
  m.m = in.dimension("m");
  m.n = in.dimension("n");
  m.k = in.dimension("k");
  if (const std::string why = model::gemm_shape_problem(m.m, m.n, m.k); !why.empty()) in.fail(why);
  m.dtype = in.text_or("dtype", "bf16");
}

void read_collective(const LineReader& in, Measurement& m) {
  m.collective = in.one_of("collective", kCollectives);
  m.algorithm = in.text_or("algorithm", "unknown");
  if (in.has("protocol")) m.protocol = in.one_of("protocol", {"simple", "ll", "ll128", "unknown"});
  if (in.has("timed_as")) {
    m.timed_as = in.one_of("timed_as", {kTimedAsNcclTests, kTimedAsTorch, kTimedAsGraph});
  } else if (in.has("timed_through")) {  // files written before timed_as
    m.timed_as =
        in.one_of("timed_through", {"nccl", "torch.distributed"}) == "nccl" ? kTimedAsNcclTests : kTimedAsTorch;
  }
  m.ranks = in.count("ranks", 2);
  m.bytes = in.bytes("bytes");
  m.nodes = in.count_or("nodes", 1, 1);
  if (m.ranks % m.nodes != 0) {
    in.fail("\"nodes\" must divide \"ranks\" (the same GPU count in every node), got " + std::to_string(m.nodes) +
            " nodes for " + std::to_string(m.ranks) + " ranks");
  }
  if (m.nodes > 1) m.nic_GBps = in.positive_or("nic_GBps", model::kMaxLinkGBps, 0);
}

// A count bounded by `maximum` (a batch, a context): a JSON integer in [1, maximum].
int64_t bounded_count(const LineReader& in, const std::string& key, int64_t maximum) {
  const int value = in.count(key, 1);
  if (value > maximum) {
    in.fail("\"" + key + "\" is " + std::to_string(value) + ", over tpsim's limit of " + std::to_string(maximum));
  }
  return value;
}

// A preset's name: letters, digits, '.', '-' and '_' (decode points name model and implementation presets).
std::string preset_name(const LineReader& in, const std::string& key) {
  std::string name = in.text(key);
  const bool plain = !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '-' || c == '_';
  });
  if (!plain) {
    in.fail("\"" + key + "\" must name a preset (letters, digits, '.', '-', '_'), got \"" + echo_value(name) + "\"");
  }
  return name;
}

void read_decode(const LineReader& in, const Json& j, Measurement& m) {
  // The model and implementation presets are checked where the run is simulated (calibrate/fits/decode_fit.cpp):
  // this reader is shared with tpsim-real, which knows no presets.
  m.model = preset_name(in, "model");
  m.ranks = static_cast<int>(bounded_count(in, "ranks", model::kMaxGroupRanks));
  m.batch = bounded_count(in, "batch", int64_t{1} << 30);
  m.context_len = bounded_count(in, "context_len", int64_t{1} << 30);
  m.gen_len = bounded_count(in, "gen_len", int64_t{1} << 30);
  if (in.has("implementation")) m.implementation = preset_name(in, "implementation");
  m.collective = in.has("collective") ? in.one_of("collective", {"nccl", "one_shot", "two_shot", "auto"}) : "nccl";
  if (in.has("cuda_graphs")) {
    if (!j["cuda_graphs"].is_boolean()) in.fail("\"cuda_graphs\" must be true or false");
    m.cuda_graphs = j["cuda_graphs"].get<bool>();
  }
  m.power_limit_W = in.positive_or("power_limit_W", model::kMaxPowerW, 0);
  if (in.has("topology")) m.topology = in.one_of("topology", {"nvswitch", "pcie", "nvl72"});
}

void read_composite(const LineReader& in, Measurement& m) {
  read_gemm_shape(in, m);
  m.baseline_s = in.seconds("baseline_s");
  if (m.kind == "overlap") {
    std::vector<std::string> partners = {"memcpy_device", "memcpy_peer", "copy_kernel"};
    partners.insert(partners.end(), kCollectives.begin(), kCollectives.end());
    m.pattern = in.one_of("pattern", partners);
    m.bytes = in.bytes("bytes");
    m.ranks = in.count("ranks", 1);
    m.gemm_alone_s = in.seconds("gemm_alone_s");
    m.partner_alone_s = in.seconds("partner_alone_s");
    m.gemm_overlapped_s = in.seconds("gemm_overlapped_s");
  } else if (m.kind == "async_tp") {
    m.pattern = in.one_of("pattern", {"allgather_gemm", "gemm_reducescatter"});
    m.ranks = in.count("ranks", 2);
    m.chunks = in.count("chunks", 1);
    m.transport = in.one_of("transport", {"nccl", "copy_engine"});
  } else {
    m.pattern = "chain";
    m.ranks = in.count("ranks", 2);
    m.modules = in.count("modules", 1);
    if (in.text_or("delta_convention", "") != kDtpDeltaConvention) {
      in.fail("a dtp point without \"delta_convention\": \"" + std::string(kDtpDeltaConvention) +
              "\" was written by an older tpsim-real, whose delta D is a scenario's D - 1 and whose chain reduced "
              "every module instead of ending with a final all-reduce; measure it again with this tpsim-real");
    }
    m.delta = in.count("delta", 0);
  }
}

Spread read_spread(const LineReader& in, const Json& state, const std::string& key) {
  const std::string where = "gpu_state." + key;
  if (!state.contains(key) || !state.at(key).is_object()) in.fail("\"" + where + "\" must be a JSON object");
  Spread s;
  double* values[] = {&s.min, &s.median, &s.max};
  const char* names[] = {"min", "median", "max"};
  for (int i = 0; i < 3; ++i) {
    const Json& v = state.at(key).contains(names[i]) ? state.at(key).at(names[i]) : Json();
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
      in.fail("\"" + where + "." + names[i] + "\" must be a non-negative number, got " + LineReader::shown(v));
    }
    *values[i] = v.get<double>();
  }
  if (s.min > s.median || s.median > s.max) in.fail("\"" + where + "\" needs min <= median <= max");
  return s;
}

GpuState read_gpu_state(const LineReader& in, const Json& state) {
  if (!state.is_object()) in.fail("\"gpu_state\" must be a JSON object");
  GpuState g;
  const Json recorded = state.value("recorded", Json());
  if (!recorded.is_boolean()) in.fail("\"gpu_state.recorded\" must be true or false");
  g.recorded = recorded.get<bool>();
  if (!g.recorded) {
    const Json why = state.value("why", Json("not recorded"));
    if (!why.is_string()) in.fail("\"gpu_state.why\" must be a string, got " + LineReader::shown(why));
    g.why_not = why.get<std::string>();
    return g;
  }
  const Json readings = state.value("readings", Json());
  if (!readings.is_number_integer() || readings.get<int64_t>() < 1 || readings.get<int64_t>() > (1 << 30)) {
    in.fail("\"gpu_state.readings\" must be an integer from 1 to 2^30, got " + LineReader::shown(readings));
  }
  g.readings = readings.get<int>();
  g.sm_clock_mhz = read_spread(in, state, "sm_clock_mhz");
  g.power_W = read_spread(in, state, "power_W");
  g.temperature_C = read_spread(in, state, "temperature_C");
  if (state.contains("power_limit_W")) {
    const Json& limit = state.at("power_limit_W");
    if (!limit.is_number() || !(limit.get<double>() > 0) || limit.get<double>() > model::kMaxPowerW) {
      in.fail("\"gpu_state.power_limit_W\" must be a power in W above 0 and at most " +
              model::format_number("%g", model::kMaxPowerW) + ", got " + LineReader::shown(limit));
    }
    g.power_limit_W = limit.get<double>();
  }
  return g;
}

}  // namespace

double Measurement::tflops() const {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / median_s / 1e12;
}

double Measurement::algbw_GBps() const {
  return bytes / median_s / 1e9;
}

double Measurement::tokens_per_s() const {
  return static_cast<double>(batch * gen_len) / median_s;
}

double Measurement::speedup() const {
  return baseline_s / median_s;
}

bool Measurement::is_composite() const {
  return kind == "overlap" || kind == "async_tp" || kind == "dtp";
}

namespace {

std::string single_choice(std::string value, const std::vector<std::string>& names) {
  std::transform(value.begin(), value.end(), value.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return std::find(names.begin(), names.end(), value) != names.end() ? value : "unknown";
}

}  // namespace

std::string algorithm_forced_by(const std::string& nccl_algo) {
  return single_choice(nccl_algo, {"ring", "tree", "nvls"});
}

std::string protocol_forced_by(const std::string& nccl_proto) {
  return single_choice(nccl_proto, {"simple", "ll", "ll128"});
}

double bus_factor(const std::string& collective, int ranks) {
  const double n = ranks;
  return collective == "allreduce" ? 2.0 * (n - 1) / n : collective == "sendrecv" ? 1.0 : (n - 1) / n;
}

double Measurement::busbw_GBps() const {
  return algbw_GBps() * bus_factor(collective, ranks);
}

Measurement parse_measurement(const std::string& line, const std::string& origin) {
  Json j;
  try {
    j = Json::parse(line);
  } catch (const nlohmann::json::exception& error) {  // a syntax error, or a number past a double (1e309)
    throw InputError(origin + ": not a JSON object: not valid JSON (" + std::string(error.what()) + ")");
  }
  if (!j.is_object()) throw InputError(origin + ": a measurement must be a JSON object");
  model::refuse_duplicate_keys(line, origin, false);
  const LineReader in(j, origin);
  Measurement m;
  m.origin = origin;
  m.kind = in.text("kind");
  m.gpu = in.text("gpu");
  m.median_s = in.seconds("median_s");
  m.p10_s = in.positive_or("p10_s", model::kMaxMeasuredSeconds, m.median_s);
  m.p90_s = in.positive_or("p90_s", model::kMaxMeasuredSeconds, m.median_s);
  if (m.p10_s > m.median_s || m.median_s > m.p90_s) in.fail("needs p10_s <= median_s <= p90_s");
  if (j.contains("correct")) {
    if (!j["correct"].is_boolean()) in.fail("\"correct\" must be true or false");
    m.correct = j["correct"].get<bool>();
  }
  if (j.contains("gpu_state")) m.gpu_state = read_gpu_state(in, j["gpu_state"]);
  if (j.contains("provenance")) {
    if (!j["provenance"].is_object()) in.fail("\"provenance\" must be a JSON object (tool, host, versions, ...)");
    m.provenance = j["provenance"];
  }
  if (j.contains("details")) {
    if (!j["details"].is_object()) in.fail("\"details\" must be a JSON object");
    m.details = j["details"];
  }
  if (m.kind == "gemm") {
    read_gemm_shape(in, m);
  } else if (m.kind == "collective") {
    read_collective(in, m);
  } else if (m.kind == "memcpy") {
    m.path = in.one_of("path", {"peer", "device", "copy_kernel", "peer_all_ranks"});
    m.bytes = in.bytes("bytes");
    m.spec_GBps = in.positive_or("spec_GBps", model::kMaxLinkGBps, 0);
    // Every rank of the group pulling at once: how many there were.
    if (m.path == "peer_all_ranks") {
      m.ranks = in.count("ranks", 2);
      if (m.ranks > model::kMaxGroupRanks)
        in.fail("\"ranks\" is over tpsim's limit of " + std::to_string(model::kMaxGroupRanks));
    }
  } else if (m.kind == "launch") {
    m.pattern = in.one_of("pattern", {"same_stream", "cross_stream", "same_stream_queued", "cross_stream_queued"});
    m.kernels = in.count("kernels", 1);
  } else if (m.kind == "overlap" || m.kind == "async_tp" || m.kind == "dtp") {
    read_composite(in, m);
  } else if (m.kind == "decode") {
    read_decode(in, j, m);
  } else {
    in.fail("unknown \"kind\" \"" + echo_value(m.kind) +
            "\"; valid: gemm, collective, memcpy, launch, overlap, async_tp, dtp, decode");
  }
  return m;
}

std::vector<Measurement> parse_measurements(const std::string& text, const std::string& path) {
  std::vector<Measurement> out;
  const std::string origin = echo_path(path) + ":";
  size_t start = 0;
  for (int number = 1; start < text.size(); ++number) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    out.push_back(parse_measurement(line, origin + std::to_string(number)));
  }
  if (out.empty()) throw InputError(echo_path(path) + ": no measurements (expected JSON lines)");
  return out;
}

std::string read_measurement_text(const std::string& path) {
  return read_input_file(path, "measurement", model::kMaxTextFileBytes,
                         "split it into several files (tpsim calibrate takes many)");
}

std::vector<Measurement> read_measurements(const std::string& path) {
  return parse_measurements(read_measurement_text(path), path);
}

namespace {

void write_composite_fields(const Measurement& m, Json& j) {
  j["pattern"] = m.pattern;
  j["ranks"] = m.ranks;
  if (m.kind == "overlap") {
    j["bytes"] = m.bytes;
    j["gemm_alone_s"] = m.gemm_alone_s;
    j["partner_alone_s"] = m.partner_alone_s;
    j["gemm_overlapped_s"] = m.gemm_overlapped_s;
  } else if (m.kind == "async_tp") {
    j["chunks"] = m.chunks;
    j["transport"] = m.transport;
  } else {
    j["modules"] = m.modules;
    j["delta"] = m.delta;
    j["delta_convention"] = kDtpDeltaConvention;
  }
  j["baseline_s"] = m.baseline_s;
}

Json spread_json(const Spread& s) {
  return Json{{"min", s.min}, {"median", s.median}, {"max", s.max}};
}

Json gpu_state_json(const GpuState& g) {
  if (!g.recorded) return Json{{"recorded", false}, {"why", g.why_not}};
  Json j{{"recorded", true},
         {"readings", g.readings},
         {"sm_clock_mhz", spread_json(g.sm_clock_mhz)},
         {"power_W", spread_json(g.power_W)},
         {"temperature_C", spread_json(g.temperature_C)}};
  if (g.power_limit_W > 0) j["power_limit_W"] = g.power_limit_W;
  return j;
}

}  // namespace

Json to_json(const Measurement& m) {
  Json j;
  j["kind"] = m.kind;
  j["gpu"] = m.gpu;
  if (m.kind == "gemm" || m.is_composite()) {
    j["m"] = m.m;
    j["n"] = m.n;
    j["k"] = m.k;
    j["dtype"] = m.dtype;
  }
  if (m.is_composite()) {
    write_composite_fields(m, j);
  } else if (m.kind == "collective") {
    j["collective"] = m.collective;
    j["algorithm"] = m.algorithm;
    if (m.protocol != "unknown") j["protocol"] = m.protocol;
    j["timed_as"] = m.timed_as;
    j["ranks"] = m.ranks;
    if (m.nodes > 1) j["nodes"] = m.nodes;
    if (m.nic_GBps > 0) j["nic_GBps"] = m.nic_GBps;
    j["bytes"] = m.bytes;
  } else if (m.kind == "launch") {
    j["pattern"] = m.pattern;
    j["kernels"] = m.kernels;
  } else if (m.kind == "memcpy") {
    j["path"] = m.path;
    if (m.path == "peer_all_ranks") j["ranks"] = m.ranks;
    j["bytes"] = m.bytes;
    if (m.spec_GBps > 0) j["spec_GBps"] = m.spec_GBps;
  } else if (m.kind == "decode") {
    j["model"] = m.model;
    j["ranks"] = m.ranks;
    j["batch"] = m.batch;
    j["context_len"] = m.context_len;
    j["gen_len"] = m.gen_len;
    if (!m.implementation.empty()) j["implementation"] = m.implementation;
    j["collective"] = m.collective;
    j["cuda_graphs"] = m.cuda_graphs;
    if (m.power_limit_W > 0) j["power_limit_W"] = m.power_limit_W;
    j["topology"] = m.topology;
  }
  j["median_s"] = m.median_s;
  j["p10_s"] = m.p10_s;
  j["p90_s"] = m.p90_s;
  if (m.kind == "gemm") j["tflops"] = m.tflops();
  if (m.kind == "collective" || m.kind == "memcpy") j["algbw_GBps"] = m.algbw_GBps();
  if (m.is_composite()) j["speedup"] = m.speedup();
  if (m.kind == "decode") j["tokens_per_s"] = m.tokens_per_s();
  if (m.kind == "collective") j["busbw_GBps"] = m.busbw_GBps();
  j["correct"] = m.correct;
  if (m.gpu_state.recorded || !m.gpu_state.why_not.empty()) j["gpu_state"] = gpu_state_json(m.gpu_state);
  if (!m.details.empty()) j["details"] = m.details;
  j["provenance"] = m.provenance;
  return j;
}

std::string to_jsonl(const std::vector<Measurement>& measurements) {
  std::string out;
  for (const Measurement& m : measurements) out += to_json(m).dump() + "\n";
  return out;
}

}  // namespace tpsim::calibrate
