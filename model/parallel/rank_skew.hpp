// Rank skew: seeded variability of kernel durations, per kernel and per GPU, off by default. Collectives
// wait for their slowest rank, so variability lengthens a step; a scenario's `skew:` section asks for it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpsim::model {

struct RankSkew {
  // Each kernel instance (op, rank) takes its duration times a fresh factor of mean 1 and this
  // coefficient of variation (temporal variability: the same kernel on the same GPU from run to run).
  double kernel_cv = 0;
  // Each GPU runs every kernel times one factor of mean 1 and this coefficient of variation, drawn once
  // per run (spatial variability: slower and faster GPUs of one model).
  double gpu_cv = 0;
  uint64_t seed = 1;
  bool enabled() const { return kernel_cv > 0 || gpu_cv > 0; }
};

// The duration factor of kernel `op` on GPU `rank`: the product of its kernel and GPU factors, each
// log-normal with mean 1 and its CV, drawn from a counter-based generator of (seed, op, rank), so the same
// inputs give the same factors on every machine and in every order of simulation. 1 when disabled.
double skew_factor(const RankSkew& skew, uint64_t op, int rank);

}  // namespace tpsim::model
