// Op constructors with FLOP and byte counts, and same-stream ordering.
#include "model/graph/program_builder.hpp"

#include <algorithm>
#include <stdexcept>

#include "base/input_error.hpp"

namespace tpsim::model {

namespace {

// A collective over `size` GPUs `stride` apart: the TP group, or a group outside it (CommGroup::kData, kExpert).
Op group_collective(const std::string& name, CollectiveKind kind, double tensor_bytes, CommGroup group, int size,
                    int stride, Stream stream, const std::string& shape) {
  Op op;
  op.name = name;
  op.kind = OpKind::kCollective;
  op.stream = stream;
  op.collective = kind;
  op.tensor_bytes = tensor_bytes;
  op.group = group;
  op.group_size = size;
  op.group_stride = stride;
  op.transport = Transport::kSm;
  op.shape = shape;
  return op;
}

}  // namespace

std::string shape_text(int64_t rows, int64_t cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

namespace {

// Same-rank dependencies: data ones on `reads`, ordering-only ones on `follows`.
std::vector<Dep> reads_then_follows(const std::vector<OpId>& reads, const std::vector<OpId>& follows) {
  std::vector<Dep> all;
  all.reserve(reads.size() + follows.size());
  for (const OpId dep : reads) all.push_back(Dep{dep, 0});
  for (const OpId dep : follows) all.push_back(Dep{dep, 0, false});
  return all;
}

}  // namespace

OpId ProgramBuilder::issue(Op op, const std::vector<OpId>& deps) {
  std::vector<Dep> rank_local;
  rank_local.reserve(deps.size());
  for (OpId dep : deps) rank_local.push_back(Dep{dep, 0});
  return issue_with(std::move(op), std::move(rank_local));
}

OpId ProgramBuilder::issue_with(Op op, std::vector<Dep> deps) {
  if (is_kernel(op.kind) && op.stream == Stream::kCompute) op.stream = compute_stream_;
  auto& last = last_on_stream_[static_cast<int>(op.stream)];
  if (last) deps.push_back(Dep{*last, 0, false});
  // A kernel on a compute stream reads the gathered weights (a side stream's cast before a gather does not).
  const bool reads_weights =
      pending_weights_ && is_kernel(op.kind) && (op.stream == Stream::kCompute || op.stream == Stream::kCompute2);
  if (reads_weights) deps.push_back(Dep{*pending_weights_, 0});
  if (op.output_bytes == 0) op.output_bytes = produced_bytes(op);
  op.deps = std::move(deps);
  op.layer = layer_;
  op.module = module_;
  op.stage = stage_;
  op.name = prefix() + op.name;
  const OpId id = graph_.add(std::move(op));
  last = id;
  if (reads_weights) {
    weights_reader_ = id;
    pending_weights_.reset();
  }
  return id;
}

std::string ProgramBuilder::prefix_of(OpStage stage) const {
  const std::string recompute = stage == OpStage::kRecompute ? "recompute." : "";
  return name_prefix_ + (module_ < 0 ? std::string() : "L" + std::to_string(layer_) + ".") + recompute;
}

OpId ProgramBuilder::repeat(const Op& original, std::vector<Dep> deps) {
  const std::string forward = prefix_of(OpStage::kForward);
  if (original.stage != OpStage::kForward || original.name.compare(0, forward.size(), forward) != 0) {
    throw std::logic_error("op " + original.name + " is not a forward op of " + forward);
  }
  Op op = original;
  op.name = original.name.substr(forward.size());
  op.deps.clear();
  if (op.kind == OpKind::kMemory && op.continues_kernel) {
    const auto continued = std::find_if(deps.begin(), deps.end(), [&](const Dep& d) { return d.data; });
    if (continued == deps.end() || !can_continue(continued->op)) {
      op.continues_kernel = false;
      op.bytes_read += op.bytes_in_registers;
      op.bytes_in_registers = 0;
    }
  }
  return issue_with(std::move(op), std::move(deps));
}

OpId ProgramBuilder::gemm(const std::string& name, GemmShape shape, const std::vector<OpId>& deps) {
  return linear_gemm(name, name, shape, deps);
}

OpId ProgramBuilder::gemm_piece(const std::string& name, int piece, GemmShape shape, const std::vector<OpId>& deps) {
  return linear_gemm(name, name + ".piece" + std::to_string(piece), shape, deps);
}

OpId ProgramBuilder::gemm_part(const std::string& name, int piece, GemmShape shape, int64_t kernel_rows,
                               const std::vector<OpId>& deps) {
  fused_rows_ = kernel_rows;
  continues_kernel_ = piece > 0;
  const OpId part = gemm_piece(name, piece, shape, deps);
  fused_rows_ = 0;
  continues_kernel_ = false;
  return part;
}

OpId ProgramBuilder::linear_gemm(const std::string& linear_name, const std::string& name, GemmShape shape,
                                 const std::vector<OpId>& deps) {
  const std::string linear = prefix() + linear_name;
  const bool first_piece = linears_ == 0 || linear != last_linear_name_;
  if (first_piece) ++linears_;
  last_linear_name_ = linear;
  const GemmRole role = gemm_role_of(linear_name);
  if (autocast_ && first_piece && role == GemmRole::kForward) {
    // The weight [k, n] cast to bf16 before the GEMM: a weight is no activation, stream order alone.
    const auto weights = static_cast<double>(shape.k * shape.n);
    memory(name + ".weight_cast", kFp32Bytes * weights, kBf16Bytes * weights, 0, shape_text(shape.k, shape.n), {});
  }
  const std::vector<OpId> inputs =
      fp8_recipe_ == Fp8Recipe::kNone ? deps : quantise_operands(linear_name, name, shape, deps, first_piece);
  OpId gemm = 0;
  if (const std::vector<LinearPart>* parts = parts_of(linear_name, shape)) {
    const bool data_gradient = gemm_role_of(linear_name) == GemmRole::kDataGradient;
    const auto whole_output = static_cast<double>(shape.m * shape.n);
    for (size_t i = 0; i < parts->size(); ++i) {
      GemmShape part = shape;
      (data_gradient ? part.k : part.n) = (*parts)[i].cols;
      // Each part after the first reads its predecessor's output (the data gradient adds into it; the
      // others are stream-ordered, and recomputation must re-run every part). The last part stands for
      // the whole output.
      std::vector<OpId> part_inputs = inputs;
      if (i > 0) part_inputs.push_back(gemm);
      const bool last = i + 1 == parts->size();
      const double output = last ? whole_output * output_bytes_per_element(linear_name) : 0.0;
      gemm = gemm_kernel(linear_name, name + "." + (*parts)[i].name, part, part_inputs, data_gradient && i > 0, output,
                         static_cast<int32_t>(i));
    }
  } else {
    gemm = gemm_kernel(linear_name, name, shape, inputs, false, 0.0);
  }
  if (autocast_ && first_piece && role == GemmRole::kWeightGradient) {
    // The weight gradient [m, n] cast back to fp32 (nothing later in the step reads it before the optimizer).
    const auto weights = static_cast<double>(shape.m * shape.n);
    memory(name + ".grad_cast", kBf16Bytes * weights, kFp32Bytes * weights, 0, shape_text(shape.m, shape.n), {gemm});
  }
  if (fp8_recipe_ == Fp8Recipe::kNone || !rescales_output(fp8_recipe_, role)) return gemm;
  const double output = elem_bytes_ * static_cast<double>(shape.m * shape.n);
  return memory(name + ".rescale", output, output, static_cast<double>(shape.m * shape.n), shape_text(shape.m, shape.n),
                {gemm});
}

double ProgramBuilder::output_bytes_per_element(const std::string& linear_name) const {
  // Under autocast the GEMM writes bf16 and the gradient's cast (linear_gemm) the fp32.
  const bool fp32_gradient =
      fp32_weight_gradients_ && !autocast_ && gemm_role_of(linear_name) == GemmRole::kWeightGradient;
  return fp32_gradient ? kFp32Bytes : elem_bytes_;
}

const std::vector<LinearPart>* ProgramBuilder::parts_of(const std::string& linear_name, GemmShape shape) const {
  if (linear_parts_.empty()) return nullptr;
  const GemmRole role = gemm_role_of(linear_name);
  const size_t suffix = role == GemmRole::kForward ? 0 : std::string(kDataGradientSuffix).size();
  const auto found = linear_parts_.find(linear_name.substr(0, linear_name.size() - suffix));
  if (found == linear_parts_.end()) return nullptr;
  int64_t cols = 0;
  for (const LinearPart& part : found->second) cols += part.cols;
  return cols == (role == GemmRole::kDataGradient ? shape.k : shape.n) ? &found->second : nullptr;
}

OpId ProgramBuilder::gemm_kernel(const std::string& linear_name, const std::string& name, GemmShape shape,
                                 const std::vector<OpId>& inputs, bool accumulate, double output_bytes, int32_t part) {
  Op op;
  op.name = name;
  op.kind = OpKind::kGemm;
  op.saved_as = SavedAs::kMatmul;
  op.linear = linears_ - 1;
  op.linear_part = part;
  op.gemm = shape;
  op.fused_rows = fused_rows_;
  op.continues_kernel = continues_kernel_;
  op.flops = gemm_flops(shape);
  op.fp8 = gemm_fp8_;
  // A tile-fused part reads its rows of A and its share of B: the kernel reads B once over all its parts.
  const double b_share = fused_rows_ > shape.m ? static_cast<double>(shape.m) / static_cast<double>(fused_rows_) : 1.0;
  // A grouped GEMM reads every problem's own B (splitting m) or writes every problem's own C (splitting k).
  const double groups = static_cast<double>(std::max<int64_t>(1, shape.groups));
  const double b_count = shape.groups_split_k ? 1.0 : groups, c_count = shape.groups_split_k ? groups : 1.0;
  op.bytes_read = (gemm_fp8_ ? kFp8Bytes : elem_bytes_) *
                  (static_cast<double>(shape.m * shape.k) + b_share * b_count * static_cast<double>(shape.k * shape.n));
  op.bytes_written = output_bytes_per_element(linear_name) * c_count * static_cast<double>(shape.m * shape.n);
  if (accumulate || (fp32_weight_gradients_ && accumulate_weight_gradients_ &&
                     gemm_role_of(linear_name) == GemmRole::kWeightGradient)) {
    op.bytes_read += op.bytes_written;
  }
  op.output_bytes = output_bytes;
  op.shape = "M=" + std::to_string(shape.m) + " N=" + std::to_string(shape.n) + " K=" + std::to_string(shape.k) +
             (shape.groups > 1 ? " groups=" + std::to_string(shape.groups) : "") + (gemm_fp8_ ? " fp8" : "");
  return issue(std::move(op), inputs);
}

std::vector<OpId> ProgramBuilder::quantise_operands(const std::string& linear_name, const std::string& name,
                                                    GemmShape shape, const std::vector<OpId>& deps, bool first_piece) {
  const GemmRole role = gemm_role_of(linear_name);
  const auto a_elements = static_cast<double>(shape.m * shape.k);
  const auto b_elements = static_cast<double>(shape.k * shape.n);
  std::optional<OpId> last_a, last_b;  // each operand's kernels run in turn (amax, cast, swizzle)
  const bool weights_cached =
      caches_fp8_weights(fp8_kernels_) && (fp8_weights_cached_ || stage_ == OpStage::kRecompute);
  for (const QuantKernel& kernel : quant_kernels(fp8_recipe_, role, fp8_kernels_)) {
    if (a_quantised_ && !kernel.reads_b) continue;  // cast before its all-gather
    const bool weight = kernel.reads_b && role != GemmRole::kWeightGradient;
    if (weight && (!first_piece || weights_fp8_ || weights_cached)) continue;
    const double elements = kernel.reads_b ? b_elements : a_elements;
    std::optional<OpId>& last = kernel.reads_b ? last_b : last_a;
    // Reads its operand (a weight is no activation: no dependency) and the previous kernel's scale.
    std::vector<OpId> inputs = weight ? std::vector<OpId>{} : deps;
    if (last) inputs.push_back(*last);
    last = quantisation_kernel(name + "." + kernel.name, elements, elements * kernel.read_per_element,
                               elements * kernel.written_per_element,
                               kernel.reads_b ? shape_text(shape.k, shape.n) : shape_text(shape.m, shape.k), inputs);
  }
  if (a_quantised_ && role != GemmRole::kForward) {
    // The gathered fp8 copy transposed for the weight gradient (the output gradient's, written beside the data
    // gradient as its cast does; the input's, for the weight gradient itself): read and written once.
    last_a = quantisation_kernel(name + (role == GemmRole::kDataGradient ? ".dy.transpose" : ".x.transpose"), 0.0,
                                 a_elements * kFp8Bytes, a_elements * kFp8Bytes, shape_text(shape.m, shape.k), deps);
  }
  std::vector<OpId> inputs = last_a ? std::vector<OpId>{*last_a} : deps;
  if (last_b && role == GemmRole::kWeightGradient) {
    if (!last_a) inputs.clear();
    inputs.push_back(*last_b);
  }
  return inputs;
}

OpId ProgramBuilder::cast_to_fp8(const std::string& name, int64_t rows, int64_t cols, const std::vector<OpId>& deps) {
  const auto elements = static_cast<double>(rows * cols);
  const std::string shape = shape_text(rows, cols);
  if (fp8_kernels_ == Fp8Kernels::kTransformerEngine && fp8_recipe_ == Fp8Recipe::kDelayed) {
    // Delayed scaling's scale is known before the cast, which takes the amax itself: one kernel.
    return quantisation_kernel(name + ".cast", elements, elements * kBf16Bytes, elements * kFp8Bytes, shape, deps);
  }
  const OpId amax = quantisation_kernel(name + ".amax", elements, elements * kBf16Bytes, 0.0, shape, deps);
  std::vector<OpId> inputs = deps;
  inputs.push_back(amax);  // its scale
  return quantisation_kernel(name + ".cast", elements, elements * kBf16Bytes, elements * kFp8Bytes, shape, inputs);
}

namespace {

Op memory_op(const std::string& name, double read_bytes, double written_bytes, double flops, const std::string& shape) {
  Op op;
  op.name = name;
  op.kind = OpKind::kMemory;
  op.flops = flops;
  op.bytes_read = read_bytes;
  op.bytes_written = written_bytes;
  op.shape = shape;
  return op;
}

}  // namespace

OpId ProgramBuilder::quantisation_kernel(const std::string& name, double flops, double read_bytes, double written_bytes,
                                         const std::string& shape, const std::vector<OpId>& inputs) {
  Op op = memory_op(name, read_bytes, written_bytes, flops, shape);
  op.quantisation = true;
  return issue(std::move(op), inputs);
}

OpId ProgramBuilder::quantisation_on(Stream stream, const std::string& name, double elements, double read_bytes,
                                     double written_bytes, const std::string& shape, const std::vector<OpId>& deps,
                                     const std::vector<OpId>& after) {
  Op op = memory_op(name, read_bytes, written_bytes, elements, shape);
  op.quantisation = true;
  op.stream = stream;
  return issue_with(std::move(op), reads_then_follows(deps, after));
}

OpId ProgramBuilder::memory(const std::string& name, double read_bytes, double written_bytes, double flops,
                            const std::string& shape, const std::vector<OpId>& deps) {
  return issue(memory_op(name, read_bytes, written_bytes, flops, shape), deps);
}

bool ProgramBuilder::can_continue(OpId kernel) const {
  // A kernel waiting for gathered weights (FSDP) starts a kernel: the wait stands between it and the one before.
  return !pending_weights_ && kernel < graph_.size() && graph_.op(kernel).kind == OpKind::kMemory &&
         graph_.op(kernel).stream == compute_stream_ && last_on(compute_stream_) == kernel;
}

OpId ProgramBuilder::continue_kernel(OpId kernel, const std::string& name, double in_registers, double read_bytes,
                                     double written_bytes, double flops, const std::string& shape,
                                     const std::vector<OpId>& deps) {
  if (!can_continue(kernel)) {
    throw std::logic_error("op " + name + " cannot continue op " + std::to_string(kernel) +
                           ": not the last memory-bound kernel on its stream");
  }
  Op op = memory_op(name, read_bytes, written_bytes, flops, shape);
  op.continues_kernel = true;
  op.bytes_in_registers = in_registers;
  std::vector<OpId> reads{kernel};  // the continued kernel first: what repeat() finds as the kernel
  reads.insert(reads.end(), deps.begin(), deps.end());
  return issue(std::move(op), reads);
}

namespace {

Op attention_kernel(const std::string& name, double flops, double read_bytes, double written_bytes, double output_bytes,
                    const std::string& shape) {
  Op op;
  op.name = name;
  op.kind = OpKind::kAttention;
  op.saved_as = SavedAs::kAttention;
  op.flops = flops;
  op.bytes_read = read_bytes;
  op.bytes_written = written_bytes;
  op.output_bytes = output_bytes;
  op.shape = shape;
  return op;
}

}  // namespace

OpId ProgramBuilder::attention(const std::string& name, double flops, double causal_inverse_length, double read_bytes,
                               double written_bytes, double output_bytes, const std::string& shape,
                               const std::vector<OpId>& deps) {
  Op op = attention_kernel(name, flops, read_bytes, written_bytes, output_bytes, shape);
  op.fp8 = attention_fp8_;
  op.causal_inverse_length = causal_inverse_length;
  return issue(std::move(op), deps);
}

OpId ProgramBuilder::linear_attention(const std::string& name, LinearScan scan, double flops, double read_bytes,
                                      double written_bytes, double output_bytes, const std::string& shape,
                                      const std::vector<OpId>& deps) {
  Op op = attention_kernel(name, flops, read_bytes, written_bytes, output_bytes, shape);
  op.linear_scan = scan;  // the gated delta rule runs in bf16
  return issue(std::move(op), deps);
}

OpId ProgramBuilder::collective(const std::string& name, CollectiveKind kind, double tensor_bytes,
                                const std::string& shape, const std::vector<OpId>& deps,
                                const std::vector<OpId>& after) {
  Op op = group_collective(name, kind, tensor_bytes, CommGroup::kTensor, tp(), 1, comm_stream_.value_or(Stream::kComm),
                           shape);
  op.saved_as = kind == CollectiveKind::kAllGather       ? SavedAs::kAllGather
                : kind == CollectiveKind::kReduceScatter ? SavedAs::kReduceScatter
                : kind == CollectiveKind::kAllReduce     ? SavedAs::kAllReduce
                                                         : SavedAs::kOther;
  op.algorithm = algorithm_;
  op.protocol = protocol_;
  return issue_with(std::move(op), reads_then_follows(deps, after));
}

void ProgramBuilder::between_attention_parts() {
  if (!between_attention_parts_) return;
  const std::function<void()> work = std::move(between_attention_parts_);
  between_attention_parts_ = nullptr;
  const int layer = layer_, module = module_;
  const std::string prefix = name_prefix_;
  work();
  layer_ = layer;
  module_ = module;
  name_prefix_ = prefix;
}

OpId ProgramBuilder::data_collective(const std::string& name, CollectiveKind kind, double tensor_bytes,
                                     const DataParallel& group, Stream stream, const std::string& shape,
                                     const std::vector<OpId>& deps, const std::vector<OpId>& after) {
  Op op =
      group_collective(name, kind, tensor_bytes, CommGroup::kData, group.degree, group.member_stride, stream, shape);
  return issue_with(std::move(op), reads_then_follows(deps, after));
}

OpId ProgramBuilder::expert_collective(const std::string& name, CollectiveKind kind, double tensor_bytes, int ep,
                                       const std::string& shape, const std::vector<OpId>& deps, int stride) {
  Op op = group_collective(name, kind, tensor_bytes, CommGroup::kExpert, ep, stride,
                           comm_stream_.value_or(Stream::kComm), shape);
  if (kind == CollectiveKind::kAllToAll) op.saved_as = SavedAs::kAllToAll;
  return issue(std::move(op), deps);
}

OpId ProgramBuilder::deepep_all_to_all(const std::string& name, CollectiveAlgorithm algorithm, double received_bytes,
                                       double network_bytes, int ep, const std::string& shape,
                                       const std::vector<OpId>& deps) {
  Op op = group_collective(name, CollectiveKind::kAllToAll, received_bytes, CommGroup::kExpert, ep, 1,
                           comm_stream_.value_or(Stream::kComm), shape);
  op.saved_as = SavedAs::kAllToAll;
  op.algorithm = algorithm;
  op.message_bytes = network_bytes;
  return issue(std::move(op), deps);
}

OpId ProgramBuilder::exchange(const std::string& name, int send_offset, int recv_offset, double bytes,
                              Transport transport, const std::string& shape, const std::vector<OpId>& deps,
                              const std::vector<OpId>& after) {
  if (exchanges_as_nccl_calls_ && transport == Transport::kSm) {
    if (send_offset != 1 || recv_offset != -1) {
      throw InputError(name +
                       ": NCCL send/recv calls are modelled as ring steps (send to rank+1, receive from "
                       "rank-1); use ring order");
    }
    return collective(name, CollectiveKind::kSendRecv, bytes, shape, deps);
  }
  Op op;
  op.name = name;
  op.kind = OpKind::kExchange;
  op.stream = comm_stream_.value_or(transport == Transport::kSm ? Stream::kComm : Stream::kCopy);
  op.send_offset = send_offset;
  op.recv_offset = recv_offset;
  op.message_bytes = bytes;
  op.transport = transport;
  op.group_size = tp();
  op.shape = shape;
  return issue_with(std::move(op), reads_then_follows(deps, after));
}

}  // namespace tpsim::model
