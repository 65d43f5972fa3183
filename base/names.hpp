// Names joined for a message's "valid: ..." list.
#pragma once

#include <string>
#include <vector>

namespace tpsim::model {

// "a, b, c": for error messages that list what is valid.
std::string join_names(const std::vector<std::string>& names);

}  // namespace tpsim::model
