// The command line: help, outputs, bad input with one clear line, deterministic bytes.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/cli_support.hpp"
#include "shard/affinity.hpp"
#include "shard/apply_layout.hpp"
#include "shard/checkpoint_support.hpp"
#include "shard/shard_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tpsim_cli_test_" + name)).string();
}

}  // namespace

TEST_CASE("tpsim --help and tpsim run --help explain every option") {
  const auto top = test::run_tpsim("--help");
  CHECK(top.exit_code == 0);
  CHECK_THAT(top.out, Contains("run") && Contains("calibrate"));
  const auto run = test::run_tpsim("run --help");
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.out, Contains("--json") && Contains("--trace") && Contains("Perfetto") && Contains("--quiet"));
}

TEST_CASE("tpsim run prints the comparison table with a speedup per variant") {
  const auto result = test::run_tpsim("run scenarios/quickstart.yaml");
  REQUIRE(result.exit_code == 0);
  for (const char* column : {"variant", "time ms", "compute ms", "comm ms", "exposed ms", "overlap", "speedup"}) {
    CHECK_THAT(result.out, Contains(column));
  }
  CHECK_THAT(result.out, Contains("1.000x"));
}

TEST_CASE("run --json names a hybrid model's linear-attention layers, its shared expert and its expert TP") {
  const std::string path = temp_path("hybrid.json");
  const auto result = test::run_tpsim("run scenarios/inference/qwen3-next-80b-a3b-tp4-decode.yaml -q --json " + path);
  REQUIRE(result.exit_code == 0);
  const auto json = nlohmann::json::parse(test::read_file(path));
  const auto& model = json["scenario"]["model"];
  CHECK(model["linear_attention"]["layers"] == 36);  // 48 layers, full attention every 4th
  CHECK(model["linear_attention"]["linear_num_value_heads"] == 32);
  CHECK(model["shared_expert_intermediate_size"] == 512);
  CHECK(json["scenario"]["moe"]["expert_tp"] == 4);
  std::filesystem::remove(path);
}

TEST_CASE("run --json names a DeepSeek model's latent attention, its MoE layers and its router's groups") {
  const std::string path = temp_path("deepseek.json");
  const auto result = test::run_tpsim("run scenarios/moe/deepseek-v3-tp4-ep32-prefill.yaml -q --json " + path);
  REQUIRE(result.exit_code == 0);
  const auto json = nlohmann::json::parse(test::read_file(path));
  const auto& model = json["scenario"]["model"];
  CHECK(model["latent_attention"]["kv_lora_rank"] == 512);
  CHECK(model["latent_attention"]["q_lora_rank"] == 1536);
  CHECK(model["moe_layers"] == 61 - 3);  // first_k_dense_replace 3
  CHECK(model["router_groups"]["n_group"] == 8);
  CHECK(model["router_groups"]["topk_group"] == 4);
  std::filesystem::remove(path);
}

TEST_CASE("run --json writes resolved inputs and one result per variant") {
  const std::string path = temp_path("result.json");
  const auto result = test::run_tpsim("run scenarios/quickstart.yaml --json " + path);
  REQUIRE(result.exit_code == 0);
  const auto json = nlohmann::json::parse(test::read_file(path));
  CHECK(json["scenario"]["model"]["hidden_size"] == 4096);
  CHECK(json["scenario"]["workload"]["tokens_per_pass"] == 8 * 8192);
  REQUIRE(json["results"].size() == 4);
  const auto& baseline = json["results"][0];
  CHECK(baseline["speedup"].get<double>() == 1.0);
  for (const auto& r : json["results"]) {
    for (const char* key : {"variant", "time_s", "compute_s", "comm_s", "exposed_comm_s", "speedup", "tokens_per_s"}) {
      CHECK(r.contains(key));
    }
    CHECK(r["speedup"].get<double>() == Approx(baseline["time_s"].get<double>() / r["time_s"].get<double>()));
    CHECK(r["exposed_comm_s"].get<double>() <= r["comm_s"].get<double>() + 1e-12);
    CHECK(r["clock_ratio"].get<double>() > 0);
    CHECK(r["clock_ratio"].get<double>() <= 1);
  }
  // Under the limiter's window (the H100 profile's power.sustained_ratio) the ideal variant, its GEMMs back to back,
  // runs at a lower clock than tp, whose exposed all-reduces leave the GPU drawing less than the limit.
  CHECK(json["results"][3]["clock_ratio"].get<double>() < json["results"][0]["clock_ratio"].get<double>());
  std::filesystem::remove(path);
}

