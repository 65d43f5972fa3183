// Reproducers from a probe of the input surfaces (issue 40): each runs, or is refused with exit 2 and one line
// located at the key that causes it.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/refusal_support.hpp"

using namespace tpsim;
using test::check_refused;
using test::kSmallScenario;

namespace {

// Sections of a profile whose value must be a mapping, as "section" or "section.sub" (nested ones need their parent).
const std::vector<std::string> kProfileSections = {"gemm",
                                                   "memory",
                                                   "attention",
                                                   "attention.kernels",
                                                   "attention.kernels.fa3",
                                                   "linear_attention",
                                                   "deepep",
                                                   "deepep.low_latency",
                                                   "nccl",
                                                   "nccl.small_messages",
                                                   "nccl.ll",
                                                   "nccl.ll128",
                                                   "copy_engine",
                                                   "one_shot",
                                                   "two_shot",
                                                   "nvls",
                                                   "multimem",
                                                   "multimem_gather",
                                                   "network",
                                                   "tree",
                                                   "launch",
                                                   "power"};

// A profile over h100-sxm's whose `section` (dotted: nested) is the scalar 5, on the last line.
std::string profile_with_scalar(const std::string& section) {
  std::string text = "gpu: h100-sxm\nbase: h100-sxm\n", indent;
  size_t start = 0;
  for (size_t dot = section.find('.'); dot != std::string::npos; dot = section.find('.', start)) {
    text += indent + section.substr(start, dot - start) + ":\n";
    indent += "  ";
    start = dot + 1;
  }
  return text + indent + section.substr(start) + ": 5\n";
}

nlohmann::json run_json(const std::string& args) {
  const test::CommandResult result = test::run_tpsim(args + " --json -");
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  return nlohmann::json::parse(result.out);
}

}  // namespace

TEST_CASE("an MoE model with tp 1 under a pipeline placed tp, pp, dp runs every member (--no-symmetry)") {
  const test::Scratch s("moe_order");
  // The experts' data-parallel group sat one GPU apart whatever the order, and the engine divided by its replica step.
  for (const std::string model : {"qwen3-30b-a3b", "deepseek-v2-lite"}) {
    const std::string file =
        s.file(model + ".yaml", "name: qn-pp\nmodel: " + model +
                                    "\nhardware: {gpu: h100-sxm, topology: ib-rail, nodes: 1}\n"
                                    "workload: {phase: train, batch: 1, seq_len: 2048, layers: 4, microbatches: 4}\n"
                                    "parallelism: {tp: 1, pp: 4, dp: 2, order: [tp, pp, dp]}\n"
                                    "pipeline: {schedule: 1f1b}\nvariants:\n  - {name: sp, tp_mode: sp}\n");
    INFO(model);
    const nlohmann::json whole = run_json("run " + file + " --no-symmetry");
    const nlohmann::json symmetric = run_json("run " + file);
    // Both model the same step: the whole simulation checks the schedule's timing (its tests allow 1%; 5% here).
    CHECK(whole["results"][0]["time_s"].get<double>() ==
          Approx(symmetric["results"][0]["time_s"].get<double>()).epsilon(0.05));
  }
}

TEST_CASE("every section of a profile given as a scalar is refused at its line as not a mapping") {
  const test::Scratch s("profile_sections");
  const std::string scenario = s.file("uses.yaml", kSmallScenario + "calibration: p.yaml\n");
  for (const std::string& section : kProfileSections) {
    INFO(section);
    const std::string text = profile_with_scalar(section);
    const std::string profile = s.file("p.yaml", text);
    const auto line = std::count(text.begin(), text.end(), '\n');
    check_refused(test::run_tpsim("run " + scenario), profile + ":" + std::to_string(line) + ":", "must be a mapping");
  }
  // A fit is a mapping of what it fitted, or a note ("not fitted: ..."); a list is neither.
  const std::string fit = s.file("p.yaml", "gpu: h100-sxm\nbase: h100-sxm\nnccl:\n  call_latency_fit: [1]\n");
  check_refused(test::run_tpsim("run " + scenario), fit + ":4:21:", "nccl.call_latency_fit must be a mapping");
  s.file("p.yaml", "gpu: h100-sxm\nbase: h100-sxm\ngemm:\n  fit: \"not fitted: no measurements\"\n");
  CHECK(test::run_tpsim("run " + scenario + " -q").exit_code == 0);
}

