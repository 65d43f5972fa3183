// The safetensors format (an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the raw little-endian data), read and written for float32, with
// bf16 / f16 read as float32. Errors name the file and the tensor.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tpsim::shard {

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> values;  // row-major
};

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;

  // The tensor, or an InputError naming `file`, the tensor and the names present.
  const Tensor& at(const std::string& name, const std::string& file) const;
};

SafetensorsFile read_safetensors(const std::string& path);
// The same from the file's bytes; `path` names it in errors.
SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& path);
// Writes float32 tensors (atomically: a temporary file renamed into place).
void write_safetensors(const std::string& path, const SafetensorsFile& file);

}  // namespace tpsim::shard