TEST_CASE("run --trace writes a Chrome trace with one process per GPU and named threads per stream") {
  const std::string path = temp_path("trace.json");
  REQUIRE(test::run_tpsim("run scenarios/quickstart.yaml -q --trace-ranks all --trace " + path).exit_code == 0);
  const auto trace = nlohmann::json::parse(test::read_file(path));
  std::set<int> pids;
  std::set<std::string> thread_names;
  size_t complete_events = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete_events;
      CHECK(e["dur"].get<double>() >= 0);
      // Op events carry their shape; the "modules" thread carries exposed communication per module.
      CHECK(e["args"].contains(e["cat"] == "module" ? "exposed_comm_us" : "shape"));
      pids.insert(e["pid"].get<int>());
    } else if (e["name"] == "thread_name") {
      thread_names.insert(e["args"]["name"].get<std::string>());
    }
  }
  CHECK(pids.size() == 4 * 8);  // 4 variants x 8 GPUs
  CHECK(thread_names == std::set<std::string>{"compute stream", "comm stream", "copy_engine stream", "modules"});
  CHECK(complete_events > 1000);
  std::filesystem::remove(path);
}

TEST_CASE("the same inputs give byte-identical JSON and trace outputs") {
  const std::string a = temp_path("a.json"), b = temp_path("b.json");
  const std::string ta = temp_path("ta.json"), tb = temp_path("tb.json");
  REQUIRE(test::run_tpsim("run scenarios/quickstart.yaml -q --json " + a + " --trace " + ta).exit_code == 0);
  REQUIRE(test::run_tpsim("run scenarios/quickstart.yaml -q --json " + b + " --trace " + tb).exit_code == 0);
  CHECK(test::read_file(a) == test::read_file(b));
  CHECK(test::read_file(ta) == test::read_file(tb));
  for (const auto& p : {a, b, ta, tb}) std::filesystem::remove(p);
}

TEST_CASE("a malformed scenario fails with one line naming file:line:col and writes nothing") {
  const std::string scenario = temp_path("bad.yaml");
  const std::string json = temp_path("bad_out.json");
  {
    std::ofstream out(scenario);
    out << "model: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nworkload: {batch: 1, seq_len: 128, colour: red}\n"
           "parallelism: {tp: 8}\nvariants: [{tp_mode: sp}]\n";
  }
  const auto result = test::run_tpsim("run " + scenario + " --json " + json);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Contains(scenario + ":3:36: unknown key 'colour' in workload; valid keys:"));
  CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(json));
  std::filesystem::remove(scenario);
}

TEST_CASE("bad command-line arguments fail with a clear message") {
  const auto missing = test::run_tpsim("run no/such/scenario.yaml");
  CHECK(missing.exit_code != 0);
  CHECK_THAT(missing.err, Contains("no/such/scenario.yaml"));
  const auto unknown = test::run_tpsim("run scenarios/quickstart.yaml --colour");
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.err, Contains("--colour"));
  CHECK(std::count(unknown.err.begin(), unknown.err.end(), '\n') == 1);
  const auto no_command = test::run_tpsim("");
  CHECK(no_command.exit_code == 2);
  CHECK(std::count(no_command.err.begin(), no_command.err.end(), '\n') == 1);
  const auto help = test::run_tpsim("--help");
  CHECK(help.exit_code == 0);
}

