// A scenario file (schema: docs/scenarios.md): model, hardware, calibration, workload, parallelism, pipeline,
// variants, sweep, and the optional skew.
// Hardware and calibration names stay as located references; sim/ resolves them. Where sim/ locates an error at a
// key, the reader (input/scenario_loader.cpp) captured the key's location: no YAML node reaches sim/.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/input_error.hpp"
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
  SourceLocation at;
};

// An inline hardware.gpu mapping as input/gpu_reader.hpp read it: the GPU, or the error reading it gave, raised when
// sim/ resolves the GPU (as an unknown preset's is). Defined there: model/ does not know sim/'s GpuSpec.
struct InlineGpu;

// hardware.gpu: a preset name, or "inline" with the mapping read.
struct GpuRef : LocatedRef {
  std::shared_ptr<const InlineGpu> inline_gpu;  // set for an inline mapping
};

// Where a variant's keys were written (a key the entry leaves out: none).
struct VariantKeys {
  SourceLocation entry;
  std::optional<SourceLocation> collective, protocol;
};

// Where an entry of workload.ops and its keys were written.
struct OpEntryKeys {
  bool mapping = false;  // a mapping with a name key (a run error names the op by it)
  std::string name;      // that name as written
  SourceLocation entry;
  std::optional<SourceLocation> algorithm, protocol;
};

// Where the keys were written that sim/ checks only when it runs the scenario (against the GPU, the fabric and the
// profile), captured when the file is read. A key the file leaves out has the file without a line, unless noted.
struct ScenarioKeys {
  SourceLocation document;                            // the document's start
  std::optional<SourceLocation> calibration;          // the calibration key, where given
  SourceLocation power_limit;                         // hardware.power_limit_W
  SourceLocation attention_kernel;                    // implementation.attention, else the implementation key
  SourceLocation dispatcher;                          // moe.dispatcher, else the calibration (Scenario::calibration.at)
  SourceLocation dtype, attention_dtype, fp8_recipe;  // workload.dtype, .attention_dtype, .fp8_recipe
  std::vector<OpEntryKeys> ops;                       // workload.ops, in order (phase ops)
  std::vector<VariantKeys> variants;                  // variants, in order (none where the file gives none)

  // The variant entry `index`, or the document where the file gives none.
  const SourceLocation& variant(size_t index) const {
    return index < variants.size() ? variants[index].entry : document;
  }
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
  GpuRef gpu;                      // hardware.gpu: preset name or inline mapping
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
  bool has_sweep = false;         // a sweep: section, read from source_text by input/sweep.hpp
  std::string source_text;        // the file's text (sweeps parse it again for each point)
  ScenarioKeys keys;              // where sim/'s checks locate their errors
};

// Reads and checks a scenario file; throws InputError naming file:line:col and what is valid.
Scenario load_scenario(const std::string& path);
// The same from text (tests); `file` is used in messages and to resolve relative paths.
Scenario parse_scenario(const std::string& text, const std::string& file);
// The keys a section accepts: "workload", "hardware", "parallelism", "skew" or "variant"; empty otherwise.
std::vector<std::string> section_keys(const std::string& section);

}  // namespace tpsim::model
