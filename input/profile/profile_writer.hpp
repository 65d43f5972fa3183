// Writes a cost profile as YAML (yaml-cpp's emitter): every value, where it comes from, and each fit's errors, as the
// fit hands them over (sim::WrittenProfile); profile_reader.hpp reads it back.
#pragma once

#include <string>

#include "sim/cost/profile_fields.hpp"

namespace tpsim::sim {

// The profile's YAML text: the header's comments, gpu and base, then every section in the order of its tables
// (sim::profile_sections(), the optional transport sections after copy_engine).
std::string profile_yaml(const WrittenProfile& written);

}  // namespace tpsim::sim