TEST_CASE("tpsim predict gives one op's time with nccl-tests bandwidths") {
  const auto gemm = test::run_tpsim("predict gemm --gpu h100-sxm --m 4096 --n 4096 --k 4096 --json");
  REQUIRE(gemm.exit_code == 0);
  const auto g = nlohmann::json::parse(gemm.out);
  CHECK(g["tflops"].get<double>() == Approx(2.0 * 4096 * 4096 * 4096 / g["time_s"].get<double>() / 1e12));
  const auto ar = test::run_tpsim("predict collective --gpu h200-sxm --ranks 8 --kind allreduce --bytes 1GiB --json");
  REQUIRE(ar.exit_code == 0);
  const auto a = nlohmann::json::parse(ar.out);
  const double algbw = 1073741824.0 / a["time_s"].get<double>() / 1e9;
  CHECK(a["algbw_GBps"].get<double>() == Approx(algbw));
  CHECK(a["busbw_GBps"].get<double>() == Approx(algbw * 2 * 7 / 8));
  CHECK(a["algorithm"] == "nvls");
  const auto ag = test::run_tpsim("predict collective --ranks 4 --kind allgather --bytes 64MiB --json");
  REQUIRE(ag.exit_code == 0);
  const auto j = nlohmann::json::parse(ag.out);
  CHECK(j["busbw_GBps"].get<double>() == Approx(j["algbw_GBps"].get<double>() * 3 / 4));
  CHECK(j["protocol"] == "simple");  // 64 MiB: NCCL runs Simple, costed by the Simple regime
  CHECK(j["costed_by"] == "nccl");
  CHECK(a["protocol"] == "simple");  // NVLS runs Simple
  CHECK(a["costed_by"] == "nvls");
  CHECK(a["nccl_choice"] == "nvls/Simple");
  const auto small = test::run_tpsim("predict collective --kind allgather --bytes 64KiB --json");
  const auto s = nlohmann::json::parse(small.out);
  CHECK(s["protocol"] == "ll");  // NCCL's LL, costed by the profile's unlabelled low-latency regime
  CHECK(s["costed_by"] == "nccl.small_messages");
  // The NCCL call latency is part of the time (the h200 profile's own for NVLS on H200s).
  CHECK(a["call_latency_s"].get<double>() > 0);
  CHECK(a["call_latency_s"].get<double>() < a["time_s"].get<double>());
  const auto two_shot = test::run_tpsim("predict collective --kind allreduce --bytes 1MiB --algorithm twoshot --json");
  CHECK(nlohmann::json::parse(two_shot.out)["call_latency_s"].get<double>() == 0);  // a custom kernel, not NCCL
  const auto forced = test::run_tpsim("predict collective --kind allgather --bytes 64KiB --protocol simple --json");
  CHECK(nlohmann::json::parse(forced.out)["time_s"].get<double>() >
        nlohmann::json::parse(small.out)["time_s"].get<double>());
  const auto missing = test::run_tpsim("predict collective --kind allgather --bytes 64KiB --protocol ll128");
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Contains("no nccl.ll128 section"));
  const auto bad_protocol = test::run_tpsim("predict collective --bytes 1MiB --protocol LL");
  CHECK(bad_protocol.exit_code == 2);
  CHECK_THAT(bad_protocol.err, Contains("--protocol LL: valid: auto, simple, ll, ll128"));
  const auto bad = test::run_tpsim("predict collective --bytes 12XB");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Contains("--bytes: '12XB' is not a size; expected a positive size"));
  const auto huge = test::run_tpsim("predict collective --bytes 2PiB");
  CHECK(huge.exit_code == 2);
  CHECK_THAT(huge.err, Contains("--bytes: '2PiB' is not a size"));  // no PiB unit
  const auto too_large = test::run_tpsim("predict collective --bytes 1e18");
  CHECK(too_large.exit_code == 2);
  CHECK_THAT(too_large.err, Contains("'1e18' is over the largest size tpsim simulates, 1 PiB"));
}

