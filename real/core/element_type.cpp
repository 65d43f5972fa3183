// Element type names and sizes.
#include "real/core/element_type.hpp"

#include "base/input_error.hpp"
#include "base/names.hpp"

namespace tpsim::real {

size_t element_bytes(ElementType type) {
  return type == ElementType::kFloat32 ? 4 : type == ElementType::kBf16 ? 2 : 1;
}

ElementType element_type(const std::string& name) {
  if (const std::optional<ElementType> type = value_named(kElementTypeNames, name)) return *type;
  throw InputError("element type '" + name + "'; valid: " + model::join_names(names_of(kElementTypeNames)));
}

}  // namespace tpsim::real
