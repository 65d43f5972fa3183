// Delayed TP's schedule over a chain of modules, with `delta` as a scenario's tp_mode dtp means it (the
// one meaning tpsim gives it: scenarios, tpsim-real dtp and tpsim validate): module m adds its own
// partial at once and reduces the partials asynchronously; module m + 1 + delta adds the other ranks'
// share before it runs; the last delta + 1 modules reduce nothing (no module would add it) and one final
// reduction closes the chain. delta 0 is blocking TP: each module's reduction is waited for and added
// before the next module runs. Pure host logic: model/parallel/dtp.* builds graphs from it, real/ runs it on GPUs.
#pragma once

#include <string>
#include <vector>

namespace tpsim::model {

struct DtpSchedule {
  int modules = 0;
  int delta = 0;

  bool blocking() const { return delta == 0; }
  // Whether module m's partials are reduced: always when blocking, else when a later module adds them.
  bool reduces(int m) const { return blocking() || m + 1 + delta < modules; }
  // The module whose peers' share module m adds before it runs; -1 when none.
  int peer_share_before(int m) const { return !blocking() && m - 1 - delta >= 0 ? m - 1 - delta : -1; }
  bool final_reduction() const { return !blocking(); }
};

// One step of the chain in the order a rank issues it. `module` is the module the step belongs to;
// for kAddPeerShare the module whose reduction it adds; -1 for kFinalReduce.
enum class DtpStepKind {
  kAddPeerShare,  // residual += reduced partials - own partial (waits for that module's reduction)
  kGemm,          // the module's partial: its row-parallel GEMM
  kAddOwn,        // residual += own partial (at once)
  kReduce,        // all-reduce of the partials (asynchronous unless blocking)
  kAddReduced,    // blocking: residual += reduced partials
  kFinalReduce,   // all-reduce of the final residual
};

struct DtpStep {
  DtpStepKind kind;
  int module;
  bool operator==(const DtpStep&) const = default;
};

// DTP: per module [add peer share], GEMM, add own, [reduce]; then the final reduction. Blocking:
// per module GEMM, reduce, add reduced.
inline std::vector<DtpStep> dtp_chain_steps(const DtpSchedule& s) {
  std::vector<DtpStep> steps;
  for (int m = 0; m < s.modules; ++m) {
    if (s.blocking()) {
      steps.insert(steps.end(), {{DtpStepKind::kGemm, m}, {DtpStepKind::kReduce, m}, {DtpStepKind::kAddReduced, m}});
      continue;
    }
    if (const int source = s.peer_share_before(m); source >= 0) steps.push_back({DtpStepKind::kAddPeerShare, source});
    steps.insert(steps.end(), {{DtpStepKind::kGemm, m}, {DtpStepKind::kAddOwn, m}});
    if (s.reduces(m)) steps.push_back({DtpStepKind::kReduce, m});
  }
  if (s.final_reduction()) steps.push_back({DtpStepKind::kFinalReduce, -1});
  return steps;
}

inline std::string to_string(const DtpStep& step) {
  static const char* const kNames[] = {"add_peer_share", "gemm", "add_own", "reduce", "add_reduced", "final_reduce"};
  return std::string(kNames[static_cast<int>(step.kind)]) + "(" + std::to_string(step.module) + ")";
}

}  // namespace tpsim::model