TEST_CASE("tpsim predict collective sweeps sizes as nccl-tests does, one row per size") {
  const auto table = test::run_tpsim("predict collective --kind allgather -b 1MiB -e 64MiB -f 4");
  REQUIRE(table.exit_code == 0);
  CHECK_THAT(table.out, Contains("busbw (GB/s)") && Contains("1048576") && Contains("67108864"));
  const auto sweep = test::run_tpsim("predict collective --kind allgather -b 1MiB -e 64MiB -f 4 --json");
  REQUIRE(sweep.exit_code == 0);
  const auto j = nlohmann::json::parse(sweep.out);
  REQUIRE(j["points"].size() == 4);  // 1, 4, 16, 64 MiB
  for (const auto& p : j["points"]) {
    // Each row is the single-size prediction of its size.
    const auto one = test::run_tpsim("predict collective --kind allgather --bytes " +
                                     std::to_string(p["bytes"].get<int64_t>()) + " --json");
    CHECK(nlohmann::json::parse(one.out)["time_s"].get<double>() == Approx(p["time_s"].get<double>()));
    CHECK(p["busbw_GBps"].get<double>() == Approx(p["algbw_GBps"].get<double>() * 7 / 8));
  }
  const auto both = test::run_tpsim("predict collective --bytes 1MiB -b 1MiB -e 2MiB");
  CHECK(both.exit_code == 2);
  CHECK_THAT(both.err, Contains("--bytes and a sweep (-b, -e) are both given"));
  const auto neither = test::run_tpsim("predict collective");
  CHECK(neither.exit_code == 2);
  CHECK_THAT(neither.err, Contains("no size is given; give --bytes B, or a sweep"));
  const auto half = test::run_tpsim("predict collective -b 1MiB");
  CHECK(half.exit_code == 2);
  CHECK_THAT(half.err, Contains("needs both -b MIN and -e MAX"));
  const auto upside_down = test::run_tpsim("predict collective -b 2MiB -e 1MiB");
  CHECK(upside_down.exit_code == 2);
  CHECK_THAT(upside_down.err, Contains("is above -e"));
  const auto flat = test::run_tpsim("predict collective -b 1MiB -e 2MiB -f 1");
  CHECK(flat.exit_code == 2);
  CHECK_THAT(flat.err, Contains("must be above 1"));
}

TEST_CASE("an op list or a variant forcing a protocol its profile lacks is refused at that key") {
  const std::string path = temp_path("protocol.yaml");
  std::ofstream(path) << "hardware: {gpu: h100-sxm}\nparallelism: {tp: 8}\nworkload:\n  phase: ops\n  ops:\n"
                         "    - {name: ag, kind: collective, collective: allgather, bytes: 1MiB, protocol: ll128}\n";
  const auto r = test::run_tpsim("run " + path);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains(path + ":6:") && Contains("no nccl.ll128 section"));
  // A variant's protocol is checked the same way, at its key.
  const std::string variant = temp_path("variant_protocol.yaml");
  std::ofstream(variant) << "model: llama-3.1-8b\nhardware: {gpu: h100-sxm}\n"
                            "workload: {phase: forward, batch: 1, seq_len: 512, layers: 1}\nparallelism: {tp: 8}\n"
                            "variants:\n  - {name: sp, tp_mode: sp}\n  - {name: ll, tp_mode: sp, protocol: ll}\n";
  const auto v = test::run_tpsim("run " + variant);
  CHECK(v.exit_code == 2);
  CHECK_THAT(v.err, Contains(variant + ":7:") && Contains("no nccl.ll section"));
}

TEST_CASE("a scenario on an inline GPU without a profile file is refused with the profiles there are") {
  const std::string path = temp_path("inline_gpu.yaml");
  std::ofstream(path)
      << ("name: t\nmodel: llama-3.1-8b\nhardware:\n  gpu: {name: my-gpu, peak_bf16_tflops: 500, hbm_GBps: 3000,"
          " sm_count: 100, nvlink_GBps: 400}\nworkload: {phase: forward, batch: 1, seq_len: 512, layers: 1}\n"
          "parallelism: {tp: 8}\nvariants: [{name: sp, tp_mode: sp}]\n");
  const auto r = test::run_tpsim("run " + path);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("no default calibration profile for GPU 'my-gpu'") && Contains("h100-sxm") &&
                        Contains("a100-sxm"));
}

