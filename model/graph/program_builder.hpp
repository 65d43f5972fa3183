// Helper that appends ops to a LayerGraph in issue order, adding the same-stream ordering dependency.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/graph/layer_graph.hpp"
#include "model/graph/workload.hpp"
#include "model/layers/fp8_recipe.hpp"

namespace tpsim::model {

// One GEMM of a linear computed as several (set_linear_parts): its name and output columns.
struct LinearPart {
  std::string name;
  int64_t cols = 0;
};

class ProgramBuilder {
 public:
  ProgramBuilder(LayerGraph& graph, double elem_bytes) : graph_(graph), elem_bytes_(elem_bytes) {}

  int tp() const { return graph_.tp(); }
  const LayerGraph& graph() const { return graph_; }
  // Room for `ops` ops in the program (LayerGraph::reserve).
  void reserve(size_t ops) { graph_.reserve(ops); }
  double elem_bytes() const { return elem_bytes_; }
  // The layer of the ops issued next, numbered in the program (names say "L<layer>."), and the model's number
  // of the program's first layer (a later pipeline chunk's is above 0): what decides each layer's kind.
  void set_layer(int layer) { layer_ = layer; }
  int layer() const { return layer_; }
  void set_first_layer(int64_t first) { first_layer_ = first; }
  int64_t model_layer() const { return first_layer_ + layer_; }
  void set_module(int module) { module_ = module; }
  int module() const { return module_; }
  // The stage of the ops issued next; recomputed ops are named "L<layer>.recompute.<op>".
  void set_stage(OpStage stage) { stage_ = stage; }
  // Prepended to every name issued next (a micro-batch's "mb2.").
  void set_name_prefix(std::string prefix) { name_prefix_ = std::move(prefix); }
  const std::string& name_prefix() const { return name_prefix_; }
  // Work another micro-batch issues between the next attention module's projections and its core (a decode step's
  // two-batch overlap, model/moe/two_batch_step.cpp). The module runs it there (between_attention_parts), once.
  void set_between_attention_parts(std::function<void()> work) { between_attention_parts_ = std::move(work); }
  // Runs and clears the work set_between_attention_parts left, if any; the layer, module and name prefix it
  // changes are restored after.
  void between_attention_parts();
  void set_collective_algorithm(CollectiveAlgorithm algorithm) { algorithm_ = algorithm; }
  void set_collective_protocol(Protocol protocol) { protocol_ = protocol; }
  // The stream of the collectives and exchanges issued next (nullopt: comm, or copy for copy-engine
  // exchanges): op lists put communication on streams of their own.
  void set_comm_stream(std::optional<Stream> stream) { comm_stream_ = stream; }
  // Kernels (GEMM, attention, memory-bound) issued next run on `stream` (default kCompute).
  void set_compute_stream(Stream stream) { compute_stream_ = stream; }
  // Exchanges over SMs issued next are NCCL calls (ncclSend to rank+1 and ncclRecv from rank-1 in one
  // group, as tpsim-real's NCCL async-TP pipelines run them): send/recv collectives, each paying NCCL's
  // per-call latency; only ring steps can be.
  void set_exchanges_as_nccl_calls(bool calls) { exchanges_as_nccl_calls_ = calls; }
  // GEMMs issued from now on read fp8 (e4m3) operands and write elem_bytes outputs.
  void set_gemm_fp8(bool fp8) { gemm_fp8_ = fp8; }
  // GEMMs issued from now on (with set_gemm_fp8) are preceded by `recipe`'s quantisation kernels, their
  // role told by their linear's name (fp8_recipe.hpp); kNone: the casts are assumed fused elsewhere.
  void set_fp8_recipe(Fp8Recipe recipe) { fp8_recipe_ = recipe; }
  Fp8Recipe fp8_recipe() const { return fp8_recipe_; }
  bool gemm_fp8() const { return gemm_fp8_; }
  // GEMMs issued next read weights already fp8 (FSDP's fp8 all-gather, DataParallel::fp8_all_gather): the recipe
  // casts no weight before them.
  void set_weights_fp8(bool fp8) { weights_fp8_ = fp8; }
  // Whose quantisation kernels the recipe runs (fp8_recipe.hpp).
  void set_fp8_kernels(Fp8Kernels kernels) { fp8_kernels_ = kernels; }
  // Under kernels that cache fp8 weights (caches_fp8_weights): whether the GEMMs issued next read fp8 weight copies
  // an earlier micro-batch of the step cast (every micro-batch after the first; a pipeline stage's passes, whose
  // first micro-batch's casts, 1 / microbatches of the per-micro-batch cost, are left out). Recomputations read
  // them too.
  void set_fp8_weights_cached(bool cached) { fp8_weights_cached_ = cached; }
  bool fp8_weights_cached() const { return fp8_weights_cached_; }
  // GEMMs issued next read an A operand already cast to fp8 before its all-gather (the float8 TP plan,
  // Workload fp8_gathers): no cast of it; a data or weight gradient transposes the gathered fp8 copy instead.
  void set_a_quantised(bool quantised) { a_quantised_ = quantised; }
  // A tensorwise cast of a [rows, cols] bf16 activation to fp8 (its amax, then the cast), named <name>.amax and
  // <name>.cast; under Transformer Engine's delayed scaling the cast alone (it takes the amax); returns the cast.
  OpId cast_to_fp8(const std::string& name, int64_t rows, int64_t cols, const std::vector<OpId>& deps);
  // Weight-gradient GEMMs issued next write the fp32 gradient (Megatron's main_grad, fused accumulation:
  // the GEMM's epilogue adds into it); with `accumulate` (every micro-batch after a step's first) they
  // read it too (beta = 1).
  void set_fp32_weight_gradients(bool on, bool accumulate) {
    fp32_weight_gradients_ = on;
    accumulate_weight_gradients_ = accumulate;
  }
  // GEMMs issued next read bf16 casts of fp32 weights (torch.autocast over fp32 parameters): a linear's forward
  // GEMM is preceded by its weight's cast (reads 4, writes 2 bytes per weight), its weight-gradient GEMM followed
  // by the gradient's cast back to fp32 (ToCopyBackward0: reads 2, writes 4); the data gradient reads the forward's
  // cast, which autocast's cache keeps. Once per linear, over every part and piece of it.
  void set_autocast(bool on) { autocast_ = on; }
  // Linear `linear` (e.g. "attn.qkv_proj") runs as one GEMM per part (q, k, v), each of its own output
  // columns, named <gemm>.<part>: its weight gradient likewise, its data gradient as GEMMs over each
  // part's columns of K whose products add into the first's output (beta = 1).
  void set_linear_parts(const std::string& linear, std::vector<LinearPart> parts) {
    linear_parts_[linear] = std::move(parts);
  }
  bool has_linear_parts(const std::string& linear) const { return linear_parts_.count(linear) > 0; }
  // Attention kernels issued next read e4m3 Q, K, V (their byte counts are the caller's).
  void set_attention_fp8(bool fp8) { attention_fp8_ = fp8; }
  bool attention_fp8() const { return attention_fp8_; }
  std::string prefix() const { return prefix_of(stage_); }

