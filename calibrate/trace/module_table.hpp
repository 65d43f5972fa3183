// Which module of the model a traced kernel belongs to, by the names of the ops around its launch: a table
// per framework (PyTorch eager's below; docs/calibration.md lists it), extended by a scenario's
// trace.modules, then for GEMMs by their shape (a dimension of the FFN's width is the FFN, of the vocabulary
// the LM head, others the attention block's projections).
#pragma once

#include <string>
#include <vector>

#include "calibrate/trace/kernel_class.hpp"
#include "calibrate/trace/kineto_trace.hpp"

namespace tpsim::calibrate {

// The modules a comparison has: attention, ffn, optimizer, other (embedding, final norm, LM head, loss), and
// unattributed (measured kernels whose ops name no module: norms, residual adds, casts in eager PyTorch).
inline const std::vector<std::string>& module_names() {
  static const std::vector<std::string> kNames = {"attention", "ffn", "optimizer", "other", "unattributed"};
  return kNames;
}

// An op name (or kernel name) containing `match` belongs to `module`.
struct ModuleRule {
  std::string match;
  std::string module;
};

// PyTorch eager's table (framework "torch").
const std::vector<ModuleRule>& torch_module_rules();

// Per-GPU widths the GEMM shape rule uses (0: unknown).
struct ModuleWidths {
  int64_t ffn = 0;
  int64_t vocab = 0;
};

// The module of kernel `k`: the first rule matching its ops (innermost first) or its name, then the optimizer
// class, then the GEMM shape rule, else unattributed.
std::string module_of(const KinetoTrace& trace, const TraceKernel& k, KernelClass c,
                      const std::vector<ModuleRule>& rules, const ModuleWidths& widths);

}  // namespace tpsim::calibrate
