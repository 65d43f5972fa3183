// Element types of the tensors real/ fills, multiplies and reduces.
#pragma once

#include <cstddef>
#include <string>

#include "base/enum_names.hpp"

namespace tpsim::real {

enum class ElementType { kBf16, kFp8E4m3, kFloat32 };
inline constexpr EnumName<ElementType> kElementTypeNames[] = {
    {ElementType::kBf16, "bf16"},
    {ElementType::kFp8E4m3, "fp8"},
    {ElementType::kFloat32, "float32"},
};

size_t element_bytes(ElementType type);
// "bf16" -> kBf16, "fp8" -> kFp8E4m3, "float32" -> kFloat32; InputError otherwise.
ElementType element_type(const std::string& name);

}  // namespace tpsim::real