  // Issues `op` on its stream after the previous op of that stream and after `deps`.
  OpId issue(Op op, const std::vector<OpId>& deps);
  // As issue(), with cross-rank dependencies.
  OpId issue_with(Op op, std::vector<Dep> deps);

  // Re-issues forward op `original` of the current layer as a recomputed op (stage, name and stream
  // order of now), reading `deps`. An op that continued a kernel runs as a kernel of its own, reading what it
  // took from registers, unless that kernel's re-issue is the last op on its stream.
  OpId repeat(const Op& original, std::vector<Dep> deps);
  // Marks op `id`'s output for save lists (see SavedAs).
  void mark_saved_as(OpId id, SavedAs saved_as) { graph_.set_saved_as(id, saved_as); }
  void set_model_flops(OpId id, double flops) { graph_.set_model_flops(id, flops); }
  void set_comm_sms(OpId id, int sms) { graph_.set_comm_sms(id, sms); }

  // The next kernel issued (on any compute stream) reads the parameters collective `gather` produces (an FSDP
  // all-gather); later kernels follow it in stream order.
  void wait_for_weights(OpId gather) { pending_weights_ = gather; }
  // The kernel that took the last such wait, if any has.
  std::optional<OpId> weights_reader() const { return weights_reader_; }
  // The last op issued on `stream`, if any.
  std::optional<OpId> last_on(Stream stream) const { return last_on_stream_[static_cast<int>(stream)]; }

