// Reads cost profiles: profile YAML text and files, the embedded default profile of a GPU preset, and the profile a
// scenario's calibration names.
#pragma once

#include <optional>
#include <string>

#include "model/scenario.hpp"
#include "sim/cost/profile.hpp"

namespace tpsim::sim {

// Parses profile YAML text; `origin` names it in errors (and is where a base file is looked for). A
// profile gives every required value (gemm, memory, attention, nccl, copy_engine, launch) or names its
// `base:` (a GPU preset's default profile, or a profile file), whose values it overrides key by key.
CostProfile parse_profile(const std::string& text, const std::string& origin);
// The embedded default profile of a GPU preset, if there is one.
std::optional<CostProfile> default_profile(const std::string& gpu_name);
// A profile file; throws InputError when it cannot be read or is malformed.
CostProfile load_profile_file(const std::string& path);
// The error for a GPU without a default profile, listing those that have one.
std::string no_default_profile_message(const std::string& gpu_name);
// calibration: default (the embedded profile of `gpu_name`), a GPU preset's name (its default profile),
// or a profile file path relative to the scenario. A profile fitted for another GPU than `gpu_name` is
// refused, unless the scenario says `transfer: as_is` (the run then reports it); `tpsim calibrate --gpu`
// carries a profile over to another GPU with what their published figures say.
CostProfile resolve_profile(const model::Scenario& scenario, const std::string& gpu_name);

}  // namespace tpsim::sim
