// What `tpsim run` prints that does not drown its reader: sizes without exponents, an MoE job's all-to-alls of
// many sizes as one range, a table across a sweep's points, a pipeline's step before its chunk programs (breakdown
// and critical path), and traces of one GPU by default with arrows between ranks and stages.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "base/units.hpp"
#include "cli/report/report_json.hpp"
#include "cli/report/report_table.hpp"
#include "cli_support.hpp"
#include "model/scenario.hpp"
#include "sim/report/breakdown.hpp"
#include "sim/report/collective_summary.hpp"
#include "sim/report/pipeline_path.hpp"
#include "sim/report/trace_export.hpp"
#include "sim/run/scenario_run.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

sim::ScenarioRun run(const std::string& text) {
  return sim::run_scenario(model::parse_scenario(text, "report.yaml"));
}

// Llama-3.1-8B's 32 layers over tp=2 x pp=4 on one NVSwitch node, 8 micro-batches.
std::string pipeline_job(const std::string& schedule) {
  return "name: pp\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\n"
         "workload: {phase: train, batch: 1, seq_len: 2048, microbatches: 8}\nparallelism: {tp: 2, pp: 4}\n"
         "pipeline: " +
         schedule + "\nvariants: [{name: sp, tp_mode: sp}]\n";
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tpsim_report_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

}  // namespace

TEST_CASE("sizes print with at most three significant digits, never as an exponent, and read back within 0.5%") {
  constexpr double kMiB = 1024.0 * 1024;
  CHECK(model::human_bytes(1000 * kMiB) == "1000 MiB");  // "%.3g" alone gave "1e+03 MiB"
  CHECK(model::human_bytes(128 * kMiB) == "128 MiB");
  CHECK(model::human_bytes(18.6 * 1024 * kMiB) == "18.6 GiB");
  CHECK(model::human_bytes(3) == "3 B");
  // Every size from 1 B to 1 PiB in steps of 1%: no exponent, and the text names the size to its rounding.
  for (double bytes = 1; bytes < 1024.0 * 1024 * 1024 * kMiB; bytes *= 1.01) {
    const std::string text = model::human_bytes(bytes);
    INFO(bytes << " bytes: " << text);
    REQUIRE(text.find('e') == std::string::npos);
    const double shown = model::parse_bytes(text.substr(0, text.find(' ')) + text.substr(text.find(' ') + 1));
    // Three significant digits round by at most half a unit of the third: 0.5% of a value from 100 up.
    CHECK(std::abs(shown / bytes - 1) <= 0.005);
  }
}

TEST_CASE("an MoE job under skewed routing lists its all-to-alls once per variant: their sizes as a range, how many") {
  // Qwen3-30B-A3B, 8 of its layers, experts over 8 GPUs, routing skewed: each layer's all-to-all has its own size.
  const sim::ScenarioRun r =
      run("name: moe\nmodel: qwen3-30b-a3b\nhardware: {gpu: h200-sxm}\n"
          "workload: {phase: train, batch: 2, seq_len: 4096, layers: 8}\nparallelism: {tp: 2, dp: 4, ep: 8}\n"
          "moe: {routing: zipf, zipf_s: 1.2}\nvariants: [{name: sp, tp_mode: sp}]\n");
  std::set<double> sizes;
  for (const sim::CollectiveRun& c : sim::collectives_run(r.variants.front().passes)) {
    if (c.kind == model::CollectiveKind::kAllToAll) sizes.insert(c.tensor_bytes);
  }
  REQUIRE(sizes.size() > 3);  // more sizes than the line lists one by one
  const std::string table = cli::comparison_table(r);
  const std::string line = table.substr(table.find("  sp: ", table.find("collectives as run")));
  CHECK(count_of(line.substr(0, line.find('\n')), "all_to_all") == 1);
  const std::string low = model::human_bytes(*sizes.begin()), high = model::human_bytes(*sizes.rbegin());
  CHECK_THAT(line, Contains("all_to_all " + low.substr(0, low.find(' '))) &&
                       Contains("-" + high + " (" + std::to_string(sizes.size()) + " sizes) point_to_point"));
}

