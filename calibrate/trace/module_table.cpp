// PyTorch eager's op names by module, and the GEMM shape rule.
#include "calibrate/trace/module_table.hpp"

#include "calibrate/trace/trace_points.hpp"

namespace tpsim::calibrate {

const std::vector<ModuleRule>& torch_module_rules() {
  static const std::vector<ModuleRule> kRules = {{"Optimizer.step", "optimizer"},
                                                 {"_fused_adam", "optimizer"},
                                                 {"clip_grad", "optimizer"},
                                                 {"_foreach_norm", "optimizer"},
                                                 {"scaled_dot_product", "attention"},
                                                 {"_attention", "attention"},
                                                 {"flash_attn", "attention"},
                                                 {"rotary", "attention"},
                                                 {"embedding", "other"},
                                                 {"cross_entropy", "other"},
                                                 {"nll_loss", "other"},
                                                 {"log_softmax", "other"}};
  return kRules;
}

std::string module_of(const KinetoTrace& trace, const TraceKernel& k, KernelClass c,
                      const std::vector<ModuleRule>& rules, const ModuleWidths& widths) {
  for (int op = k.op; op >= 0; op = trace.ops[op].parent) {
    for (const ModuleRule& r : rules) {
      if (trace.ops[op].name.find(r.match) != std::string::npos) return r.module;
    }
  }
  for (const ModuleRule& r : rules) {
    if (k.name.find(r.match) != std::string::npos) return r.module;
  }
  if (c == KernelClass::kOptimizer) return "optimizer";
  if (c == KernelClass::kAttention) return "attention";
  if (c == KernelClass::kGemm && k.op >= 0) {
    const OpGemm g = gemm_of_op(trace.ops[k.op]);
    if (g.m > 0) {
      for (int64_t d : {g.m, g.n, g.k}) {
        if (widths.vocab > 0 && d == widths.vocab) return "other";
      }
      for (int64_t d : {g.m, g.n, g.k}) {
        if (widths.ffn > 0 && d == widths.ffn) return "ffn";
      }
      return "attention";
    }
  }
  return "unattributed";
}

}  // namespace tpsim::calibrate
