// Enumeration of a serving plan's layouts and their generate scenarios.
#include "plan/serving_space.hpp"

#include <algorithm>
#include <sstream>

#include "input/scenario_writer.hpp"
#include "input/serving_plan.hpp"
#include "plan/plan_space.hpp"

namespace tpsim::plan {
namespace {

// Most sequences per TP group the defaults try; the KV cache prunes what does not fit (docs/plan.md).
constexpr int kMaxDefaultBatch = 1024;

// Expert TP (ep 1: every expert split over the TP group), and expert groups of a power of two GPUs from tp up to the
// plan's GPUs that split the experts evenly (ep / tp attention data-parallel TP groups each).
std::vector<int> default_eps(const model::ArchSpec& arch, int tp, int gpus) {
  std::vector<int> out = {1};
  for (int ep = 2; ep <= gpus; ep *= 2) {
    if (ep % tp == 0 && arch.moe.experts % ep == 0) out.push_back(ep);
  }
  return out;
}

void add_variations(const model::PlanSpec& plan, const model::ArchSpec& arch, ServingLayout base,
                    std::vector<ServingCandidate>& out) {
  const model::PlanSpace& s = plan.space;
  const bool split_experts = arch.moe.enabled() && base.ep > 1;
  base.tp_mode = split_experts && base.tp > 1 ? "sp" : "tp";
  const std::vector<std::string> dispatchers =
      split_experts ? or_default(s.dispatcher, {"nccl"}) : std::vector<std::string>{"nccl"};
  const std::vector<bool> overlaps =
      split_experts ? or_default(s.two_batch_overlap, {false}) : std::vector<bool>{false};
  for (int batch : or_default(s.batch, powers_of_two_up_to(kMaxDefaultBatch)))
    for (const std::string& dtype : or_default(s.dtype, {"bf16"}))
      for (const std::string& dispatcher : dispatchers)
        for (bool overlap : overlaps)
          for (bool graphs : or_default(s.cuda_graphs, {true})) {
            ServingLayout l = base;
            l.batch = batch, l.dtype = dtype, l.dispatcher = dispatcher, l.two_batch_overlap = overlap;
            l.cuda_graphs = graphs;
            out.push_back(ServingCandidate{out.size(), l});
          }
}

}  // namespace

std::string ServingLayout::program_key() const {
  std::ostringstream key;
  key << gpus << '/' << tp << '/' << ep << '/' << batch << '/' << dtype << '/' << dispatcher << '/' << two_batch_overlap
      << '/' << cuda_graphs;
  return key.str();
}

std::string describe(const ServingLayout& l) {
  std::ostringstream out;
  out << "tp" << l.tp;
  if (l.ep > 1) out << " ep" << l.ep;
  if (l.attention_dp() > 1) out << " adp" << l.attention_dp();
  out << " b" << l.batch;
  if (l.dispatcher != "nccl") out << " " << l.dispatcher;
  if (l.two_batch_overlap) out << " tbo";
  if (l.dtype != "bf16") out << " " << l.dtype;
  if (!l.cuda_graphs) out << " eager";
  return out.str();
}

std::vector<ServingCandidate> enumerate_serving_candidates(const model::PlanSpec& plan, const model::ArchSpec& arch,
                                                           int gpus_per_node) {
  std::vector<ServingCandidate> out;
  for (int gpus : plan.gpus) {
    for (int tp : or_default(plan.space.tp, powers_of_two_up_to(std::min(gpus_per_node, gpus)))) {
      const std::vector<int> eps =
          arch.moe.enabled() ? or_default(plan.space.ep, default_eps(arch, tp, gpus)) : std::vector<int>{1};
      for (int ep : eps) {
        ServingLayout base;
        base.gpus = gpus, base.tp = tp, base.ep = ep;
        if (gpus % base.unit_gpus() != 0) continue;  // the units must cover the GPUs exactly
        base.nodes = std::max(1, (base.unit_gpus() + gpus_per_node - 1) / gpus_per_node);
        add_variations(plan, arch, base, out);
      }
    }
  }
  return out;
}

std::string serving_scenario_text(const model::PlanSpec& plan, const ServingCandidate& c, int gpus_per_node) {
  const ServingLayout& l = c.layout;
  model::GenerateLayout g;
  g.heading = plan.name + ", candidate " + std::to_string(c.index) + ": " + describe(l);
  if (l.replicas() > 1) {
    g.heading += " (one of " + std::to_string(l.replicas()) + " replicas on " + std::to_string(l.gpus) + " GPUs)";
  }
  g.name = plan.name + "-" + std::to_string(c.index);
  g.topology = plan_topology(plan, l.unit_gpus(), gpus_per_node);
  g.nodes = l.nodes;
  g.batch = l.batch, g.dtype = l.dtype, g.cuda_graphs = l.cuda_graphs;
  g.tp = l.tp, g.ep = l.ep;
  g.dispatcher = l.dispatcher, g.tp_mode = l.tp_mode, g.two_batch_overlap = l.two_batch_overlap;
  return model::write_generate_scenario(plan, g);
}

}  // namespace tpsim::plan