TEST_CASE("a second YAML document in a scenario or a profile is refused at its ---") {
  const test::Scratch s("documents");
  const std::string scenario = s.file("two.yaml", kSmallScenario + "---\nname: other\n");
  check_refused(test::run_tpsim("run " + scenario), scenario + ":8:1:", "a second YAML document starts here");
  // An explicit end of the first document changes nothing: what follows is still dropped.
  const std::string profile = s.file("p.yaml", "gpu: h100-sxm\nbase: h100-sxm\n...\n---\n");
  const std::string uses = s.file("uses.yaml", kSmallScenario + "calibration: p.yaml\n");
  check_refused(test::run_tpsim("run " + uses), profile + ":4:1:", "a second YAML document starts here");
  // A stray ',' before the first key: yaml-cpp restarts an empty document there without end; it is no second one.
  const std::string comma = s.file("comma.yaml", ", " + kSmallScenario);
  check_refused(test::run_tpsim("run " + comma, "timeout 60"), comma + ":1:1:", "the scenario must be a mapping");
  // One document opened by --- is one document.
  const std::string opened = s.file("opened.yaml", "---\n" + kSmallScenario);
  CHECK(test::run_tpsim("run " + opened + " -q").exit_code == 0);
}

TEST_CASE("a pipeline's idle and exposed times are never negative and sum with compute to the step") {
  const test::Scratch s("idle");
  // zb-v holds two chunks per stage: the first chunk's gradient reduction runs beside the second chunk's passes.
  const std::string zbv = s.file("zbv.yaml",
                                 "name: mx\nmodel: mixtral-8x7b\nhardware: {gpu: b200}\n"
                                 "workload: {phase: train, batch: 2, seq_len: 2048, layers: 8, microbatches: 8}\n"
                                 "parallelism: {tp: 1, pp: 2, dp: 4}\npipeline: {schedule: zb-v, virtual_stages: 2}\n"
                                 "variants:\n  - {name: sp, tp_mode: sp}\n");
  const std::string sends = s.file("sends.yaml",
                                   "name: qn\nmodel: qwen3-next-80b-a3b\nhardware: {gpu: h100-sxm}\n"
                                   "workload: {phase: train, batch: 1, seq_len: 4096, layers: 8, microbatches: 16}\n"
                                   "parallelism: {tp: 2, pp: 4}\npipeline: {schedule: 1f1b}\n"
                                   "variants:\n  - {name: sp, tp_mode: sp}\n");
  for (const std::string& args : {"run " + zbv, "run " + zbv + " --no-symmetry", "run " + sends + " --no-symmetry"}) {
    INFO(args);
    const nlohmann::json r = run_json(args)["results"][0];
    const double time = r["time_s"], compute = r["compute_s"], exposed = r["exposed_comm_s"], idle = r["idle_s"];
    CHECK(idle >= 0);
    CHECK(exposed >= 0);
    CHECK(r.value("exposed_data_comm_s", 0.0) >= 0);  // written where the job has data parallelism
    CHECK(r["pipeline"]["send_exposed_s"].get<double>() >= 0);
    // Per GPU the step is its compute, the communication no compute covers, and its idle time (sums round at 1e-15).
    CHECK(compute + exposed + idle == Approx(time).epsilon(1e-9));
  }
}

