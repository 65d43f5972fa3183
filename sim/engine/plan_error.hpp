// Bad input met while planning one op's communication, with the setting that asked for it (the op's algorithm,
// its protocol, or neither: what the profile or fabric lacks for NCCL's own choice) and the op's name, so that a
// scenario can locate it at its key.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "base/input_error.hpp"

namespace tpsim::sim {

enum class PlanSetting : uint8_t { kAlgorithm, kProtocol, kProfile };

class PlanError : public InputError {
 public:
  PlanError(PlanSetting setting, std::string op_name, const std::string& message)
      : InputError(message), setting_(setting), op_name_(std::move(op_name)) {}

  PlanSetting setting() const { return setting_; }
  // The op whose plan failed (empty until plan_program names it).
  const std::string& op_name() const { return op_name_; }

 private:
  PlanSetting setting_;
  std::string op_name_;
};

}  // namespace tpsim::sim
