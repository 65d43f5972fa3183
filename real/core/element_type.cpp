// Element type names and sizes.
#include "real/core/element_type.hpp"

#include "base/input_error.hpp"

namespace tpsim::real {

size_t element_bytes(ElementType type) {
  return type == ElementType::kFloat32 ? 4 : type == ElementType::kBf16 ? 2 : 1;
}

ElementType element_type(const std::string& name) {
  if (name == "bf16") return ElementType::kBf16;
  if (name == "fp8") return ElementType::kFp8E4m3;
  if (name == "float32") return ElementType::kFloat32;
  throw InputError("element type '" + name + "'; valid: bf16, fp8, float32");
}

}  // namespace tpsim::real