  // Kernels. Names are prefixed with the layer. A GEMM computes one linear; piece `piece` of a pipeline
  // computes part of linear `name` and is named name.piece<piece>.
  OpId gemm(const std::string& name, GemmShape shape, const std::vector<OpId>& deps);
  OpId gemm_piece(const std::string& name, int piece, GemmShape shape, const std::vector<OpId>& deps);
  // Piece `piece` of linear `name` as part of one tile-fused kernel over `kernel_rows` rows (Op's
  // fused_rows): piece 0 starts the kernel, later ones continue it.
  OpId gemm_part(const std::string& name, int piece, GemmShape shape, int64_t kernel_rows,
                 const std::vector<OpId>& deps);
  OpId memory(const std::string& name, double read_bytes, double written_bytes, double flops, const std::string& shape,
              const std::vector<OpId>& deps);
  // A quantisation kernel (Op::quantisation) on side stream `stream` (FSDP's copy-in stream, before the all-gather
  // there), reading `deps` and following `after` (ordering only); it takes no wait for gathered weights.
  OpId quantisation_on(Stream stream, const std::string& name, double elements, double read_bytes, double written_bytes,
                       const std::string& shape, const std::vector<OpId>& deps, const std::vector<OpId>& after);
  // Whether memory-bound kernel `kernel` is the last op issued on the stream kernels issue on now, and no kernel
  // issued next must wait for gathered weights (wait_for_weights): what continue_kernel needs.
  bool can_continue(OpId kernel) const;
  // Memory-bound work fused into `kernel` (can_continue): an op continuing it (Op::continues_kernel), neither
  // launched nor paying an overhead of its own, reading `kernel`'s result (`in_registers` bytes) from registers
  // and `read_bytes` more from HBM, and `deps` beside it. std::logic_error where `kernel` cannot be continued.
  OpId continue_kernel(OpId kernel, const std::string& name, double in_registers, double read_bytes,
                       double written_bytes, double flops, const std::string& shape, const std::vector<OpId>& deps);
  // `written_bytes` include the KV-cache append; `output_bytes` is the attention output alone;
  // `causal_inverse_length` the causal mask's diagonal (Op::causal_inverse_length; 0: none masked).
  OpId attention(const std::string& name, double flops, double causal_inverse_length, double read_bytes,
                 double written_bytes, double output_bytes, const std::string& shape, const std::vector<OpId>& deps);
  // A linear-attention layer's gated-delta-rule kernel (op.hpp's LinearScan; none: attention()); `written_bytes`
  // include the state.
  OpId linear_attention(const std::string& name, LinearScan scan, double flops, double read_bytes, double written_bytes,
                        double output_bytes, const std::string& shape, const std::vector<OpId>& deps);
  // A collective over the TP group, after reading `deps` and following `after` (ordering only).
  OpId collective(const std::string& name, CollectiveKind kind, double tensor_bytes, const std::string& shape,
                  const std::vector<OpId>& deps, const std::vector<OpId>& after = {});
  // A collective over data-parallel group `group` (CommGroup::kData: its replicas, member_stride GPUs apart) on
  // `stream`, after reading `deps` and following `after` (ordering only).
  OpId data_collective(const std::string& name, CollectiveKind kind, double tensor_bytes, const DataParallel& group,
                       Stream stream, const std::string& shape, const std::vector<OpId>& deps,
                       const std::vector<OpId>& after = {});
  // A collective over the expert-parallel group (CommGroup::kExpert: `ep` GPUs `stride` apart) on the comm stream.
  OpId expert_collective(const std::string& name, CollectiveKind kind, double tensor_bytes, int ep,
                         const std::string& shape, const std::vector<OpId>& deps, int stride = 1);
  // The same all-to-all as DeepEP's kernels run it (`algorithm`: kDeepEp, its normal kernels, or its low-latency
  // dispatch or combine): `received_bytes` what the busiest GPU receives (its tensor_bytes), `network_bytes` what
  // crosses the NIC (its message_bytes; 0 inside one node): normal kernels, each GPU's tokens once per destination
  // node, its own counted; low-latency ones, the received copies from other nodes.
  OpId deepep_all_to_all(const std::string& name, CollectiveAlgorithm algorithm, double received_bytes,
                         double network_bytes, int ep, const std::string& shape, const std::vector<OpId>& deps);
  // `after`: ops it follows without reading them (a copy engine serving two streams one copy at a time).
  OpId exchange(const std::string& name, int send_offset, int recv_offset, double bytes, Transport transport,
                const std::string& shape, const std::vector<OpId>& deps, const std::vector<OpId>& after = {});