TEST_CASE("tpsim predict collective on ib-rail fills nodes of 8 and runs rings across them") {
  const auto r = test::run_tpsim(
      "predict collective --gpu b200 --topology ib-rail --ranks 32 --kind allreduce --bytes 4GiB --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["nodes"] == 4);
  CHECK(j["algorithm"] == "ring");
  // The inter-node hop bounds it: busbw below the 8 x 50 GB/s of a node's NICs.
  CHECK(j["busbw_GBps"].get<double>() < 400.0);
  CHECK(j["busbw_GBps"].get<double>() > 300.0);
  // 800 Gb/s NICs (ConnectX-8): the NIC-bound ring runs faster.
  const auto cx8 = test::run_tpsim(
      "predict collective --gpu b200 --topology ib-rail --ranks 32 --kind allreduce --bytes 4GiB --nic-GBps 100 "
      "--json");
  REQUIRE(cx8.exit_code == 0);
  CHECK(nlohmann::json::parse(cx8.out)["busbw_GBps"].get<double>() > 1.5 * j["busbw_GBps"].get<double>());
  const auto nic_on_nvswitch = test::run_tpsim("predict collective --nic-GBps 100 --bytes 1MiB");
  CHECK(nic_on_nvswitch.exit_code == 2);
  CHECK_THAT(nic_on_nvswitch.err, Contains("--nic-GBps") && Contains("ib-rail only"));
  const auto ragged = test::run_tpsim("predict collective --topology ib-rail --ranks 12 --kind allreduce --bytes 1MiB");
  CHECK(ragged.exit_code == 2);
  CHECK_THAT(ragged.err, Contains("--ranks 12: spans nodes, so it must fill them: a multiple of 8"));
  const auto one_domain =
      test::run_tpsim("predict collective --topology nvswitch --ranks 16 --kind allreduce --bytes 1MiB");
  CHECK(one_domain.exit_code == 2);
  CHECK_THAT(one_domain.err, Contains("--ranks 16: needs more GPUs than the 8 h100-sxm GPUs of one nvswitch domain") &&
                                 Contains("ib-rail spans nodes"));
  const auto oversubscribed_switch = test::run_tpsim("predict collective --oversubscription 2 --bytes 1MiB");
  CHECK(oversubscribed_switch.exit_code == 2);
  CHECK_THAT(oversubscribed_switch.err, Contains("oversubscription applies to topology ib-rail"));
  const auto below_one =
      test::run_tpsim("predict collective --topology ib-rail --ranks 16 --oversubscription 0.5 --bytes 1MiB");
  CHECK(below_one.exit_code == 2);
  CHECK_THAT(below_one.err, Contains("oversubscription 0.5: must be 1 (non-blocking) or more"));
}

TEST_CASE("a run's JSON names the fabric and the calibration sections it used") {
  const auto r = test::run_tpsim("run scenarios/forward/llama3-405b-ib-rail-tp16-forward.yaml --json -");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out)["scenario"];
  CHECK(j["hardware"]["topology"] == "ib-rail");
  CHECK(j["hardware"]["nodes"] == 2);
  CHECK(j["hardware"]["nic_Bps"].get<double>() == Approx(50e9));
  CHECK(j["calibration"]["network"]["link_efficiency"].get<double>() > 0.5);
  CHECK(j["calibration"]["nvls"]["min_ranks"] == 6);
  CHECK(j["calibration"]["launch"]["stream_wait_s"].get<double>() == 0);
  CHECK(j["calibration"]["nccl"]["call_latency_s"].get<double>() > 0);  // the b200 profile's, from the H100 fit
}

TEST_CASE("tpsim validate prints measured against predicted for composites, and refuses files without any") {
  const std::string path = (std::filesystem::temp_directory_path() / "tpsim_validate_cli.jsonl").string();
  std::ofstream(path)
      << R"({"kind":"async_tp","gpu":"h100-sxm","m":16384,"n":3584,"k":4096,"pattern":"allgather_gemm","ranks":8,)"
      << R"("chunks":16,"transport":"nccl","baseline_s":0.0009,"median_s":0.0007})"
      << "\n"
      << R"({"kind":"overlap","gpu":"h100-sxm","m":1024,"n":1024,"k":1024,"dtype":"fp8","pattern":"copy_kernel","ranks":1,)"
      << R"("bytes":1048576,"gemm_alone_s":1e-5,"partner_alone_s":1e-5,"gemm_overlapped_s":1e-5,"baseline_s":2e-5,)"
      << R"("median_s":1.5e-5,"correct":false})"
      << "\n";
  const auto r = test::run_tpsim("validate " + path + " --json -");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["points"].size() == 1);
  CHECK(j["points"][0]["configuration"] == "allgather_gemm 16384x3584x4096 tp8 16 chunks nccl");
  CHECK(j["points"][0]["measured_speedup"].get<double>() == Approx(0.0009 / 0.0007));
  CHECK(j["skipped"][0]["why"] == "failed its correctness check when measured");
  CHECK(j["profile"] == "the default profile of h100-sxm");

  const auto table = test::run_tpsim("validate " + path);
  CHECK(table.out.find("| configuration | measured us | predicted us |") != std::string::npos);
  CHECK(table.out.find("1 composite points: time error mean") != std::string::npos);

  const auto none = test::run_tpsim("validate calibrate/data/measurements/gemm_h100_bf16.jsonl");
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("no composite measurements") != std::string::npos);
}