TEST_CASE("tpsim run over a sweep ends with one table across the points: each variant's time and speedup") {
  const std::string json = temp_path("sweep.json");
  const auto r = test::run_tpsim("run scenarios/forward/llama3-70b-tp8-prefill-sweep.yaml --json " + json);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json doc = nlohmann::json::parse(test::read_file(json));
  std::filesystem::remove(json);
  const std::string summary = r.out.substr(r.out.find("summary of the "));
  // The scenario sweeps one axis: each point's row starts with its value, then each variant's time in the JSON's order
  // (and its speedup after the first).
  struct Row {
    std::string text;
    size_t found_to = 0;   // the end of the last cell found
    bool baseline = true;  // the next cell is the point's first variant
  };
  std::map<std::string, Row> rows;  // by the point's axis values
  size_t points = 0;
  for (const nlohmann::json& result : doc["results"]) {
    const std::string point = result["point"].dump();
    if (!rows.count(point)) {
      ++points;
      const std::string value = result["point"].begin().value().get<std::string>();
      const size_t at = summary.find('\n' + value + ' ');
      REQUIRE(at != std::string::npos);
      rows[point] = {summary.substr(at + 1, summary.find('\n', at + 1) - at - 1), value.size()};
    }
    Row& row = rows[point];
    std::string cell = model::format_number("%.3f", result["time_s"].get<double>() * 1e3);
    if (!row.baseline) cell += " (" + model::format_number("%.3fx", result["speedup"].get<double>()) + ")";
    row.baseline = false;
    INFO(row.text << " / " << cell);
    const size_t at = row.text.find(cell, row.found_to);
    REQUIRE(at != std::string::npos);
    row.found_to = at + cell.size();
  }
  CHECK(points > 1);
  CHECK_THAT(summary, Contains("summary of the " + std::to_string(points) + " points"));
}

TEST_CASE(
    "a pipeline's breakdown starts with the step: each stage's passes over every micro-batch, its optimizer "
    "and its waiting add up to its end") {
  for (const std::string schedule :
       {"{schedule: 1f1b}", "{schedule: interleaved, virtual_stages: 2}", "{schedule: zb-h1}"}) {
    INFO(schedule);
    const sim::ScenarioRun r = run(pipeline_job(schedule));
    const sim::VariantRun& v = r.variants.front();
    const sim::PipelineRun& p = *v.pipeline;
    double slowest = 0;
    for (const sim::StageRun& s : p.stages) {
      // Every stage runs every micro-batch through each of its chunks.
      int runs = 0;
      double kinds = 0;
      for (const auto& [pass, count] : s.programs) {
        runs += count;
        const sim::BreakdownRow total = sim::breakdown(v.passes.at(pass)).back();
        kinds += count * (total.gemm_s + total.attention_s + total.memory_s + total.exposed_comm_s);
      }
      CHECK(runs == p.microbatches * p.spec.virtual_stages);
      // The kinds' sum is the passes' time but for the host's waits inside them: under 2% of it here. Zero-bubble
      // schedules run the backward as two passes, the input gradient's exposing communication the whole program hid
      // behind weight-gradient GEMMs: their passes take longer than the program's kinds, never shorter.
      if (schedule.find("zb") == std::string::npos) {
        CHECK(kinds == Approx(s.busy_s).epsilon(0.02));
      } else {
        CHECK(kinds <= s.busy_s);
      }
      CHECK(s.end_s >= s.busy_s + s.optimizer_s);
      slowest = std::max(slowest, s.end_s);
    }
    CHECK(slowest == Approx(v.metrics.time_s).epsilon(1e-12));
    const std::string table = cli::breakdown_table(r);
    CHECK(table.rfind("step of sp: ", 0) == 0);  // before the chunk programs' blocks
    if (schedule == "{schedule: 1f1b}") {
      // The two middle stages run the same program over the same schedule: one row.
      CHECK_THAT(table, Contains("\n  1-2  "));
    }
    CHECK_THAT(table, Contains(" + embedding, one micro-batch), ms per GPU"));
  }
}

TEST_CASE("a pipeline step's critical path runs from zero to the step's end through the schedule's passes") {
  for (const std::string schedule :
       {"{schedule: gpipe}", "{schedule: 1f1b}", "{schedule: interleaved, virtual_stages: 2}", "{schedule: zb-h1}",
        "{schedule: zb-v, virtual_stages: 2}"}) {
    INFO(schedule);
    const sim::ScenarioRun r = run(pipeline_job(schedule));
    const sim::VariantRun& v = r.variants.front();
    const std::vector<sim::PathLink> path = sim::pipeline_critical_path(*v.pipeline);
    REQUIRE(!path.empty());
    double at = 0, shares = 0;
    std::set<std::tuple<int, double, double>> spans;  // (stage, start, end) of every pass
    for (size_t stage = 0; stage < v.pipeline->spans.size(); ++stage) {
      for (const model::PipelineSpan& s : v.pipeline->spans[stage]) spans.insert({int(stage), s.start_s, s.end_s});
    }
    for (const sim::PathLink& link : path) {
      CHECK(link.start_s == Approx(at).margin(1e-12));  // contiguous
      at = link.end_s;
      shares += link.share;
      if (link.kind == "forward" || link.kind == "backward" || link.kind == "weight gradient") {
        CHECK(spans.count({link.rank, link.start_s, link.end_s}) == 1);  // a pass as the schedule ran it
      }
    }
    CHECK(at == Approx(v.metrics.time_s).epsilon(1e-12));
    CHECK(shares == Approx(1.0).epsilon(1e-9));
    // The step starts with stage 0's first forward, and every stage's passes lie on a path that crosses the pipeline.
    CHECK(path.front().kind == "forward");
    CHECK(path.front().rank == 0);
    const std::string text = cli::critical_path_table(r);
    CHECK(text.rfind("critical path of sp's step (the pipeline's passes, ", 0) == 0);
    // --json --critical-path holds the same chain first, link for link.
    const nlohmann::json json = nlohmann::json::parse(cli::result_json({{{}, r}}, true));
    const nlohmann::json& step = json["results"][0]["critical_path"][0];
    CHECK(step["pass"] == "step");
    REQUIRE(step["links"].size() == path.size());
    CHECK(step["links"].back()["end_s"].get<double>() == Approx(v.metrics.time_s).epsilon(1e-12));
  }
}

