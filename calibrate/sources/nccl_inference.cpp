// NCCL's tuner applied to measured points whose algorithm or protocol their source does not name.
#include "calibrate/sources/nccl_inference.hpp"

#include "sim/cost/fabric.hpp"
#include "sim/cost/nccl_tuner.hpp"

namespace tpsim::calibrate {

void infer_nccl_choices(std::vector<Measurement>& points, const sim::GpuSpec& gpu) {
  for (Measurement& m : points) {
    if (m.kind != "collective" || m.gpu != gpu.name) continue;
    if (m.algorithm != "unknown" && m.protocol != "unknown") continue;
    const std::optional<model::CollectiveKind> kind = model::collective_kind_named(m.collective);
    if (!kind) continue;
    const std::optional<model::CollectiveAlgorithm> forced = model::collective_algorithm_named(m.algorithm);
    if (m.algorithm != "unknown" && !forced) continue;  // an algorithm the tuner has no model of
    const std::optional<model::Protocol> protocol =
        m.protocol == "unknown" ? model::Protocol::kAuto : model::protocol_named(m.protocol);
    if (!protocol) continue;
    const sim::Fabric fabric = sim::measured_fabric(gpu, m.nodes, m.nic_GBps * 1e9);
    const sim::NcclSystem system = sim::nccl_system(gpu, fabric, m.ranks);
    for (const sim::NcclOption& o : sim::nccl_ranking(system, *kind, m.bytes, *protocol)) {
      if (forced && o.algorithm != *forced) continue;
      m.algorithm = model::to_string(o.algorithm);
      m.protocol = model::to_string(o.protocol);
      m.provenance["nccl_choice"] = "inferred: NCCL 2.27's tuner (as tpsim models it) runs " +
                                    sim::nccl_option_name(o.algorithm, o.protocol) + " here";
      break;
    }
  }
}

}  // namespace tpsim::calibrate
