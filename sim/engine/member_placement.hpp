// Where the engine's simulated GPUs sit and whom each talks to: simulated GPU g is rank g % tp of member g / tp, that
// member replica member % replicas of stage member / replicas, placed on the platform at stage x stage_stride +
// replica x stride + rank; and for each communication op, the group it runs over (its TP group, its data group's
// members, or the two stages a send joins) and the GPU at each index of that group.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/graph/layer_graph.hpp"
#include "sim/engine/comm_plan.hpp"
#include "sim/engine/engine.hpp"

namespace tpsim::sim {

class MemberPlacement {
 public:
  MemberPlacement(const model::LayerGraph& graph, const EngineOptions& options)
      : graph_(graph),
        tp_(graph.tp()),
        replicas_(options.data_group ? options.data_group->replicas : 1),
        stride_(options.data_group ? options.data_group->stride : graph.tp()),
        stages_(options.data_group ? options.data_group->stages : 1),
        stage_stride_(options.data_group ? options.data_group->stage_stride : 0),
        ranks_(tp_ * replicas_ * stages_) {
    check_members();
  }

  int ranks() const { return ranks_; }
  // Platform GPUs the simulation spans: up to the last stage's last replica's TP group.
  int platform_gpus() const { return (stages_ - 1) * stage_stride_ + (replicas_ - 1) * stride_ + tp_; }

  int stage_of(int g) const { return g / tp_ / replicas_; }
  int replica_of(int g) const { return g / tp_ % replicas_; }
  int gpu_at(int stage, int replica, int rank) const { return (stage * replicas_ + replica) * tp_ + rank; }
  int host_index(int g) const { return stage_of(g) * stage_stride_ + replica_of(g) * stride_ + g % tp_; }
  bool runs_on(model::OpId id, int g) const { return model::runs_on_stage(graph_.op(id), stage_of(g)); }
  // Whether op `id` runs between the data group's members (simulated whole) rather than inside a TP group.
  bool between_members(model::OpId id) const { return replicas_ > 1 && graph_.op(id).group == model::CommGroup::kData; }
  bool between_stages(model::OpId id) const { return graph_.op(id).group == model::CommGroup::kPipeline; }
  // Replicas between two members of data-group op `id`'s group (1; hybrid sharding's replicate group: more).
  int replica_step(model::OpId id) const { return graph_.op(id).group_stride / stride_; }
  int group_size(model::OpId id) const {
    if (between_stages(id)) return 2;
    return between_members(id) ? graph_.op(id).group_size : tp_;
  }
  // GPU g's index in the group op `id` runs over (its plan's ranks): its member index, or its TP rank; for a send
  // between stages, 0 on the sender's stage and 1 on the receiver's.
  int group_index(model::OpId id, int g) const {
    if (between_stages(id)) return stage_of(g) == graph_.op(id).pipeline_stage ? 0 : 1;
    return between_members(id) ? replica_of(g) / replica_step(id) % graph_.op(id).group_size : g % tp_;
  }
  // The GPU at `index` of g's group for op `id`.
  int group_peer(model::OpId id, int g, int index) const {
    const model::Op& op = graph_.op(id);
    if (between_stages(id)) return gpu_at(index == 0 ? op.pipeline_stage : op.receiving_stage, replica_of(g), g % tp_);
    if (!between_members(id)) return g / tp_ * tp_ + index;
    const int q = replica_step(id), first = replica_of(g) - group_index(id, g) * q;
    return gpu_at(stage_of(g), first + index * q, g % tp_);
  }
  // The GPU `offset` places from g around its group for op `id`.
  int peer_at(model::OpId id, int g, int offset) const {
    const int n = group_size(id);
    return group_peer(id, g, ((group_index(id, g) + offset) % n + n) % n);
  }
  // Whether a flow of op `id` from simulated GPU src to dst crosses nodes: a send where its two GPUs sit in different
  // nodes of the job (`job`), else as its plan places the group's indices.
  bool crosses_nodes(model::OpId id, int src, int dst, const CommPlan& plan, const Fabric* job) const {
    if (between_stages(id)) return job->node_of(host_index(src)) != job->node_of(host_index(dst));
    return plan.crosses_nodes(group_index(id, src), group_index(id, dst));
  }

  // The (source, destination) platform GPU pairs every flow of `plans` travels between (a striped flow's parts
  // between the two nodes' GPUs of each rail), each once: the routes the platform needs.
  std::vector<std::pair<int, int>> flow_routes(const std::vector<CommPlan>& plans, const Fabric* job) const;

 protected:
  const model::LayerGraph& graph_;
  int tp_;            // ranks of the TP group
  int replicas_;      // data-group members simulated per stage (1 unless --no-symmetry)
  int stride_;        // platform GPUs from one replica's rank r to the next's
  int stages_;        // pipeline stages simulated (1 unless a pipelined step simulated whole)
  int stage_stride_;  // platform GPUs from one stage's rank r to the next's
  int ranks_;         // GPUs simulated

 private:
  // A data-group op simulated between members must span whole replicas: its members a multiple of the replicas'
  // stride apart (a bug of the program's builder otherwise, which would divide by zero above).
  void check_members() const {
    for (model::OpId id = 0; id < graph_.size(); ++id) {
      const model::Op& op = graph_.op(id);
      if (!between_members(id) || (op.group_stride >= stride_ && op.group_stride % stride_ == 0)) continue;
      throw std::logic_error("data-group collective " + op.name + " has members " + std::to_string(op.group_stride) +
                             " GPUs apart, not a multiple of the replicas' stride " + std::to_string(stride_));
    }
  }
};

}  // namespace tpsim::sim
