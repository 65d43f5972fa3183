// The program of one TP rank for a stack of layers: ops with rank-relative dependencies.
// Every rank runs the same program; the simulator instantiates it once per rank.
#pragma once

#include <string>
#include <vector>

#include "model/graph/op.hpp"

namespace tpsim::model {

class LayerGraph {
 public:
  explicit LayerGraph(int tp) : tp_(tp) {}

  int tp() const { return tp_; }
  const std::vector<Op>& ops() const { return ops_; }
  const Op& op(OpId id) const { return ops_.at(id); }
  size_t size() const { return ops_.size(); }

  // Appends an op; its deps must name ops already added (so ids are a topological order and the
  // graph is acyclic by construction): std::logic_error otherwise, a builder bug.
  OpId add(Op op);
  // Room for `ops` ops in all, so that adding up to them moves none (a builder that knows how many follow).
  void reserve(size_t ops) { ops_.reserve(ops); }
  // Marks what op `id`'s output is to a save list (a pipeline's output ops, known once it is built).
  void set_saved_as(OpId id, SavedAs saved_as) { ops_.at(id).saved_as = saved_as; }
  // The model FLOPs op `id` counts (model_flops) when they differ from what its kernel computes: the mean
  // GPU's share of a grouped expert GEMM that runs the busiest GPU's.
  void set_model_flops(OpId id, double flops) { ops_.at(id).flops = flops; }
  // The SMs collective `id`'s kernel holds (Op::comm_sms).
  void set_comm_sms(OpId id, int sms) { ops_.at(id).comm_sms = sms; }

  // Tensor identities: the ops whose outputs op `id` reads on its own rank (its data dependencies
  // without rank offset), and for every op the ops that read its output, in issue order.
  std::vector<OpId> data_inputs(OpId id) const;
  std::vector<std::vector<OpId>> consumers() const;

  // Sum of GEMM and attention FLOPs of one rank: identical across TP variants.
  double matmul_flops() const;
  // The same without recomputed ops: the FLOPs the model needs, which MFU counts.
  double model_flops() const;
  // Bytes one rank sends over the whole program.
  double wire_bytes_per_rank() const;

 private:
  int tp_;
  std::vector<Op> ops_;
};

}  // namespace tpsim::model