TEST_CASE("a power limit that would clock the GPU below its lowest clock is refused at the key, with the floor") {
  const test::Scratch s("power_floor");
  s.file("p.yaml", "gpu: h100-sxm\nbase: h100-sxm\npower: {idle_W: 69.99999999, exponent: 0.5}\n");
  const std::string scenario =
      s.file("low.yaml",
             "name: t\nmodel: qwen3-0.6b\nhardware: {gpu: h100-sxm, power_limit_W: 70}\n"
             "calibration: p.yaml\nworkload: {phase: forward, batch: 1, seq_len: 512, layers: 1}\n"
             "parallelism: {tp: 8}\nvariants:\n  - {name: sp, tp_mode: sp}\n");
  const auto refused = test::run_tpsim("run " + scenario);
  check_refused(refused, scenario + ":3:42:", "below tpsim's floor of 0.231");
  // The lowest limit the curve models: idle + (measured - idle) x floor^exponent, the profile measured at 700 W.
  const double lowest_W = 69.99999999 + (700 - 69.99999999) * std::pow(345.0 / 1496.0, 0.5);
  CHECK_THAT(refused.err, Catch::Contains("at least " + std::to_string(static_cast<int>(std::ceil(lowest_W))) + " W"));
}

TEST_CASE("collectives a variant or an op list asks for that cannot run are refused at the key that asks") {
  const test::Scratch s("located_plans");
  const std::string variant = "  - {name: x, tp_mode: sp, collective: ALGO}\n";
  for (const auto& [algorithm, why] : std::vector<std::pair<std::string, std::string>>{
           {"two_shot", "two_shot is an all-reduce kernel"},
           {"nvls", "NVLS all-gathers and reduce-scatters are not modelled"},
           {"tree", "NCCL's tree runs all-reduces only"}}) {
    INFO(algorithm);
    std::string line = variant;
    line.replace(line.find("ALGO"), 4, algorithm);
    const std::string file = s.file(algorithm + ".yaml", kSmallScenario + line);
    // Line 8, at the collective's value: the all-gather layout of sp cannot run it.
    check_refused(test::run_tpsim("run " + file),
                  file + ":8:40:", "variant x, op L0.attn.qkv_proj.all_gather: algorithm " + algorithm + ": " + why);
  }
  const std::string pcie =
      s.file("pcie.yaml",
             "name: t\nmodel: qwen3-0.6b\nhardware: {gpu: h100-pcie, topology: pcie}\n"
             "workload: {phase: forward, batch: 1, seq_len: 512, layers: 1}\nparallelism: {tp: 4}\n"
             "variants:\n  - {name: tp, tp_mode: tp, collective: multimem}\n");
  check_refused(test::run_tpsim("run " + pcie), pcie + ":7:41:", "no NVSwitch with multicast and reduction");
  const std::string ops =
      s.file("ops.yaml",
             "name: o\nhardware: {gpu: h100-sxm}\nparallelism: {tp: 8}\nworkload:\n  phase: ops\n  ops:\n"
             "    - {name: g, kind: gemm, m: 1024, n: 1024, k: 1024}\n"
             "    - {name: ag, kind: collective, collective: allgather, bytes: 1MiB, algorithm: tree}\n");
  check_refused(test::run_tpsim("run " + ops), ops + ":8:83:", "op ag: algorithm tree: NCCL's tree runs all-reduces");
}

TEST_CASE("MoE variants that cannot route their own rows are refused at their key with what would run") {
  const test::Scratch s("moe_variants");
  const std::string tbo = s.file("tbo.yaml",
                                 "name: t\nmodel: qwen3-30b-a3b\nhardware: {gpu: h100-sxm}\n"
                                 "workload: {phase: decode, batch: 4, context_len: 512, layers: 1, whole_model: true}\n"
                                 "parallelism: {tp: 1, ep: 4}\nvariants:\n  - {name: one, tp_mode: sp}\n"
                                 "  - {name: tbo, tp_mode: sp, two_batch_overlap: true}\n");
  check_refused(test::run_tpsim("run " + tbo), tbo + ":8:49:", "drop whole_model");
  // A decode step of 2 tokens over tp 4: nocomm keeps every token on every rank, so it cannot be the remedy offered.
  const std::string nocomm = s.file("nocomm.yaml",
                                    "name: mxd\nmodel: mixtral-8x7b\nhardware: {gpu: h100-sxm}\n"
                                    "workload: {phase: decode, batch: 2, context_len: 1024, layers: 2}\n"
                                    "parallelism: {tp: 4, ep: 4}\nvariants:\n  - {name: none, tp_mode: nocomm}\n");
  const auto refused = test::run_tpsim("run " + nocomm);
  check_refused(refused, nocomm + ":7:27:", "use a batch divisible by tp");
  CHECK_THAT(refused.err, !Catch::Contains("sp, async or nocomm"));
}