 private:
  LayerGraph& graph_;
  double elem_bytes_;
  bool gemm_fp8_ = false;
  bool fp32_weight_gradients_ = false;
  bool accumulate_weight_gradients_ = false;
  Fp8Recipe fp8_recipe_ = Fp8Recipe::kNone;
  bool exchanges_as_nccl_calls_ = false;
  bool attention_fp8_ = false;
  bool autocast_ = false;
  int layer_ = 0;
  int64_t first_layer_ = 0;
  int module_ = 0;
  OpStage stage_ = OpStage::kForward;
  std::string name_prefix_;
  std::function<void()> between_attention_parts_;
  int32_t linears_ = 0;       // linears issued so far
  bool a_quantised_ = false;  // set_a_quantised
  bool weights_fp8_ = false;  // set_weights_fp8
  Fp8Kernels fp8_kernels_ = Fp8Kernels::kTorchao;
  bool fp8_weights_cached_ = false;  // set_fp8_weights_cached
  std::string last_linear_name_;     // the linear the last GEMM computed
  CollectiveAlgorithm algorithm_ = CollectiveAlgorithm::kNccl;
  Protocol protocol_ = Protocol::kAuto;
  std::optional<Stream> comm_stream_;
  Stream compute_stream_ = Stream::kCompute;
  std::array<std::optional<OpId>, kStreamCount> last_on_stream_{};
  std::optional<OpId> pending_weights_;
  std::optional<OpId> weights_reader_;
  std::map<std::string, std::vector<LinearPart>> linear_parts_;
  // While a tile-fused part is issued: its kernel's rows and whether it continues the kernel.
  int64_t fused_rows_ = 0;
  bool continues_kernel_ = false;

  // A GEMM named `name` computing (part of) linear `linear_name`.
  OpId linear_gemm(const std::string& linear_name, const std::string& name, GemmShape shape,
                   const std::vector<OpId>& deps);
  // The recipe's quantisation kernels before GEMM `name` (a piece of linear `linear_name`; the weight's
  // only before its first piece): returns the GEMM's inputs (the quantised activations; weights are no
  // activations and keep only stream order).
  std::vector<OpId> quantise_operands(const std::string& linear_name, const std::string& name, GemmShape shape,
                                      const std::vector<OpId>& deps, bool first_piece);
  // A memory-bound kernel of an fp8 recipe (Op::quantisation: an amax, cast, transpose or swizzle).
  OpId quantisation_kernel(const std::string& name, double flops, double read_bytes, double written_bytes,
                           const std::string& shape, const std::vector<OpId>& inputs);
  // One GEMM kernel: `accumulate` reads its output too (beta = 1); `output_bytes` (0: its own) is what
  // it leaves for its readers; `part` which of the linear's separate GEMMs it is (Op::linear_part).
  OpId gemm_kernel(const std::string& linear_name, const std::string& name, GemmShape shape,
                   const std::vector<OpId>& inputs, bool accumulate, double output_bytes, int32_t part = 0);
  // The parts linear `linear_name` (a role suffix allowed) is split into, when their columns add up to
  // the GEMM's; nullptr otherwise.
  const std::vector<LinearPart>* parts_of(const std::string& linear_name, GemmShape shape) const;
  // Bytes per output element of a GEMM of `linear_name`: fp32 for weight gradients when set, else elem_bytes.
  double output_bytes_per_element(const std::string& linear_name) const;
  // The name prefix of stage `stage` now.
  std::string prefix_of(OpStage stage) const;
};

// While it lives, the GEMMs `builder` issues run in bf16 with no fp8 recipe's kernels: the LM head, which fp8
// training keeps in high precision (TorchTitan's llama3 training configs: float8 filter_fqns ["output"];
// Megatron-Core's output_layer, a ColumnParallelLinear outside Transformer Engine; DeepSeek-V3's report,
// section 3.3.1, "the output head").
class HighPrecisionGemms {
 public:
  explicit HighPrecisionGemms(ProgramBuilder& builder)
      : builder_(builder), fp8_(builder.gemm_fp8()), recipe_(builder.fp8_recipe()) {
    builder.set_gemm_fp8(false);
    builder.set_fp8_recipe(Fp8Recipe::kNone);
  }
  ~HighPrecisionGemms() {
    builder_.set_gemm_fp8(fp8_);
    builder_.set_fp8_recipe(recipe_);
  }
  HighPrecisionGemms(const HighPrecisionGemms&) = delete;
  HighPrecisionGemms& operator=(const HighPrecisionGemms&) = delete;

 private:
  ProgramBuilder& builder_;
  bool fp8_;
  Fp8Recipe recipe_;
};

std::string shape_text(int64_t rows, int64_t cols);

}  // namespace tpsim::model
