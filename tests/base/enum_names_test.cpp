// The enums' tables of names (base/enum_names.hpp): each table's names are unique, every value of it has a printed
// name, and every name a table reads gives back its value; the lookups keep printed-only rows and aliases apart.
#include <catch2/catch.hpp>

#include <set>
#include <string_view>

#include "base/enum_names.hpp"
#include "calibrate/trace/kernel_class.hpp"
#include "calibrate/validation/composite_validation.hpp"
#include "model/graph/op.hpp"
#include "model/graph/variant.hpp"
#include "model/graph/workload.hpp"
#include "model/layers/dtype.hpp"
#include "model/layers/fp8_recipe.hpp"
#include "model/layers/implementation.hpp"
#include "model/moe/expert_parallel.hpp"
#include "model/parallel/context_parallel.hpp"
#include "model/parallel/mesh_order.hpp"
#include "model/pipeline/pipeline_schedule.hpp"
#include "plan/plan_search.hpp"
#include "real/core/collective.hpp"
#include "real/core/element_type.hpp"
#include "sim/cost/call_timing.hpp"

using namespace tpsim;

namespace {

// The row that prints `value`, for its use.
template <typename E, std::size_t N>
const EnumName<E>* printed_row(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& row : table) {
    if (row.value == value && is_printed(row.use)) return &row;
  }
  return nullptr;
}

// Unique names; every value (each appears in some row) printed by a row; every name the table reads gives back the
// value of its row, and a value's printed name gives back the value wherever the table reads it.
template <typename E, std::size_t N>
void check_table(const char* label, const EnumName<E> (&table)[N]) {
  INFO(label);
  std::set<std::string_view> names;
  for (const EnumName<E>& row : table) {
    INFO("name " << row.name);
    CHECK_FALSE(row.name.empty());
    CHECK(names.insert(row.name).second);
    const EnumName<E>* printed = printed_row(table, row.value);
    REQUIRE(printed != nullptr);
    CHECK(name_of(table, row.value) == printed->name);
    if (is_read(printed->use)) CHECK(value_named(table, printed->name) == row.value);
    if (is_read(row.use)) CHECK(value_named(table, row.name) == row.value);
    if (!is_read(row.use)) CHECK_FALSE(value_named(table, row.name));
  }
  std::vector<std::string> listed;
  for (const EnumName<E>& row : table) {
    if (is_listed(row.use)) listed.emplace_back(row.name);
  }
  CHECK(names_of(table) == listed);
}

}  // namespace

TEST_CASE("every enum table has unique names and its names and values round-trip") {
  check_table("Phase", model::kPhaseNames);
  check_table("Recompute", model::kRecomputeNames);
  check_table("Dtype", model::kDtypeNames);
  check_table("TpMode", model::kTpModeNames);
  check_table("Transport", model::kTransportNames);
  check_table("ChunkOrder", model::kChunkOrderNames);
  check_table("CollectiveAlgorithm", model::kCollectiveAlgorithmNames);
  check_table("Protocol", model::kProtocolNames);
  check_table("OpKind", model::kOpKindNames);
  check_table("Stream", model::kStreamNames);
  check_table("CollectiveKind", model::kCollectiveKindNames);
  check_table("CommGroup", model::kCommGroupNames);
  check_table("OpStage", model::kOpStageNames);
  check_table("Fp8Recipe", model::kFp8RecipeNames);
  check_table("Fp8Kernels", model::kFp8KernelsNames);
  check_table("AttentionKernel", model::kAttentionKernelNames);
  check_table("RopeKernel", model::kRopeKernelNames);
  check_table("AsyncTpKernel", model::kAsyncTpKernelNames);
  check_table("ModelEndsMode", model::kModelEndsNames);
  check_table("BackwardOrder", model::kBackwardOrderNames);
  check_table("AddNormKernel", model::kAddNormKernelNames);
  check_table("NormKernel", model::kNormKernelNames);
  check_table("LossKernel", model::kLossKernelNames);
  check_table("SwigluKernel", model::kSwigluKernelNames);
  check_table("SavedGemmInputs", model::kSavedGemmInputsNames);
  check_table("Routing", model::kRoutingNames);
  check_table("Dispatcher", model::kDispatcherNames);
  check_table("DeepEpMode", model::kDeepEpModeNames);
  check_table("CpCommType", model::kCpCommTypeNames);
  check_table("MeshOrder", model::kMeshOrderNames);
  check_table("PipelineScheduleKind", model::kPipelineScheduleNames);
  check_table("PipelinePass", model::kPipelinePassNames);
  check_table("CallTiming", sim::kCallTimingNames);
  check_table("RankBy", plan::kRankByNames);
  check_table("KernelClass", calibrate::kKernelClassNames);
  check_table("Holdout", calibrate::kHoldoutNames);
  check_table("Collective", real::kCollectiveNames);
  check_table("ElementType", real::kElementTypeNames);
}

TEST_CASE("a printed-only row is never read and an alias is read but neither printed nor listed") {
  enum class Colour { kRed, kGreen, kBlue };
  static constexpr EnumName<Colour> kColours[] = {
      {Colour::kRed, "red"},
      {Colour::kGreen, "green_printed", NameUse::kPrinted},
      {Colour::kGreen, "green", NameUse::kRead},
      {Colour::kBlue, "blue", NameUse::kPrinted},
      {Colour::kRed, "rouge", NameUse::kAlias},
  };
  CHECK(name_of(kColours, Colour::kRed) == "red");
  CHECK(name_of(kColours, Colour::kGreen) == "green_printed");
  CHECK(value_named(kColours, "green") == Colour::kGreen);
  CHECK_FALSE(value_named(kColours, "green_printed"));
  CHECK_FALSE(value_named(kColours, "blue"));
  CHECK(value_named(kColours, "rouge") == Colour::kRed);
  CHECK_FALSE(value_named(kColours, "purple"));
  CHECK(names_of(kColours) == std::vector<std::string>{"red", "green"});
}

TEST_CASE("the tables keep the order the error messages list their names in") {
  // The orders the messages printed before the tables existed (tests and docs quote some of them).
  CHECK(names_of(model::kPhaseNames) ==
        std::vector<std::string>{"forward", "prefill", "train", "decode", "generate", "ops"});
  CHECK(names_of(model::kCollectiveAlgorithmNames) ==
        std::vector<std::string>{"nccl", "auto", "ring", "one_shot", "two_shot", "nvls", "tree", "multimem"});
  CHECK(names_of(model::kStreamNames) ==
        std::vector<std::string>{"compute", "comm", "copy", "comm2", "copy2", "comm3", "copy3", "comm4", "compute2"});
  CHECK(names_of(model::kCollectiveKindNames) ==
        std::vector<std::string>{"allreduce", "allgather", "reducescatter", "alltoall", "sendrecv"});
  CHECK(names_of(model::kTransportNames) == std::vector<std::string>{"copy_engine", "sm"});
  CHECK(names_of(model::kFp8RecipeNames) ==
        std::vector<std::string>{"tensorwise", "delayed", "rowwise", "blockwise", "mxfp8"});
  CHECK(names_of(model::kPipelineScheduleNames) ==
        std::vector<std::string>{"gpipe", "1f1b", "interleaved", "zb-h1", "zb-v"});
  // Stream values are op-list indices: copy2 and copy3 sit between the named streams.
  CHECK(static_cast<int>(*value_named(model::kStreamNames, "copy3")) == 6);
  CHECK(model::to_string(model::Stream::kCopy) == "copy_engine");
}