TEST_CASE("a number past a double in config.json is refused at its key") {
  const test::Scratch s("hf_overflow");
  std::string config = test::read_file(std::string(TPSIM_SOURCE_DIR) + "/tests/model/hf_configs/llama-3.1-8b.json");
  const std::string theta = "\"rope_theta\": 500000.0";
  REQUIRE(config.find(theta) != std::string::npos);
  const auto line = 1 + std::count(config.begin(), config.begin() + config.find(theta), '\n');
  config.replace(config.find(theta), theta.size(), "\"rope_theta\": 1e400");
  std::filesystem::create_directories(s.path("m"));
  const std::string path = s.file("m/config.json", config);
  const std::string scenario =
      s.file("hf.yaml",
             "name: t\nmodel: {hf_config: m/config.json}\nhardware: {gpu: h100-sxm}\n"
             "workload: {phase: forward, batch: 1, seq_len: 512, layers: 1}\nparallelism: {tp: 8}\n"
             "variants:\n  - {name: sp, tp_mode: sp}\n");
  check_refused(test::run_tpsim("run " + scenario), path + ":" + std::to_string(line) + ":3:",
                "key \"rope_theta\": the number 1e400 is past the largest a double holds");
}

TEST_CASE("several outputs of one run are written all or none") {
  const test::Scratch s("all_or_none");
  const std::string scenario = s.file("small.yaml", kSmallScenario);
  const std::string json = s.path("ok.json");
  // A device that refuses the write, and a folder that does not exist: neither leaves the JSON behind.
  for (const std::string& failing : {std::string("--csv /dev/full"), "--trace " + s.path("missing/x")}) {
    INFO(failing);
    const auto failed = test::run_tpsim("run " + scenario + " --json " + json + " " + failing);
    CHECK(failed.exit_code == 2);
    CHECK(std::count(failed.err.begin(), failed.err.end(), '\n') == 1);
    CHECK_FALSE(std::filesystem::exists(json));
  }
  // An earlier output is left as it was, and no temporary file stays beside it.
  s.file("ok.json", "earlier\n");
  CHECK(test::run_tpsim("run " + scenario + " --json " + json + " --csv /dev/full").exit_code == 2);
  CHECK(test::read_file(json) == "earlier\n");
  CHECK(std::distance(std::filesystem::directory_iterator(s.path("")), std::filesystem::directory_iterator()) == 2);
}

TEST_CASE("output paths that name no file, and stdout for a folder, are refused before anything runs") {
  const test::Scratch s("paths");
  const std::string scenario = s.file("small.yaml", kSmallScenario);
  check_refused(test::run_tpsim("run " + scenario + " --json ''"), "--json: ", "an empty path names no file");
  check_refused(test::run_tpsim("calibrate convert calibrate/data/public -o -"),
                "--out: ", "'-' is standard output, and this writes a folder of files");
  CHECK_FALSE(std::filesystem::exists(std::string(TPSIM_SOURCE_DIR) + "/-"));
  check_refused(test::run_tpsim("sweep " + scenario + " -o -"), "--out: ", "writes a folder of files");
}

