// The Kineto trace reader: events by category, the kernel -> launching op join (correlation ids and ac2g
// flows), recorded shapes and record_param_comms, gzip, kernel classes, and located refusals.
#include <zlib.h>

#include <catch2/catch.hpp>
#include <numeric>

#include "base/input_error.hpp"
#include "calibrate/trace/gzip_text.hpp"
#include "calibrate/trace/kernel_class.hpp"
#include "calibrate/trace/kineto_trace.hpp"
#include "calibrate/trace/trace_points.hpp"

using namespace tpsim;
using namespace tpsim::calibrate;
using Catch::Matchers::Contains;

namespace {

// One step: aten::mm (bf16 8192x4096 @ 4096x1024) launching an nvjet GEMM through correlation 7, an
// all-reduce through record_param_comms (4M bf16 over 8 ranks) launching an NCCL kernel through 8, twice
// (the second call 50 us slower: it waited for a peer), and a peer copy.
const std::string kTrace = R"T({"schemaVersion": 1, "record_shapes": 1,
 "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
 "distributedInfo": {"rank": 0, "world_size": 8},
 "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 100, "dur": 50,
   "args": {"Input Dims": [[8192, 4096], [1024, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 110, "dur": 30,
   "args": {"Input Dims": [[8192, 4096], [4096, 1024]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 120, "dur": 6,
   "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "pid": 0, "tid": 7,
   "ts": 200, "dur": 120.5, "args": {"correlation": 7, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "pid": 1, "tid": 1, "ts": 300, "dur": 40, "args": {}},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 305, "dur": 30,
   "args": {"Collective name": "allreduce", "In msg nelems": 4194304, "Out msg nelems": 4194304,
            "dtype": "BFloat16", "Group size": 8, "Process Group Name": "0"}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": 1, "tid": 1, "ts": 310, "dur": 5,
   "args": {"correlation": 8}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
   "pid": 0, "tid": 20, "ts": 400, "dur": 80, "args": {"correlation": 8, "device": 0, "stream": 20}},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 505, "dur": 30,
   "args": {"Collective name": "allreduce", "In msg nelems": 4194304, "Out msg nelems": 4194304,
            "dtype": "BFloat16", "Group size": 8, "Process Group Name": "0"}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": 1, "tid": 1, "ts": 510, "dur": 5,
   "args": {"correlation": 9}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
   "pid": 0, "tid": 20, "ts": 600, "dur": 130, "args": {"correlation": 9, "device": 0, "stream": 20}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy PtoP (Device -> Device)", "pid": 0, "tid": 21, "ts": 800,
   "dur": 20, "args": {"correlation": 10, "device": 0, "stream": 21, "bytes": 8388608}},
  {"ph": "X", "cat": "kernel", "name": "my_custom_kernel", "pid": 0, "tid": 7, "ts": 900, "dur": 3, "args": {}}
 ]})T";

std::string gzip(const std::string& text) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

const TraceKernel& kernel_named(const KinetoTrace& t, const std::string& part) {
  for (const TraceKernel& k : t.kernels) {
    if (k.name.find(part) != std::string::npos) return k;
  }
  FAIL("no kernel " << part);
  return t.kernels.front();
}

}  // namespace

TEST_CASE("a Kineto trace joins each kernel to the innermost CPU op around the runtime call that launched it") {
  const KinetoTrace t = parse_kineto_trace(kTrace, "step.json");
  CHECK(t.record_shapes);
  CHECK(t.rank == 0);
  CHECK(t.world_size == 8);
  CHECK(t.device_name == "NVIDIA H100 80GB HBM3");
  REQUIRE(t.kernels.size() == 5);  // 4 kernels and the memcpy; runtime calls and ops are not activities
  const TraceKernel& gemm = kernel_named(t, "nvjet");
  REQUIRE(gemm.op >= 0);
  CHECK(t.ops[gemm.op].name == "aten::mm");  // inside aten::linear: the innermost op
  CHECK(t.ops[t.ops[gemm.op].parent].name == "aten::linear");
  CHECK(gemm.dur_s == Approx(120.5e-6));
  CHECK(gemm.launch_dur_s == Approx(6e-6));
  const OpGemm g = gemm_of_op(t.ops[gemm.op]);
  CHECK(g.m == 8192);
  CHECK(g.n == 1024);
  CHECK(g.k == 4096);
  CHECK(g.dtype == "bf16");
  CHECK(kernel_named(t, "my_custom").op == -1);  // no correlation: no launch found, still listed
}

TEST_CASE("a kernel without a correlation id is joined through the ac2g flow that ends on it") {
  const std::string trace = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 2, "ts": 10, "dur": 20,
     "args": {"Input Dims": [[1024], [512, 256], [256, 1024]], "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]}},
    {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "pid": 0, "tid": 7, "ts": 50, "dur": 9, "args": {}},
    {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 42, "pid": 1, "tid": 2, "ts": 15},
    {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 42, "pid": 0, "tid": 7, "ts": 50, "bp": "e"}]})";
  const KinetoTrace t = parse_kineto_trace(trace, "flows.json");
  REQUIRE(t.kernels.size() == 1);
  REQUIRE(t.kernels[0].op == 0);
  const OpGemm g = gemm_of_op(t.ops[0]);
  CHECK(g.m == 512);
  CHECK(g.n == 1024);
  CHECK(g.k == 256);
}

