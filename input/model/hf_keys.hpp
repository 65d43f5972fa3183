// The config.json keys beyond the shapes: the types of those tpsim reads or judges (a mistyped one is
// an error, not ignored), and the architecture features it does not model yet, refused by key name.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "input/model/arch_reader.hpp"

namespace tpsim::model {

// Throws InputError, located by `at`, for a known key of the wrong type or a key that turns on an
// unmodelled feature (sliding-window or linear attention, MoE, MLA, o_proj / MLP biases).
void check_hf_keys(const nlohmann::json& config, const ArchSource& at);

// The keys check_hf_keys refuses when they are in effect, for docs and tests.
std::vector<std::string> unmodelled_keys();

}  // namespace tpsim::model