TEST_CASE("tpsim shard layout writes a balanced layout with its objective beside the baselines") {
  const std::string affinity = (std::filesystem::temp_directory_path() / "tpsim_cli_affinity.safetensors").string();
  const std::string out = (std::filesystem::temp_directory_path() / "tpsim_cli_layout.json").string();
  tpsim::shard::write_affinity(affinity, tpsim::test::random_tables(3, 4, 16, 5));
  const auto r = test::run_tpsim("shard layout " + affinity + " --devices 2 --random-seeds 4 -o " + out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("layout over 2 devices: optimised") != std::string::npos);
  const auto j = nlohmann::json::parse(test::read_file(out));
  CHECK(j["objective"]["optimised"].get<double>() >= j["objective"]["random"]["max"].get<double>());
  CHECK(j["objective"]["random"]["min"].get<double>() >= j["objective"]["anti_optimised"].get<double>());
  REQUIRE(j["layout"].size() == 3);
  for (const auto& layer : j["layout"]) {
    REQUIRE(layer["devices"].size() == 2);
    for (const auto& device : layer["devices"]) {
      CHECK(device["kv_groups"].size() == 2);
      CHECK(device["neurons"].size() == 8);
    }
  }
  const auto bad = test::run_tpsim("shard layout " + affinity + " --devices 3");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--devices 3 must divide the 4 KV groups and the 16 neurons") != std::string::npos);
}

TEST_CASE("tpsim shard affinity, layout and apply chain into a permuted checkpoint with the same logits") {
  namespace fs = std::filesystem;
  const std::string dir = test::write_tiny_checkpoint("tpsim_cli_tiny", test::TinyModel{}, 21);
  const fs::path tmp = fs::temp_directory_path();
  const std::string tokens = (tmp / "tpsim_cli_tokens.bin").string(),
                    affinity = (tmp / "tpsim_cli_aff.safetensors").string(),
                    layout = (tmp / "tpsim_cli_layout2.json").string(), out = (tmp / "tpsim_cli_permuted").string();
  {
    std::ofstream file(tokens, std::ios::binary);
    for (uint32_t t = 0; t < 64; ++t) {
      const uint32_t id = (t * 11 + 2) % 40;
      file.write(reinterpret_cast<const char*>(&id), 4);  // little-endian hosts
    }
  }
  const auto a = test::run_tpsim("shard affinity " + dir + " --tokens " + tokens + " --seq-len 16 -o " + affinity);
  REQUIRE(a.exit_code == 0);
  CHECK(a.out.find("over 64 tokens") != std::string::npos);
  REQUIRE(test::run_tpsim("shard layout " + affinity + " --devices 2 -o " + layout).exit_code == 0);
  const auto applied = test::run_tpsim("shard apply " + dir + " " + layout + " -o " + out);
  REQUIRE(applied.exit_code == 0);
  CHECK(applied.out.find("logits unchanged") != std::string::npos);
  const auto original = tpsim::shard::read_checkpoint(dir), permuted = tpsim::shard::read_checkpoint(out);
  CHECK(tpsim::shard::logit_difference(original, permuted) < 1e-5);

  std::ofstream(tokens + ".odd", std::ios::binary) << "12345";
  const auto bad = test::run_tpsim("shard affinity " + dir + " --tokens " + tokens + ".odd -o " + affinity + ".x");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("not a whole number of uint32 token ids") != std::string::npos);
}

