// The tables of the profile sections of their own shape: each key once, with how it reads and where it lives.
#include "sim/cost/profile_fields.hpp"

#include <type_traits>

#include "base/limits.hpp"
#include "sim/cost/power_limit.hpp"

namespace tpsim::sim {
namespace {

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

// The member at the end of a path of member pointers from `object`, through optional parts (nullptr where one is
// absent).
template <auto First, auto... Rest, class T>
const auto* find_member(const T& object) {
  const auto& member = object.*First;
  using Member = std::remove_cvref_t<decltype(member)>;
  if constexpr (IsOptional<Member>::value) {
    using Inner = typename Member::value_type;
    if constexpr (sizeof...(Rest) == 0) {
      return member ? &*member : static_cast<const Inner*>(nullptr);
    } else {
      using Found = decltype(find_member<Rest...>(*member));
      return member ? find_member<Rest...>(*member) : static_cast<Found>(nullptr);
    }
  } else if constexpr (sizeof...(Rest) == 0) {
    return &member;
  } else {
    return find_member<Rest...>(member);
  }
}

// A member to write: itself, or what its optional holds (created where absent).
template <class M>
auto& made(M& member) {
  if constexpr (IsOptional<M>::value) {
    if (!member) member.emplace();
    return *member;
  } else {
    return member;
  }
}

// The member at the end of the path to write, creating the optional parts on the way.
template <auto First, auto... Rest, class T>
auto& make_member(T& object) {
  auto& part = made(object.*First);
  if constexpr (sizeof...(Rest) == 0) {
    return part;
  } else {
    return make_member<Rest...>(part);
  }
}

template <auto... Path>
std::optional<double> get_value(const CostProfile& p) {
  const auto* member = find_member<Path...>(p);
  if (!member) return std::nullopt;
  return static_cast<double>(*member);
}

template <auto... Path>
void set_value(CostProfile& p, double value) {
  auto& member = make_member<Path...>(p);
  member = static_cast<std::remove_cvref_t<decltype(member)>>(value);
}

template <auto... Path>
bool has_part(const CostProfile& p) {
  return find_member<Path...>(p) != nullptr;
}

using Kind = ProfileField::Kind;
using Reads = ProfileField::Reads;

// A value key at the member `Path` leads to.
template <auto... Path>
ProfileField value(const char* key, Reads reads, double low, double high, bool required = false) {
  ProfileField f{key, Kind::kValue, reads, low, high};
  f.get = &get_value<Path...>;
  f.set = &set_value<Path...>;
  f.required = required;
  return f;
}

template <auto... Path>
ProfileField fraction(const char* key, bool required = false) {
  return value<Path...>(key, Reads::kFraction, 0, 1, required);
}

// A latency or overhead, written in us: from 0 to a second (kMaxProfileSeconds), so no sum of them overflows the
// clock.
template <auto... Path>
ProfileField microseconds(const char* key, bool required = false, double high_us = model::kMaxProfileSeconds * 1e6) {
  ProfileField f = value<Path...>(key, Reads::kRange, 0, high_us, required);
  f.microseconds = true;
  return f;
}

// A count of tiles, SMs, ...: a positive integer up to `max`.
template <auto... Path>
ProfileField count(const char* key, double max, bool required = false) {
  return value<Path...>(key, Reads::kCount, 1, max, required);
}

ProfileField with_source(ProfileField f, const char* source_key) {
  f.source_key = source_key;
  return f;
}

ProfileField text(const char* key) {
  return {key, Kind::kText};
}
ProfileField fit(const char* key = "fit") {
  return {key, Kind::kFit};
}
ProfileField part(const char* key) {
  return {key, Kind::kPart};
}
ProfileField nested(const ProfileSection& section) {
  ProfileField f{section.key, Kind::kNested};
  f.nested = &section;
  return f;
}

// Bounds of integer parameters (narrowed to int): a tile or split of more than 2^16 rows, or more NCCL SMs than any
// GPU has, is a typo.
constexpr double kMaxTile = 65536;
constexpr double kMaxSms = 1024;
// A GEMM's tail beside a comm kernel of more tile times than this is a typo (the fit gives about one).
constexpr double kMaxTailTiles = 64;
// A DeepEP low-latency kernel's floor: 1 ms is far above any published one (tens of microseconds).
constexpr double kMaxDeepEpFloorUs = 1000;

ProfileSection gemm() {
  ProfileField tail = with_source(
      value<&CostProfile::gemm, &GemmParams::shared_tail_tiles>("shared_tail_tiles", Reads::kRange, 0, kMaxTailTiles),
      "shared_tail_source");
  tail.written_above = 0;
  return {"gemm",
          {fraction<&CostProfile::gemm, &GemmParams::efficiency>("efficiency", true),
           with_source(fraction<&CostProfile::gemm, &GemmParams::fp8_efficiency>("fp8_efficiency"), "fp8_source"),
           text("fp8_source"),
           with_source(fraction<&CostProfile::gemm, &GemmParams::grouped_efficiency>("grouped_efficiency"),
                       "grouped_source"),
           text("grouped_source"), fraction<&CostProfile::gemm, &GemmParams::hbm_efficiency>("hbm_efficiency", true),
           microseconds<&CostProfile::gemm, &GemmParams::overhead_s>("overhead_us", true),
           with_source(count<&CostProfile::gemm, &GemmParams::tile_m>("tile_m", kMaxTile, true), "tile_source"),
           with_source(count<&CostProfile::gemm, &GemmParams::tile_n>("tile_n", kMaxTile, true), "tile_source"),
           with_source(count<&CostProfile::gemm, &GemmParams::small_m_tile_m>("small_m_tile_m", kMaxTile, true),
                       "tile_source"),
           with_source(count<&CostProfile::gemm, &GemmParams::min_k_per_split>("min_k_per_split", kMaxTile, true),
                       "tile_source"),
           text("tile_source"), tail, text("shared_tail_source"), text("efficiency_source"),
           text("memory_bound_source"), text("source"), fit()}};
}

ProfileSection memory() {
  return {"memory",
          {fraction<&CostProfile::memory, &MemoryParams::hbm_efficiency>("hbm_efficiency", true),
           microseconds<&CostProfile::memory, &MemoryParams::overhead_s>("overhead_us", true), text("source"), fit()}};
}

ProfileSection attention() {
  ProfileField causal = with_source(value<&CostProfile::attention, &AttentionParams::backward_causal_tokens>(
                                        "backward_causal_tokens", Reads::kRange, 0, kMaxCausalTokens),
                                    "backward_source");
  causal.written_above = 0;
  ProfileField forward_causal = value<&CostProfile::attention, &AttentionParams::forward_causal_tokens>(
      "forward_causal_tokens", Reads::kRange, 0, kMaxCausalTokens);
  forward_causal.written_above = 0;
  return {
      "attention",
      {part("kernel"), part("kernels"),
       fraction<&CostProfile::attention, &AttentionParams::efficiency>("efficiency", true), forward_causal,
       fraction<&CostProfile::attention, &AttentionParams::unmasked_efficiency>("unmasked_efficiency"), text("source"),
       with_source(fraction<&CostProfile::attention, &AttentionParams::fp8_efficiency>("fp8_efficiency"), "fp8_source"),
       text("fp8_source"),
       with_source(fraction<&CostProfile::attention, &AttentionParams::backward_efficiency>("backward_efficiency"),
                   "backward_source"),
       causal, text("backward_source"), fit()}};
}

// DeepEP's low-latency kernels: where the base has none, every value must be given.
const ProfileSection& deepep_low_latency() {
  using L = DeepEpLowLatencyParams;
  static const ProfileSection section{
      "low_latency",
      {fraction<&CostProfile::deepep, &DeepEpParams::low_latency, &L::dispatch_nvlink_efficiency>(
           "dispatch_nvlink_efficiency", true),
       fraction<&CostProfile::deepep, &DeepEpParams::low_latency, &L::combine_nvlink_efficiency>(
           "combine_nvlink_efficiency", true),
       microseconds<&CostProfile::deepep, &DeepEpParams::low_latency, &L::dispatch_nvlink_latency_s>(
           "dispatch_nvlink_latency_us", true, kMaxDeepEpFloorUs),
       microseconds<&CostProfile::deepep, &DeepEpParams::low_latency, &L::combine_nvlink_latency_s>(
           "combine_nvlink_latency_us", true, kMaxDeepEpFloorUs),
       fraction<&CostProfile::deepep, &DeepEpParams::low_latency, &L::rdma_efficiency>("rdma_efficiency", true),
       microseconds<&CostProfile::deepep, &DeepEpParams::low_latency, &L::rdma_latency_s>("rdma_latency_us", true,
                                                                                          kMaxDeepEpFloorUs)},
      &has_part<&CostProfile::deepep, &DeepEpParams::low_latency>,
      false};
  return section;
}

// DeepEP's own count includes the bytes a node sends itself, so its rdma rate may exceed the NIC's: up to the EP
// group's nodes over its other nodes, 4 a guard far above two nodes' 2 (the published rows give 1.08).
ProfileSection deepep() {
  return {"deepep",
          {fraction<&CostProfile::deepep, &DeepEpParams::nvlink_efficiency>("nvlink_efficiency", true),
           value<&CostProfile::deepep, &DeepEpParams::rdma_efficiency>("rdma_efficiency", Reads::kRange, 0.01, 4, true),
           nested(deepep_low_latency()), text("source"), fit()},
          &has_part<&CostProfile::deepep>};
}

// backward_ratio's bounds are guards, not measurements: a backward does at least half its forward's work and far
// less than 20 times it (FlashAttention's is 2.5 times, FLA's gated delta rule's 2.7).
ProfileSection linear_attention() {
  using L = LinearAttentionParams;
  return {"linear_attention",
          {fraction<&CostProfile::linear_attention, &L::efficiency>("efficiency", true),
           microseconds<&CostProfile::linear_attention, &L::chunk_step_s>("chunk_step_us", true),
           fraction<&CostProfile::linear_attention, &L::decode_hbm_efficiency>("decode_hbm_efficiency", true),
           microseconds<&CostProfile::linear_attention, &L::decode_overhead_s>("decode_overhead_us", true),
           value<&CostProfile::linear_attention, &L::backward_ratio>("backward_ratio", Reads::kRange, 0.5, 20, true),
           text("source"), fit()},
          &has_part<&CostProfile::linear_attention>};
}

// A ring regime of nccl (small_messages, ll, ll128): both values where the base has none.
template <std::optional<TransportParams> CostProfile::*Regime>
ProfileSection regime(const char* key) {
  return {key,
          {microseconds<Regime, &TransportParams::step_latency_s>("step_latency_us", true),
           fraction<Regime, &TransportParams::link_efficiency>("link_efficiency", true), text("source"), fit()},
          &has_part<Regime>};
}

const ProfileSection& small_messages() {
  static const ProfileSection section = [] {
    ProfileSection s = regime<&CostProfile::nccl_small>("small_messages");
    s.shares_parent_fit = true;
    return s;
  }();
  return section;
}

const ProfileSection& ll() {
  static const ProfileSection section = regime<&CostProfile::nccl_ll>("ll");
  return section;
}

const ProfileSection& ll128() {
  static const ProfileSection section = regime<&CostProfile::nccl_ll128>("ll128");
  return section;
}

ProfileSection nccl() {
  return {"nccl",
          {microseconds<&CostProfile::nccl, &TransportParams::step_latency_s>("step_latency_us", true),
           fraction<&CostProfile::nccl, &TransportParams::link_efficiency>("link_efficiency", true),
           count<&CostProfile::nccl_sms>("sms", kMaxSms, true), count<&CostProfile::nccl_nvls_sms>("nvls_sms", kMaxSms),
           count<&CostProfile::nccl_p2p_sms>("p2p_sms", kMaxSms), text("sms_source"), text("source"),
           with_source(microseconds<&CostProfile::nccl_call_latency_s>("call_latency_us", true), "call_latency_source"),
           text("call_latency_source"), fit("call_latency_fit"), nested(small_messages()), nested(ll()),
           nested(ll128()), fit()}};
}

ProfileSection copy_engine() {
  return {"copy_engine",
          {microseconds<&CostProfile::copy_engine, &TransportParams::step_latency_s>("step_latency_us", true),
           fraction<&CostProfile::copy_engine, &TransportParams::link_efficiency>("link_efficiency", true),
           with_source(fraction<&CostProfile::copy_engine_all_ranks_efficiency>("all_ranks_link_efficiency"),
                       "all_ranks_source"),
           text("all_ranks_source"), fit("all_ranks_fit"), text("source"), fit()}};
}

// Where the base has no power section, measured_at_W, idle_W and exponent must be given; transfer_pJ_per_bit is
// optional (absent, transfers draw nothing the model counts).
ProfileSection power() {
  using W = PowerParams;
  // Written at 0 too (not modelled: the rates hold at measured_at_W): a profile over a base that models the window
  // states its own part's.
  ProfileField sustained = value<&CostProfile::power, &W::sustained_ratio>("sustained_ratio", Reads::kRange, 0, 1);
  return {
      "power",
      {value<&CostProfile::power, &W::measured_at_W>("measured_at_W", Reads::kRange, 1, 1e4, true),
       text("measured_at_W_source"), value<&CostProfile::power, &W::idle_W>("idle_W", Reads::kRange, 0, 1e4, true),
       text("idle_W_source"), value<&CostProfile::power, &W::exponent>("exponent", Reads::kRange, 0.5, 10, true),
       text("exponent_source"),
       value<&CostProfile::power, &W::transfer_pJ_per_bit>("transfer_pJ_per_bit", Reads::kRange, 0, kMaxEnergyPjPerBit),
       text("transfer_pJ_per_bit_source"), sustained, text("sustained_ratio_source"), text("source"), fit(),
       fit("curve_fit")},
      &has_part<&CostProfile::power>};
}

ProfileSection launch() {
  return {
      "launch",
      {microseconds<&CostProfile::host_launch_s>("host_us", true),
       microseconds<&CostProfile::stream_wait_s>("stream_wait_us", true),
       microseconds<&CostProfile::gpu_wait_s>("gpu_wait_us", true),
       with_source(microseconds<&CostProfile::collective_host_s>("collective_host_us", true), "collective_host_source"),
       text("collective_host_source"), text("source"), fit(), fit("collective_host_fit")}};
}

}  // namespace

const std::vector<ProfileSection>& profile_sections() {
  static const std::vector<ProfileSection> sections = {gemm(), memory(),      attention(), deepep(), linear_attention(),
                                                       nccl(), copy_engine(), power(),     launch()};
  return sections;
}

}  // namespace tpsim::sim