TEST_CASE("a reader that closes stdout early ends the run quietly, not with SIGPIPE") {
  // The quickstart's trace is larger than a pipe's buffer: the write meets the closed pipe. The reader took what it
  // wanted (`| head`): no error line, exit 0, and the other outputs are written whole.
  const test::Scratch s("pipe");
  const std::string command = "cd " + std::string(TPSIM_SOURCE_DIR) + " && bash -c '" + TPSIM_BINARY +
                              " run scenarios/quickstart.yaml --trace - --json " + s.path("out.json") + " 2>" +
                              s.path("err") + " | head -c 10 >/dev/null; exit ${PIPESTATUS[0]}'";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  const std::string err = test::read_file(s.path("err"));
  INFO("stderr: " << err);
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(err.empty());
  CHECK_THAT(test::read_file(s.path("out.json")), Catch::EndsWith("}\n"));
}

TEST_CASE("counts out of range say their range, and a size-less collective says what to give") {
  check_refused(test::run_tpsim("shard layout tests/cli/expected_times.json --devices 0"),
                "--devices: ", "must be an integer from 1 to 4096, got '0'");
  check_refused(test::run_tpsim("predict collective"), "", "no size is given; give --bytes B");
}

TEST_CASE("a word that names no command is refused with the commands there are") {
  for (const std::string args : {"search", "search --help", "search scenarios/quickstart.yaml"}) {
    INFO(args);
    check_refused(test::run_tpsim(args), "unknown command 'search'; ",
                  "commands: run, sweep, merge, plan, plot, predict");
  }
  check_refused(test::run_tpsim("predict gem --m 1"), "unknown command 'predict gem'; ",
                "predict's commands: gemm, attention, collective");
  // The top-level help says what tpsim is now.
  const auto help = test::run_tpsim("--help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, !Catch::Contains("tensor-parallel Transformer layers (TP, SP, async TP)"));
  for (const char* what : {"training steps", "serving", "pipeline", "expert parallelism", "calibrate", "DTP layouts"}) {
    CHECK_THAT(help.out, Catch::Contains(what));
  }
}

TEST_CASE("a collective over 4096 ranks across nodes answers in closed form, well within a minute") {
  // It ran past 60 s and 2.7 GB stepping 33.5 M flows; the deadline only guards against that (not a benchmark).
  const auto r =
      test::run_tpsim("predict collective --ranks 4096 --topology ib-rail --bytes 1GiB --json", "timeout 60");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["ranks"] == 4096);
  CHECK(j["time_s"].get<double>() > 0);
}

TEST_CASE("runs that cannot finish in bounded memory or time are refused at once with the symmetric alternative") {
  const test::Scratch s("unbounded");
  const std::string dp = s.file("dp.yaml",
                                "name: dp\nmodel: qwen3-0.6b\n"
                                "hardware: {gpu: h100-sxm, topology: ib-rail, nodes: 4096}\n"
                                "workload: {phase: train, batch: 1, seq_len: 1024, layers: 2}\n"
                                "parallelism: {tp: 1, dp: 32768}\nvariants:\n  - {name: sp, tp_mode: sp}\n");
  const std::string pp = s.file("pp.yaml",
                                "name: pp\nmodel: llama-3.1-70b\n"
                                "hardware: {gpu: h100-sxm, topology: ib-rail, nodes: 32}\n"
                                "workload: {phase: train, batch: 1, seq_len: 4096, layers: 32, "
                                "microbatches: 1024}\nparallelism: {tp: 8, pp: 32}\n"
                                "pipeline: {schedule: 1f1b}\nvariants:\n  - {name: sp, tp_mode: sp}\n");
  const std::string shipped = "scenarios/pipeline/llama3-405b-tp8-pp16-dp128-train.yaml";
  for (const std::string& file : {dp, pp, std::string(TPSIM_SOURCE_DIR) + "/" + shipped}) {
    INFO(file);
    // Refused before anything is simulated (the deadline guards against simulating first).
    const auto refused = test::run_tpsim("run " + file + " --no-symmetry", "timeout 60");
    check_refused(refused, file + ":", "past tpsim's limit of");
    CHECK_THAT(refused.err, Catch::Contains("run it without --no-symmetry"));
  }
  for (const std::string& file : {dp, pp}) CHECK(test::run_tpsim("run " + file + " -q").exit_code == 0);
}
