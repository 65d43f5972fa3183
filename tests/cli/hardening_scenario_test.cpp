// Reproducers of bad scenarios and profiles (the hardening issue): each is refused with exit 2 and one line
// located at the offending key or value, and writes nothing.
#include <catch2/catch.hpp>

#include "cli/refusal_support.hpp"

using namespace tpsim;
using test::check_refused;
using test::kSmallScenario;

namespace {

// `text` (kSmallScenario unless given) with the text `from` replaced by `to`.
std::string with(const std::string& from, const std::string& to, std::string text = kSmallScenario) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

}  // namespace

TEST_CASE("complex keys, duplicate keys and text that is not UTF-8 are refused where they are") {
  const test::Scratch s("yaml");
  const std::string complex = s.file("complex.yaml", kSmallScenario + "? [a]\n: 1\n");
  check_refused(test::run_tpsim("run " + complex), complex + ":8:", "a mapping key must be a plain name");
  const std::string twice =
      s.file("twice.yaml", kSmallScenario + "sweep:\n  workload.batch: [1, 2]\n  workload.batch: [4]\n");
  check_refused(test::run_tpsim("run " + twice), twice + ":10:3:", "key 'workload.batch' is given twice");
  const std::string bytes = s.file("bytes.yaml", with("name: t", "name: t\xff"));
  const auto not_utf8 = test::run_tpsim("run " + bytes + " --json " + s.path("out.json"));
  check_refused(not_utf8, bytes + ":1:8:", "not UTF-8 text (byte \\xff)");
  CHECK_FALSE(std::filesystem::exists(s.path("out.json")));
  const std::string profile = s.file("p.yaml", "gpu: h100-sxm\nbase: h100-sxm\n? [a]\n: 1\n");
  const std::string uses = s.file("uses.yaml", kSmallScenario + "calibration: p.yaml\n");
  check_refused(test::run_tpsim("run " + uses), profile + ":3:", "a mapping key must be a plain name");
}

TEST_CASE("control characters and block scalars are echoed escaped, on one line") {
  const test::Scratch s("echo");
  const std::string block = s.file("block.yaml", with("model: qwen3-0.6b", "model: |\n  no-such\n  preset"));
  check_refused(test::run_tpsim("run " + block), block + ":2:", "no-such\\npreset");
  const std::string control = s.file("control.yaml", kSmallScenario + "\"bad\\x01key\\nhere\": 1\n");
  check_refused(test::run_tpsim("run " + control), control + ":8:", "unknown key 'bad\\x01key\\nhere'");
}

TEST_CASE("paths longer than the system allows are refused at their key, echoed shortened") {
  const test::Scratch s("long");
  const std::string name(300, 'a');
  const std::string calibration = s.file("calibration.yaml", kSmallScenario + "calibration: " + name + ".yaml\n");
  const auto profile = test::run_tpsim("run " + calibration);
  check_refused(profile, calibration + ":8:", "is neither a profile file");
  CHECK(profile.err.size() < 700);
  const std::string hf = s.file("hf.yaml", with("model: qwen3-0.6b", "model: {hf_config: " + name + "/config.json}"));
  const auto config = test::run_tpsim("run " + hf);
  check_refused(config, hf + ":2:", "the path is longer than the system allows");
  CHECK(config.err.size() < 700);
  const std::string zero = s.file("zero.yaml", with("model: qwen3-0.6b", "model: {hf_config: /dev/zero}"));
  check_refused(test::run_tpsim("run " + zero), zero + ":2:", "not a regular file");
}

TEST_CASE("profile times, efficiencies and integers outside physical ranges are refused at the value") {
  const test::Scratch s("profile");
  const std::string scenario = s.file("s.yaml", kSmallScenario + "calibration: p.yaml\n");
  const auto run_with = [&](const std::string& section) {
    s.file("p.yaml", "gpu: h100-sxm\nbase: h100-sxm\n" + section + "\n");
    return test::run_tpsim("run " + scenario);
  };
  const std::string profile = s.path("p.yaml");
  check_refused(run_with("launch: {host_us: 1e308}"),
                profile + ":3:", "launch.host_us must be a number from 0 to 1e+06");
  check_refused(run_with("gemm: {tile_m: 2147483648}"), profile + ":3:", "gemm.tile_m must be at most 65536");
  check_refused(run_with("gemm: {tile_n: 4294967297}"), profile + ":3:", "gemm.tile_n must be at most 65536");
  check_refused(run_with("gemm: {efficiency: 1e-300}"), profile + ":3:", "gemm.efficiency must be in [0.0001, 1]");
  check_refused(run_with("nccl: {step_latency_us: .inf}"), profile + ":3:", "nccl.step_latency_us must be a number");
}