TEST_CASE("tpsim run --csv writes the sweep's columns, one row per point and variant, with per-GPU tokens and MFU") {
  const std::string out =
      (std::filesystem::temp_directory_path() / ("tpsim_csv_" + std::to_string(::getpid()))).string();
  const auto run = test::run_tpsim("run scenarios/forward/llama3-70b-tp8-prefill-sweep.yaml --csv " + out +
                                   ".csv --json " + out + ".json");
  REQUIRE(run.exit_code == 0);
  const std::string csv = test::read_file(out + ".csv");
  CHECK_THAT(csv, Contains("point,workload.seq_len,variant,tp_mode,chunks,chunks_chosen_by,time_s") &&
                      Contains("tokens_per_s,tokens_per_s_per_gpu,mfu"));
  const auto json = nlohmann::json::parse(test::read_file(out + ".json"));
  const size_t rows = json["results"].size();
  CHECK(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')) == rows + 1);
  for (const auto& r : json["results"]) {
    CHECK(r["tokens_per_s_per_gpu"].get<double>() == Approx(r["tokens_per_s"].get<double>() / 8));
    CHECK(r["mfu"].get<double>() > 0);
    CHECK(r["breakdown"].size() >= 3);  // attention, ffn, total at least
  }
  std::filesystem::remove(out + ".csv");
  std::filesystem::remove(out + ".json");
}

TEST_CASE("an op-list run prints each op's start, end and duration, and --critical-path the chain that sets the time") {
  const auto run = test::run_tpsim("run scenarios/forward/ops-gemm-allgather-overlap.yaml --critical-path --json -");
  REQUIRE(run.exit_code == 0);
  const auto json = nlohmann::json::parse(run.out);
  const auto& row = json["results"][0];
  REQUIRE(row.contains("ops"));
  for (const auto& op : row["ops"]) {
    CHECK(op["duration_s"].get<double>() == Approx(op["end_s"].get<double>() - op["start_s"].get<double>()));
  }
  const auto& path = row["critical_path"][0];
  double shares = 0;
  for (const auto& link : path["links"]) shares += link["share"].get<double>();
  CHECK(shares == Approx(1.0));
  const auto table = test::run_tpsim("run scenarios/forward/ops-gemm-allgather-overlap.yaml --critical-path");
  CHECK_THAT(table.out, Contains("ops of ops on GPU 0") && Contains("start ms") && Contains("critical path of ops"));
}

TEST_CASE("run --no-symmetry simulates every data-parallel replica, says so, and traces a process per GPU") {
  const std::string scenario = temp_path("replicas.yaml"), json = temp_path("replicas.json");
  const std::string trace = temp_path("replicas_trace.json");
  std::ofstream(scenario) << "name: replicas\nmodel: llama-3.1-8b\n"
                             "hardware: {gpu: h100-sxm, topology: ib-rail, nodes: 4}\n"
                             "workload: {phase: train, batch: 1, seq_len: 2048, layers: 2}\n"
                             "parallelism: {tp: 8, dp: 4}\nfsdp: {}\nvariants: [{name: sp, tp_mode: sp}]\n";
  const auto symmetric = test::run_tpsim("run " + scenario + " --json " + json);
  REQUIRE(symmetric.exit_code == 0);
  CHECK_THAT(symmetric.out, Contains("fsdp over 4 replicas, "));
  CHECK(nlohmann::json::parse(
            test::read_file(json))["scenario"]["parallelism"]["data_parallel"]["replicas_simulated"] == 1);
  const auto every =
      test::run_tpsim("run " + scenario + " --no-symmetry --json " + json + " --trace-ranks all --trace " + trace);
  REQUIRE(every.exit_code == 0);
  CHECK_THAT(every.out, Contains("fsdp over 4 replicas (each simulated, --no-symmetry)"));
  CHECK(nlohmann::json::parse(
            test::read_file(json))["scenario"]["parallelism"]["data_parallel"]["replicas_simulated"] == 4);
  const auto events = nlohmann::json::parse(test::read_file(trace));
  std::set<int> pids;
  for (const auto& e : events["traceEvents"]) {
    if (e["ph"] == "X") pids.insert(e["pid"].get<int>());
  }
  CHECK(pids.size() == 8 * 4);  // every GPU of the 4 replicas
  for (const auto& p : {scenario, json, trace}) std::filesystem::remove(p);
}
