// Names joined for a message's "valid: ..." list.
#include "base/names.hpp"

namespace tpsim::model {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace tpsim::model