TEST_CASE("sizes whose products overflow and fabrics larger than the group are refused") {
  const test::Scratch s("sizes");
  const std::string huge =
      s.file("huge.yaml", with("batch: 1, seq_len: 512", "batch: 4294967296, seq_len: 4294967296"));
  check_refused(test::run_tpsim("run " + huge), huge + ":4:", "pass the largest size tpsim simulates, 1 PiB");
  const std::string extra =
      s.file("extra.yaml", with("{gpu: h100-sxm}", "{gpu: h100-sxm, topology: ib-rail, nodes: 2}"));
  check_refused(test::run_tpsim("run " + extra), extra + ":3:", "fills 1 of the 2 nodes");
  const std::string nodes =
      s.file("nodes.yaml", with("{gpu: h100-sxm}", "{gpu: h100-sxm, topology: ib-rail, nodes: 10000}"));
  check_refused(test::run_tpsim("run " + nodes), nodes + ":3:", "hardware.nodes is 10000, over tpsim's limit of 4096");
  const auto gemm = test::run_tpsim("predict gemm --m 4294967296 --n 4294967296 --k 1");
  check_refused(gemm, "--m 4294967296", "over the largest size tpsim simulates");
}

TEST_CASE("chunks, layers, sweep points and group sizes beyond the documented limits are refused") {
  const test::Scratch s("limits");
  const std::string chunks =
      s.file("chunks.yaml", with("{name: sp, tp_mode: sp}", "{name: a, tp_mode: async, chunks: 1048576}"));
  check_refused(test::run_tpsim("run " + chunks), chunks + ":7:", "over tpsim's limit of 1024");
  const std::string layers =
      s.file("layers.yaml", with("model: qwen3-0.6b",
                                 "model: {hidden_size: 1024, intermediate_size: 4096, num_attention_heads: "
                                 "16, num_hidden_layers: 1000000, vocab_size: 1000}"));
  check_refused(test::run_tpsim("run " + layers), layers + ":2:", "above tpsim's limit of 1024");
  std::string axis = "[";
  for (int i = 1; i <= 6000; ++i) axis += (i > 1 ? ", " : "") + std::to_string(8 * i);
  axis += "]";
  const std::string points = s.file(
      "points.yaml", kSmallScenario + "sweep:\n  workload.batch: " + axis + "\n  workload.seq_len: " + axis + "\n");
  check_refused(test::run_tpsim("run " + points), points + ":10:", "past tpsim's limit of 1000000 points");
  check_refused(test::run_tpsim("predict collective --ranks 65536 --bytes 1MiB"), "--ranks 65536",
                "over tpsim's limit of 4096");
}

TEST_CASE("errors found late are located: chunk divisibility, phase ops keys and invalid sweep points") {
  const test::Scratch s("located");
  const std::string chunks = s.file(
      "chunks.yaml",
      with("{name: sp, tp_mode: sp}", "{name: a, tp_mode: async, chunks: 16}", with("seq_len: 512", "seq_len: 520")));
  check_refused(test::run_tpsim("run " + chunks), chunks + ":7:", "must be divisible by 16");
  const std::string point = s.file("point.yaml", kSmallScenario + "sweep:\n  workload.seq_len: [512, 100]\n");
  check_refused(test::run_tpsim("run " + point), point + ":9:27: sweep value workload.seq_len=100",
                "shards each pass's tokens");
  const std::string ops = s.file("ops.yaml",
                                 "name: t\nhardware: {gpu: h100-sxm}\n"
                                 "workload: {phase: ops, ops: [{name: g, kind: gemm, m: 64, n: 64, k: 64}]}\n"
                                 "parallelism: {tp: 8}\nsweep:\n  workload.batch: [2]\n");
  check_refused(test::run_tpsim("run " + ops), ops + ":6:20: sweep value workload.batch=2",
                "workload.batch does not apply to phase ops");
}
