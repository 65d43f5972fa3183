// A scenario file (schema: docs/scenarios.md): model, hardware, calibration, workload, parallelism, pipeline,
// variants, sweep, and the optional skew.
// Hardware and calibration names stay as located references; sim/ resolves them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "model/graph/variant.hpp"
#include "model/graph/workload.hpp"
#include "model/layers/arch_spec.hpp"
#include "model/parallel/context_parallel.hpp"
#include "model/parallel/mesh_order.hpp"
#include "model/parallel/rank_skew.hpp"
#include "model/pipeline/pipeline_spec.hpp"

namespace tpsim::model {

// A value that a later stage resolves, with where it was written for error messages.
struct LocatedRef {
  std::string value;
  YAML::Node node;  // the YAML node (its mark gives line and column); may be an inline mapping
};

struct Parallelism {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int ep = 1;
  int etp = 1;  // each expert sliced over etp GPUs inside the expert-parallel group (ep > 1 only)
  // Each sequence split over cp GPUs (model/parallel/context_parallel.hpp), placed next to TP as Megatron's default
  // order (tp-cp-ep-dp-pp) and TorchTitan's mesh (pp, dp_replicate, dp_shard, cp, tp) place it: CP member k of rank r
  // is GPU r + k tp, the data-parallel replicas outside them.
  int cp = 1;
  CpCommType cp_comm = CpCommType::kP2p;  // parallelism.cp_comm_type
  MeshOrder order = MeshOrder::kTpDpPp;   // parallelism.order

  // The GPUs at the same TP rank of one pipeline stage: every CP member of every data-parallel replica. They hold the
  // same parameters, so the gradients reduce over all of them (Megatron's and TorchTitan's dp x cp group).
  int replicas() const { return dp * cp; }
  // GPUs between a rank and the same rank of the next data-parallel replica (or CP member), and of the next stage.
  int dp_stride() const { return order == MeshOrder::kTpDpPp ? tp : tp * pp; }
  int pp_stride() const { return order == MeshOrder::kTpDpPp ? tp * replicas() : tp; }
};

struct Scenario {
  std::string name;
  std::string file;       // the scenario file as given
  std::string model_ref;  // preset name, hf_config path, or "inline"
  ArchSpec arch;
  LocatedRef gpu;                  // hardware.gpu: preset name or inline mapping
  LocatedRef topology;             // hardware.topology
  int nodes = 1;                   // hardware.nodes (ib-rail)
  double nic_GBps = 0;             // hardware.nic_GBps (ib-rail): each GPU's NIC, one direction; 0: the preset's
  double oversubscription = 1;     // hardware.oversubscription (ib-rail): above the rail switches; 1: non-blocking
  double power_limit_W = 0;        // hardware.power_limit_W: the GPUs' board power limit; 0: the preset's
  LocatedRef calibration;          // "default", a GPU preset's profile, or a profile file
  bool calibration_as_is = false;  // calibration.transfer: as_is (a profile of another GPU, unchanged)
  Workload workload;
  Parallelism parallelism;
  PipelineSpec pipeline;          // pipeline: the schedule of parallelism.pp > 1 stages
  RankSkew skew;                  // skew: seeded kernel variability, off unless given (model/parallel/rank_skew.hpp)
  std::vector<Variant> variants;  // the first is the baseline
  YAML::Node sweep;               // optional: dotted paths to lists of values (see sweep.hpp)
  YAML::Node root;                // the whole document
  std::string source_text;        // the file's text (sweeps parse it again for each point)
};

// Reads and checks a scenario file; throws InputError naming file:line:col and what is valid.
Scenario load_scenario(const std::string& path);
// The same from text (tests); `file` is used in messages and to resolve relative paths.
Scenario parse_scenario(const std::string& text, const std::string& file);
// The keys a section accepts: "workload", "hardware", "parallelism", "skew" or "variant"; empty otherwise.
std::vector<std::string> section_keys(const std::string& section);

// The same from a parsed document.
Scenario parse_scenario_node(const YAML::Node& root, const std::string& file);

}  // namespace tpsim::model
