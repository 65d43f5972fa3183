// Enumeration of a plan's layouts and their scenario text.
#include "plan/plan_space.hpp"

#include <algorithm>
#include <sstream>

#include "input/scenario_writer.hpp"

namespace tpsim::plan {
namespace {

// Deepest pipeline the defaults try (Llama 3 405B trained with 16 stages; deeper is rare).
constexpr int kMaxDefaultPp = 32;

// Layers over `chunks` chunks with the end chunks lighter; empty where they split evenly or cannot split so.
std::vector<int64_t> uneven_split(int64_t layers, int64_t chunks) {
  const int64_t base = layers / chunks, extra = layers % chunks;
  if (extra == 0 || chunks < 3 || extra > chunks - 2 || base < 1) return {};
  std::vector<int64_t> out(static_cast<size_t>(chunks), base);
  for (int64_t i = 1; i <= extra; ++i) ++out[static_cast<size_t>(i)];
  return out;
}

// The axes a layout of `gpus` GPUs and tp x pp varies beyond its mesh, in a fixed order.
void add_variations(const model::PlanSpec& plan, const model::ArchSpec& arch, int gpus_per_node, Layout base,
                    std::vector<Candidate>& out) {
  const model::PlanSpace& s = plan.space;
  const bool moe = arch.moe.enabled();
  std::vector<int> eps = {1};
  if (moe) {
    eps = s.ep.empty() ? std::vector<int>{} : s.ep;
    if (s.ep.empty()) {
      for (int ep : powers_of_two_up_to(base.tp * base.dp)) {
        if (arch.moe.experts % ep == 0) eps.push_back(ep);
      }
    }
  }
  const std::vector<int> etps = moe ? or_default(s.etp, {1}) : std::vector<int>{1};
  const std::vector<std::string> dps =
      base.dp * base.cp > 1
          ? or_default(s.data_parallel, moe ? std::vector<std::string>{"ddp"} : std::vector<std::string>{"fsdp", "ddp"})
          : std::vector<std::string>{"none"};
  std::vector<std::pair<std::string, int>> schedules = {{"none", 1}};
  if (base.pp > 1) {
    schedules.clear();
    for (const std::string& kind : or_default(s.schedule, {"1f1b", "interleaved", "zb-h1"})) {
      if (kind == "interleaved") {
        for (int v : or_default(s.virtual_stages, {2})) schedules.emplace_back(kind, v);
      } else {
        schedules.emplace_back(kind, kind == "zb-v" ? 2 : 1);
      }
    }
  }
  const std::vector<std::string> modes =
      base.tp > 1 ? or_default(s.tp_mode, {"sp", "async"}) : std::vector<std::string>{"sp"};
  const std::vector<std::string> dispatchers =
      moe ? or_default(s.dispatcher, {"nccl"}) : std::vector<std::string>{"nccl"};
  const std::vector<bool> tbos = moe ? or_default(s.two_batch_overlap, {false}) : std::vector<bool>{false};
  for (int ep : eps)
    for (int etp : etps)
      for (const std::string& dp : dps)
        for (const auto& [schedule, vs] : schedules)
          for (int mb : or_default(s.micro_batch, {1, 2}))
            for (const std::string& recompute : or_default(s.recompute, {"none", "selective", "full"}))
              for (const std::string& dtype : or_default(s.dtype, {"bf16"}))
                for (const std::string& mode : modes)
                  for (int chunks : mode == "async" ? or_default(s.chunks, {base.tp}) : std::vector<int>{1})
                    for (const std::string& dispatcher : dispatchers)
                      for (bool tbo : tbos) {
                        Layout l = base;
                        l.ep = ep, l.etp = etp, l.data_parallel = dp, l.schedule = schedule, l.virtual_stages = vs;
                        l.micro_batch = mb, l.recompute = recompute, l.dtype = dtype, l.tp_mode = mode;
                        l.chunks = chunks, l.dispatcher = dispatcher, l.two_batch_overlap = tbo;
                        if (l.pp > 1) l.chunk_layers = uneven_split(arch.layers, int64_t{l.pp} * l.virtual_stages);
                        // HSDP shards over the replicas of one node (or two, where tp fills it) and replicates across.
                        if (dp == "hsdp") l.shard_degree = std::max(2, gpus_per_node / l.tp);
                        out.push_back(Candidate{out.size(), l});
                      }
}

}  // namespace

std::vector<int> powers_of_two_up_to(int limit) {
  std::vector<int> out;
  for (int v = 1; v <= limit; v *= 2) out.push_back(v);
  return out;
}

std::string Layout::program_key() const {
  std::ostringstream key;
  key << gpus << '/' << tp << '/' << pp << '/' << cp << '/' << virtual_stages << '/' << ep << '/' << etp << '/'
      << micro_batch << '/' << recompute << '/' << dtype << '/' << tp_mode << '/' << chunks << '/' << dispatcher << '/'
      << two_batch_overlap;
  return key.str();
}

std::string describe(const Layout& l) {
  std::ostringstream out;
  out << "tp" << l.tp << " pp" << l.pp << " dp" << l.dp;
  if (l.cp > 1) out << " cp" << l.cp;
  if (l.ep > 1) out << " ep" << l.ep;
  if (l.etp > 1) out << " etp" << l.etp;
  if (l.dp * l.cp > 1)
    out << " " << l.data_parallel << (l.data_parallel == "hsdp" ? std::to_string(l.shard_degree) : "");
  out << " mb" << l.micro_batch;
  if (l.pp > 1) out << " " << l.schedule << (l.schedule == "interleaved" ? std::to_string(l.virtual_stages) : "");
  if (!l.chunk_layers.empty()) out << " uneven";
  out << " " << l.recompute << " " << l.tp_mode;
  if (l.tp_mode == "async") out << l.chunks;
  if (l.dtype != "bf16") out << " " << l.dtype;
  if (l.dispatcher != "nccl") out << " " << l.dispatcher;
  if (l.two_batch_overlap) out << " tbo";
  return out.str();
}

std::string plan_topology(const model::PlanSpec& plan, int gpus, int gpus_per_node) {
  if (!plan.topology.empty()) return plan.topology;
  return gpus > gpus_per_node ? "ib-rail" : "nvswitch";
}

std::vector<Candidate> enumerate_candidates(const model::PlanSpec& plan, const model::ArchSpec& arch,
                                            int gpus_per_node) {
  std::vector<Candidate> out;
  for (int gpus : plan.gpus) {
    const int nodes = std::max(1, (gpus + gpus_per_node - 1) / gpus_per_node);
    for (int tp : or_default(plan.space.tp, powers_of_two_up_to(std::min(gpus_per_node, gpus)))) {
      for (int pp : or_default(plan.space.pp, powers_of_two_up_to(std::min<int>(kMaxDefaultPp, arch.layers)))) {
        for (int cp : or_default(plan.space.cp, {1})) {
          if (gpus % (tp * pp * cp) != 0) continue;  // the mesh must cover the GPUs exactly
          // Context parallelism's zig-zag split needs 2 cp chunks of each sequence; dense models only.
          if (cp > 1 && (plan.seq_len % (2 * cp) != 0 || arch.moe.enabled())) continue;
          Layout base;
          base.gpus = gpus, base.nodes = nodes, base.tp = tp, base.pp = pp, base.cp = cp;
          base.dp = gpus / (tp * pp * cp);
          add_variations(plan, arch, gpus_per_node, base, out);
        }
      }
    }
  }
  return out;
}

std::string scenario_text(const model::PlanSpec& plan, const Candidate& c, int gpus_per_node) {
  const Layout& l = c.layout;
  model::TrainingLayout t;
  t.heading = plan.name + ", candidate " + std::to_string(c.index) + ": " + describe(l);
  t.name = plan.name + "-" + std::to_string(c.index);
  t.topology = plan_topology(plan, l.gpus, gpus_per_node);
  t.nodes = l.nodes;
  t.micro_batch = l.micro_batch;
  t.dtype = l.dtype;
  t.recompute = l.recompute;
  t.tp = l.tp, t.pp = l.pp, t.dp = l.dp, t.cp = l.cp, t.ep = l.ep, t.etp = l.etp;
  t.data_parallel = l.data_parallel;
  t.shard_degree = l.shard_degree;
  t.schedule = l.schedule;
  t.virtual_stages = l.virtual_stages;
  t.chunk_layers = l.chunk_layers;
  t.dispatcher = l.dispatcher;
  t.tp_mode = l.tp_mode;
  t.chunks = l.chunks;
  t.two_batch_overlap = l.two_batch_overlap;
  return model::write_training_scenario(plan, t);
}

}  // namespace tpsim::plan