TEST_CASE("a gzipped trace reads as its text does, detected by content whatever its name") {
  CHECK(is_gzip(gzip(kTrace)));
  CHECK(looks_like_kineto_trace(gzip(kTrace)));
  CHECK(looks_like_kineto_trace(kTrace));
  CHECK_FALSE(looks_like_kineto_trace(R"({"kind": "gemm", "gpu": "h100-sxm", "traceEvents": 1})"));
  const KinetoTrace plain = parse_kineto_trace(kTrace, "a.json");
  const KinetoTrace zipped = parse_kineto_trace(gzip(kTrace), "a.bin");
  REQUIRE(zipped.kernels.size() == plain.kernels.size());
  for (size_t i = 0; i < plain.kernels.size(); ++i) {
    CHECK(zipped.kernels[i].name == plain.kernels[i].name);
    CHECK(zipped.kernels[i].op == plain.kernels[i].op);
  }
}

TEST_CASE("kernels are classified by the library patterns of their names") {
  const auto cls = [](const std::string& name, ActivityKind kind = ActivityKind::kKernel) {
    TraceKernel k;
    k.name = name;
    k.kind = kind;
    return classify_kernel(k);
  };
  CHECK(cls("nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NTT") == KernelClass::kGemm);
  CHECK(cls("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4>(Params)") == KernelClass::kGemm);
  CHECK(cls("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64") == KernelClass::kGemm);
  CHECK(cls("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn") == KernelClass::kGemm);
  CHECK(cls("triton_tem_fused_mm_0") == KernelClass::kGemm);
  CHECK(cls("void fbgemm_gpu::permute_2D_lengths_kernel<int>(int)") != KernelClass::kGemm);
  CHECK(cls("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>(Flash_fwd_params)") ==
        KernelClass::kAttention);
  CHECK(cls("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26") == KernelClass::kAttention);
  CHECK(cls("fmha_cutlassF_bf16_aligned_64x128_rf_sm80") == KernelClass::kAttention);
  CHECK(cls("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>") ==
        KernelClass::kMemory);
  CHECK(cls("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>") == KernelClass::kMemory);
  CHECK(cls("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::FusedAdamW>") ==
        KernelClass::kOptimizer);
  CHECK(cls("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == KernelClass::kNccl);
  CHECK(cls("Memcpy DtoD (Device -> Device)", ActivityKind::kMemcpy) == KernelClass::kCopy);
  CHECK(cls("my_custom_kernel") == KernelClass::kOther);
  CHECK(kernel_short_name("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*, int)") ==
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>");
}

TEST_CASE("an NCCL kernel's name gives its collective, algorithm and protocol where it states them") {
  const NcclKernelName a = parse_nccl_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long)");
  CHECK(a.collective == "allreduce");
  CHECK(a.algorithm == "ring");
  CHECK(a.protocol == "ll");
  const NcclKernelName b = parse_nccl_kernel("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL128(ncclDevKernelArgs)");
  CHECK(b.collective == "reducescatter");
  CHECK(b.protocol == "ll128");
  const NcclKernelName c = parse_nccl_kernel("ncclDevKernel_AllGather_RING_SIMPLE(ncclDevKernelArgsStorage<4096ul>)");
  CHECK(c.collective == "allgather");
  CHECK(c.protocol == "simple");
  const NcclKernelName d = parse_nccl_kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)");
  CHECK(d.collective == "sendrecv");
  CHECK(d.algorithm == "unknown");
  CHECK(d.protocol == "unknown");
  CHECK(parse_nccl_kernel("ncclKernel_AllReduce_TREE_LL128_Sum_bf16").algorithm == "tree");
}

TEST_CASE("a trace's GEMMs, collectives and peer copies become measurement points named by their kernels") {
  const KinetoTrace t = parse_kineto_trace(kTrace, "step.json");
  std::vector<std::string> not_fitted;
  const std::vector<Measurement> points = trace_points(t, "h100-sxm", not_fitted);
  REQUIRE(points.size() == 3);
  const Measurement& gemm = points[0];
  CHECK(gemm.kind == "gemm");
  CHECK(gemm.m == 8192);
  CHECK(gemm.median_s == Approx(120.5e-6));
  CHECK_THAT(gemm.origin, Contains("step.json") && Contains("nvjet_sm90") && Contains("traceEvents[3]"));
  const Measurement& ar = points[1];
  CHECK(ar.kind == "collective");
  CHECK(ar.collective == "allreduce");
  CHECK(ar.bytes == 4194304.0 * 2);  // In msg nelems x 2 bytes of BFloat16
  CHECK(ar.ranks == 8);
  CHECK(ar.algorithm == "ring");
  CHECK(ar.protocol == "ll");
  CHECK(ar.timed_as == kTimedAsGraph);
  CHECK(ar.median_s == Approx(80e-6));  // the fastest call: the other waited for a peer
  CHECK(ar.p90_s == Approx(130e-6));
  const Measurement& copy = points[2];
  CHECK(copy.kind == "memcpy");
  CHECK(copy.path == "peer");
  CHECK(copy.bytes == 8388608);
  CHECK(not_fitted.empty());
}

TEST_CASE("a trace's peer copies inside PyTorch's symmetric-memory ops are pulls while every rank pulls") {
  // The same copy, launched by an aten::copy_ inside symm_mem::fused_all_gather_matmul (async TP's pulls).
  std::string async_tp = kTrace;
  const std::string copy = R"({"ph": "X", "cat": "gpu_memcpy")";
  async_tp.insert(async_tp.find(copy), R"({"ph": "X", "cat": "cpu_op", "name": "symm_mem::fused_all_gather_matmul",
   "pid": 1, "tid": 1, "ts": 700, "dur": 60, "args": {}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 1, "tid": 1, "ts": 705, "dur": 20, "args": {}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 710, "dur": 5,
   "args": {"correlation": 10}},
  )");
  std::vector<std::string> why;
  const auto points = trace_points(parse_kineto_trace(async_tp, "tp.json"), "h100-sxm", why);
  REQUIRE(points.size() == 3);
  CHECK(points[2].path == "peer_all_ranks");
  CHECK(points[2].ranks == 8);  // distributedInfo's world size
  CHECK(points[2].median_s == Approx(20e-6));
  CHECK(why.empty());
  // Without the world size the group is unknown: the pull is left out, and said so.
  std::string no_world = async_tp;
  no_world.erase(no_world.find(R"("distributedInfo")"),
                 std::string(R"("distributedInfo": {"rank": 0, "world_size": 8},)").size());
  why.clear();
  CHECK(trace_points(parse_kineto_trace(no_world, "tp.json"), "h100-sxm", why).size() == 2);
  REQUIRE(why.size() == 1);
  CHECK_THAT(why[0], Contains("1 async-TP pulls") && Contains("world size"));
}

