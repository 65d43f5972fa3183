// Which kind of work a GPU kernel is, from its name (and, for copies, its activity kind): the classes tpsim's
// cost model has a regime for. Names are matched against patterns of the libraries that launch them
// (docs/calibration.md lists them); a kernel no pattern matches is "other", counted and listed by callers.
#pragma once

#include <string>

#include "base/enum_names.hpp"
#include "calibrate/trace/kineto_trace.hpp"

namespace tpsim::calibrate {

enum class KernelClass { kGemm, kAttention, kMemory, kOptimizer, kNccl, kCopy, kOther };
// Every class, in the order reports list them.
inline constexpr EnumName<KernelClass> kKernelClassNames[] = {
    {KernelClass::kGemm, "gemm"},           {KernelClass::kAttention, "attention"},
    {KernelClass::kMemory, "memory-bound"}, {KernelClass::kOptimizer, "optimizer"},
    {KernelClass::kNccl, "nccl"},           {KernelClass::kCopy, "copy"},
    {KernelClass::kOther, "other"},
};

std::string class_name(KernelClass c);

// cuBLAS / cuBLASLt (*gemm*, nvjet*, sm90_xmma*), CUTLASS (*cutlass*), Triton matmuls (triton_*mm*) -> GEMM;
// flash_fwd / flash_bwd, cuDNN SDPA (*sdpa*, *fmha*, *flash*) -> attention; multi_tensor_apply (fused
// optimizers) -> optimizer; elementwise, reductions, norms, softmax, cat, copies and fills -> memory-bound;
// ncclKernel_* / ncclDevKernel_* -> NCCL; memcpy and memset activities -> copy.
KernelClass classify_kernel(const TraceKernel& kernel);

// A kernel's name without its argument list ("void f<int>(int*, ...)" -> "void f<int>"), keeping
// "(anonymous namespace)" inside it.
std::string kernel_short_name(const std::string& name);

// What an NCCL kernel's name says: the collective in the schema's names (allreduce, allgather, reducescatter,
// alltoall, sendrecv, broadcast, ...), NCCL's algorithm (ring, tree, nvls, collnet; "unknown" when the name
// does not say, as ncclDevKernel_* names often do not) and protocol (ll, ll128, simple, or unknown).
struct NcclKernelName {
  std::string collective;
  std::string algorithm = "unknown";
  std::string protocol = "unknown";
};
NcclKernelName parse_nccl_kernel(const std::string& name);

}  // namespace tpsim::calibrate
