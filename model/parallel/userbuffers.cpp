// Transformer Engine's bulk userbuffers overlaps: a column-parallel linear's backward with its all-gather beside the
// data gradient and its reduce-scatter beside the weight gradient.
#include "model/parallel/userbuffers.hpp"

#include "model/parallel/async_tp.hpp"

namespace tpsim::model {
namespace {

// TE names a layer's column-parallel linears qkv (the attention's) and fc1 (the FFN's).
bool attention_linear(const ColumnLinear& linear) {
  return linear.gemm_name.rfind("attn.", 0) == 0;
}

// The rank's own rows among a pipeline's saved units (the received ones are not kept: TE saves its rows).
std::vector<OpId> own_rows(const ProgramBuilder& b, const std::vector<OpId>& saved_input) {
  std::vector<OpId> rows;
  for (const OpId id : saved_input) {
    if (b.graph().op(id).kind != OpKind::kExchange) rows.push_back(id);
  }
  return rows;
}

}  // namespace

std::vector<OpId> bulk_column_input_gradient(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                                             const std::vector<OpId>& grad_out, const std::vector<OpId>& saved_input) {
  const GemmShape forward = column_shape(ctx, linear), shape = data_gradient_shape(forward);
  const UserbufferSms& sms = ctx.workload.implementation.userbuffer_sms;
  const bool attention = attention_linear(linear);
  const bool fp8 = gathers_fp8(b, ctx);
  const double gathered_bytes = static_cast<double>(forward.m * forward.k) * (fp8 ? kFp8Bytes : b.elem_bytes());
  const OpId gathered = b.collective(linear.gemm_name + ".input.all_gather", CollectiveKind::kAllGather, gathered_bytes,
                                     shape_text(forward.m, forward.k), own_rows(b, saved_input));
  b.set_comm_sms(gathered, attention ? sms.qkv_dgrad : sms.fc1_dgrad);
  const std::string name = linear.gemm_name + ".dgrad";
  const OpId dgrad = b.gemm(name, shape, grad_out);
  const OpId reduced = scatter_product(b, ctx, name, shape, dgrad);
  b.set_comm_sms(reduced, attention ? sms.qkv_wgrad : sms.fc1_wgrad);
  b.set_a_quantised(fp8);
  weight_gradient(b, linear.gemm_name, forward, grad_out, {gathered});
  b.set_a_quantised(false);
  return {reduced};
}

}  // namespace tpsim::model
