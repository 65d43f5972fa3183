// Kernel-name patterns of cuBLAS, CUTLASS, Triton, FlashAttention, cuDNN, PyTorch's ATen kernels and NCCL.
#include "calibrate/trace/kernel_class.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace tpsim::calibrate {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool has_any(const std::string& s, std::initializer_list<const char*> parts) {
  return std::any_of(parts.begin(), parts.end(), [&](const char* p) { return s.find(p) != std::string::npos; });
}

}  // namespace

std::string class_name(KernelClass c) {
  return std::string(name_of(kKernelClassNames, c));
}

KernelClass classify_kernel(const TraceKernel& kernel) {
  if (kernel.kind != ActivityKind::kKernel) return KernelClass::kCopy;
  const std::string n = lower(kernel.name);
  if (n.rfind("nccl", 0) == 0 || has_any(n, {"ncclkernel_", "nccldevkernel_"})) return KernelClass::kNccl;
  // Attention before GEMM: cuDNN's and CUTLASS's fused attention kernels contain gemm-like words.
  if (has_any(n, {"flash_fwd", "flash_bwd", "flash_attn", "fmha", "sdpa", "_flash_", "flash::", "attention_kernel",
                  "efficient_attention"})) {
    return KernelClass::kAttention;
  }
  const bool library_gemm =
      n.find("fbgemm") == std::string::npos &&
      has_any(n, {"gemm", "nvjet", "cutlass", "xmma", "sgemm", "hgemm", "cublas", "matmul", "splitkreduce"});
  if (library_gemm || (n.rfind("triton", 0) == 0 && has_any(n, {"mm_", "_mm", "matmul"}))) {
    return KernelClass::kGemm;
  }
  if (has_any(n, {"multi_tensor_apply", "fused_adam", "adamw", "fused_sgd"})) return KernelClass::kOptimizer;
  if (has_any(n, {"elementwise",     "reduce_kernel", "reduce_",    "norm",         "softmax",
                  "catarray",        "cat_",          "copy",       "fill",         "gather",
                  "scatter",         "index",         "embedding",  "dropout",      "rope",
                  "rotary",          "silu",          "gelu",       "swiglu",       "nll_loss",
                  "cross_entropy",   "triton_poi",    "triton_red", "triton_per",   "compute_grad_weight",
                  "sum_and_scatter", "radix_sort",    "devicescan", "deviceselect", "unique",
                  "transpose",       "nchwtonhwc",    "nhwctonchw", "bn_fw",        "bn_bw",
                  "convert_"})) {
    return KernelClass::kMemory;
  }
  return KernelClass::kOther;
}

std::string kernel_short_name(const std::string& name) {
  size_t from = 0;
  for (;;) {
    const size_t open = name.find('(', from);
    if (open == std::string::npos) return name;
    if (name.compare(open, 21, "(anonymous namespace)") != 0) return name.substr(0, open);
    from = open + 21;
  }
}

NcclKernelName parse_nccl_kernel(const std::string& name) {
  // ncclKernel_AllReduce_RING_LL_Sum_float(...), ncclDevKernel_AllGather_RING_LL(...),
  // ncclDevKernel_SendRecv(...), ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(...).
  NcclKernelName out;
  const std::string n = lower(name.substr(0, name.find('(')));
  static const std::array<std::pair<const char*, const char*>, 8> kKinds = {{{"allreduce", "allreduce"},
                                                                             {"allgather", "allgather"},
                                                                             {"reducescatter", "reducescatter"},
                                                                             {"alltoall", "alltoall"},
                                                                             {"sendrecv", "sendrecv"},
                                                                             {"broadcast", "broadcast"},
                                                                             {"reduce", "reduce"},
                                                                             {"send", "sendrecv"}}};
  for (const auto& [pattern, kind] : kKinds) {
    if (n.find(pattern) != std::string::npos) {
      out.collective = kind;
      break;
    }
  }
  if (out.collective.empty() && has_any(n, {"_send", "_recv"})) out.collective = "sendrecv";
  // The algorithm and protocol follow the kind: _RING_LL128_, _TREE_SIMPLE, _NVLS_, _COLLNET_DIRECT_.
  const size_t kind_at = out.collective.empty() ? 0 : n.find(out.collective);
  const std::string rest = n.substr(kind_at);
  if (has_any(rest, {"_ring"})) out.algorithm = "ring";
  if (has_any(rest, {"_tree"})) out.algorithm = "tree";
  if (has_any(rest, {"_nvls"})) out.algorithm = "nvls";
  if (has_any(rest, {"_collnet"})) out.algorithm = "collnet";
  if (has_any(rest, {"_ll128"})) {
    out.protocol = "ll128";
  } else if (has_any(rest, {"_ll_", "_ll("}) || rest.ends_with("_ll")) {
    out.protocol = "ll";
  } else if (has_any(rest, {"_simple"})) {
    out.protocol = "simple";
  }
  return out;
}

}  // namespace tpsim::calibrate