TEST_CASE("a trace shows one GPU per pass by default, every GPU on request, with arrows that join their slices") {
  const std::string one = temp_path("one.json"), all = temp_path("all.json");
  REQUIRE(test::run_tpsim("run scenarios/quickstart.yaml -q --trace " + one).exit_code == 0);
  REQUIRE(test::run_tpsim("run scenarios/quickstart.yaml -q --trace-ranks all --trace " + all).exit_code == 0);
  const auto pids = [](const nlohmann::json& trace) {
    std::set<int> out;
    for (const auto& e : trace["traceEvents"]) {
      if (e["ph"] == "X") out.insert(e["pid"].get<int>());
    }
    return out;
  };
  const nlohmann::json trace_one = nlohmann::json::parse(test::read_file(one));
  const nlohmann::json trace_all = nlohmann::json::parse(test::read_file(all));
  std::filesystem::remove(one);
  std::filesystem::remove(all);
  CHECK(pids(trace_one).size() == 4);      // 4 variants, GPU 0 of each
  CHECK(pids(trace_all).size() == 4 * 8);  // and every one of the 8
  // Each arrow: a start, steps, and a finish of one id, name and category, each inside a slice of its thread.
  std::map<std::tuple<int, int>, std::vector<std::pair<double, double>>> slices;
  std::map<int, std::string> phases;
  for (const auto& e : trace_all["traceEvents"]) {
    if (e["ph"] == "X") {
      const double ts = e["ts"].get<double>();
      slices[{e["pid"].get<int>(), e["tid"].get<int>()}].emplace_back(ts, ts + e["dur"].get<double>());
    }
  }
  size_t flows = 0;
  for (const auto& e : trace_all["traceEvents"]) {
    const std::string ph = e["ph"].get<std::string>();
    if (ph != "s" && ph != "t" && ph != "f") continue;
    ++flows;
    phases[e["id"].get<int>()] += ph;
    const double ts = e["ts"].get<double>();
    bool inside = false;
    for (const auto& [start, end] : slices[{e["pid"].get<int>(), e["tid"].get<int>()}]) {
      inside = inside || (start <= ts && ts <= end);
    }
    CHECK(inside);
  }
  CHECK(flows > 0);
  for (const auto& [id, sequence] : phases) {
    INFO(id);
    CHECK(sequence.front() == 's');
    CHECK(sequence.back() == 'f');
    CHECK(sequence.find_first_of("sf", 1) == sequence.size() - 1);
  }
  // The tp variant's all-reduces join all 8 ranks: a start, six steps and a finish each.
  CHECK(std::count_if(phases.begin(), phases.end(), [](const auto& p) { return p.second.size() == 8; }) > 0);
}

TEST_CASE("a pipeline's trace draws an arrow from each pass to the next stage's pass that reads its output") {
  const sim::ScenarioRun r = run(pipeline_job("{schedule: 1f1b}"));
  const nlohmann::json trace = nlohmann::json::parse(sim::chrome_trace_json(r));
  size_t arrows = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "s" && e["name"].get<std::string>().rfind("send ", 0) == 0) ++arrows;
  }
  // Each micro-batch's forward crosses the 3 boundaries between 4 stages, and its backward crosses them back.
  const int m = 8, boundaries = 3;
  CHECK(arrows == size_t(2 * m * boundaries));
}

TEST_CASE("the trace's --trace-ranks takes a count of GPUs or all, and refuses anything else with one line") {
  for (const std::string bad : {"0", "two", "1x"}) {
    INFO(bad);
    const auto r = test::run_tpsim("run scenarios/quickstart.yaml -q --trace-ranks " + bad);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("--trace-ranks " + bad + ": give how many GPUs"));
  }
}
