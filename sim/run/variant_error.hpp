// Bad input a variant's run meets without a location (a collective its settings ask for that the profile or fabric
// cannot run, a program its mode cannot build), located in the scenario at the key that asks for it.
#pragma once

#include <cstddef>
#include <functional>

#include "model/scenario.hpp"

namespace tpsim::sim {

// Runs `run` (a run of variant `index` of `s`) and rethrows the InputError it throws without a location as one
// located at the key that asked for it: for a collective that cannot run, the op list entry's algorithm or protocol
// (phase ops), else the variant's collective or protocol, else the calibration (what the profile lacks); for the
// rest, the variant. Located errors pass through as they are.
void locate_variant_errors(const model::Scenario& s, size_t index, const std::function<void()>& run);

}  // namespace tpsim::sim