TEST_CASE("a trace without shapes or in fp32 says which GEMMs it could not fit and why") {
  std::string no_shapes = kTrace;
  no_shapes.replace(no_shapes.find("\"Input Dims\": [[8192, 4096], [4096, 1024]]"),
                    std::string("\"Input Dims\": [[8192, 4096], [4096, 1024]]").size(), "\"x\": 1");
  no_shapes.replace(no_shapes.find("\"record_shapes\": 1"), 18, "\"record_shapes\": 0");
  no_shapes.replace(no_shapes.find("\"Input Dims\": [[8192, 4096], [1024, 4096]]"),
                    std::string("\"Input Dims\": [[8192, 4096], [1024, 4096]]").size(), "\"y\": 1");
  std::vector<std::string> why;
  const auto points = trace_points(parse_kineto_trace(no_shapes, "s.json"), "h100-sxm", why);
  CHECK(points.size() == 2);
  REQUIRE(why.size() == 1);
  CHECK_THAT(why[0], Contains("1 GEMM kernels without shapes") && Contains("record_shapes"));
  std::string fp32 = kTrace;
  for (size_t at; (at = fp32.find("c10::BFloat16")) != std::string::npos;) fp32.replace(at, 13, "float");
  why.clear();
  trace_points(parse_kineto_trace(fp32, "f.json"), "h100-sxm", why);
  REQUIRE(why.size() == 1);
  CHECK_THAT(why[0], Contains("GEMMs in float"));
}

TEST_CASE("malformed traces are refused with the file and the event's index") {
  const auto refusal = [](const std::string& text) {
    try {
      parse_kineto_trace(text, "bad.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refusal("{\"traceEvents\": [\n  {\"ph\": \"X\",,}]}"), Contains("bad.json:2:"));
  CHECK_THAT(refusal("{\"events\": []}"), Contains("bad.json: not a profiler trace"));
  CHECK_THAT(refusal("[1, 2]"), Contains("traceEvents list"));
  CHECK_THAT(
      refusal(R"({"traceEvents": [{"ph": "M"}, {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -4}]})"),
      Contains("bad.json: traceEvents[1] (k): 'dur' is -4") && Contains(">= 0"));
  CHECK_THAT(refusal(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "1", "dur": 4}]})"),
             Contains("traceEvents[0] (k): 'ts' is string"));
  CHECK_THAT(refusal(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 4,
             "args": {"Input Dims": [[2, -3]]}}]})"),
             Contains("traceEvents[0] (aten::mm): args 'Input Dims' holds -3"));
  CHECK_THAT(refusal(R"({"traceEvents": [7]})"), Contains("traceEvents[0]: an event is a JSON object"));
  const std::string zipped = gzip(kTrace);
  CHECK_THAT(refusal(zipped.substr(0, zipped.size() / 2)), Contains("bad.json: the gzip stream ends early"));
  std::string corrupt = zipped;
  corrupt[20] = static_cast<char>(corrupt[20] ^ 0x5a);
  corrupt[21] = static_cast<char>(corrupt[21] ^ 0x33);
  CHECK_THAT(refusal(corrupt), Contains("bad.json"));
}
