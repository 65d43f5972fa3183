// Reading and writing safetensors files with nlohmann-json for the header.
#include "shard/safetensors.hpp"

#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/json_keys.hpp"
#include "base/limits.hpp"
#include "base/output_file.hpp"
#include "base/size_checks.hpp"

namespace tpsim::shard {
namespace {

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1F;
  uint32_t mantissa = h & 0x3FF;
  uint32_t bits = 0;
  if (exponent == 0 && mantissa == 0) {
    bits = sign;
  } else if (exponent == 0) {  // subnormal: normalise
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | ((127 - 15 - shift + 1) << 23) | ((mantissa & 0x3FFu) << 13);
  } else if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float out = 0;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

// Bytes per element of a dtype tpsim reads.
int64_t element_width(const std::string& dtype, const std::string& where) {
  if (dtype == "F32") return 4;
  if (dtype == "BF16" || dtype == "F16") return 2;
  throw InputError(where + ": dtype " + echo_value(dtype) + " is not supported; valid: F32, BF16, F16");
}

// `bytes` of `dtype` (one element_width accepts) as float32.
std::vector<float> decode(const std::string& dtype, const char* data, size_t bytes) {
  std::vector<float> out;
  if (dtype == "F32") {
    out.resize(bytes / 4);
    std::memcpy(out.data(), data, out.size() * 4);
  } else {
    out.resize(bytes / 2);
    for (size_t i = 0; i < out.size(); ++i) {
      uint16_t h = 0;
      std::memcpy(&h, data + 2 * i, 2);
      if (dtype == "BF16") {
        const uint32_t wide = static_cast<uint32_t>(h) << 16;
        std::memcpy(&out[i], &wide, 4);
      } else {
        out[i] = half_to_float(h);
      }
    }
  }
  return out;
}

}  // namespace

const Tensor& SafetensorsFile::at(const std::string& name, const std::string& file) const {
  const auto it = tensors.find(name);
  if (it != tensors.end()) return it->second;
  std::string present;
  for (const auto& [n, t] : tensors) present += (present.empty() ? "" : ", ") + n;
  if (present.size() > 300) present = present.substr(0, 300) + "...";
  throw InputError(file + ": no tensor '" + name + "' (present: " + present + ")");
}

namespace {

// The element count of `shape` and its bytes at `width` per element; throws naming `where` when a
// dimension is negative or the product passes the file size it must fit.
size_t tensor_bytes(const std::vector<int64_t>& shape, int64_t width, size_t available, const std::string& where) {
  const std::optional<int64_t> count = [&]() -> std::optional<int64_t> {
    int64_t product = width;
    for (const int64_t d : shape) {
      const std::optional<int64_t> next = model::checked_product({product, d});
      if (!next) return std::nullopt;
      product = *next;
    }
    return product;
  }();
  if (!count || static_cast<uint64_t>(*count) > available) {
    throw InputError(where + ": its shape needs more bytes than its data_offsets give (or a negative dimension)");
  }
  return static_cast<size_t>(*count);
}

Tensor read_tensor(const nlohmann::json& entry, std::string_view data, const std::string& where) {
  // A number past 64 bits parses as a double, which a cast to an integer would not survive.
  for (const char* key : {"shape", "data_offsets"}) {
    const nlohmann::json& list = entry.at(key);
    if (!list.is_array()) throw InputError(where + ": " + key + " must be a list of non-negative integers");
    for (const auto& value : list) {
      if (!value.is_number_unsigned()) {
        throw InputError(where + ": " + key + " must be a list of non-negative integers below 2^64");
      }
    }
  }
  Tensor t;
  t.shape = entry.at("shape").get<std::vector<int64_t>>();
  const auto offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
  // Compared, never added: offsets near 2^64 must not wrap into the header.
  if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data.size()) {
    throw InputError(where + ": data_offsets must be [begin, end] with begin <= end <= the " +
                     std::to_string(data.size()) + " data bytes");
  }
  const std::string dtype = entry.at("dtype").get<std::string>();
  const int64_t width = element_width(dtype, where);
  const size_t bytes = offsets[1] - offsets[0];
  if (tensor_bytes(t.shape, width, data.size(), where) != bytes) {
    throw InputError(where + ": shape and byte size disagree");
  }
  t.values = decode(dtype, data.data() + offsets[0], bytes);
  return t;
}

}  // namespace

SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& path) {
  const std::string file_name = echo_path(path);
  uint64_t header_size = 0;
  if (bytes.size() < 8)
    throw InputError(file_name + ": not a safetensors file (shorter than its 8-byte header length)");
  for (int i = 7; i >= 0; --i)
    header_size = (header_size << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  if (header_size > bytes.size() - 8) {
    throw InputError(file_name + ": not a safetensors file (header length past the end)");
  }
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(8, header_size));
  } catch (const nlohmann::json::exception& error) {
    throw InputError(file_name + ": not a safetensors file (its header is not JSON: " + error.what() + ")");
  }
  if (!header.is_object()) throw InputError(file_name + ": not a safetensors file (its header is not a JSON object)");
  model::refuse_duplicate_keys(bytes.substr(8, header_size), file_name + " (its header)");
  const std::string_view data = bytes.substr(8 + header_size);
  SafetensorsFile file;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) throw InputError(file_name + ": __metadata__ must be a JSON object of strings");
      for (const auto& [key, value] : entry.items()) {
        if (value.is_string()) file.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string where = file_name + ": tensor '" + echo_value(name) + "'";
    try {
      file.tensors[name] = read_tensor(entry, data, where);
    } catch (const nlohmann::json::exception& error) {
      throw InputError(where + ": malformed header entry (" + error.what() + ")");
    }
  }
  return file;
}

SafetensorsFile read_safetensors(const std::string& path) {
  return parse_safetensors(read_input_file(path, "safetensors", model::kMaxSafetensorsFileBytes,
                                           "shard the checkpoint (model.safetensors.index.json and several files)"),
                           path);
}

void write_safetensors(const std::string& path, const SafetensorsFile& file) {
  nlohmann::ordered_json header;
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  size_t offset = 0;
  for (const auto& [name, t] : file.tensors) {
    header[name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + 4 * t.values.size()}}};
    offset += 4 * t.values.size();
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text += ' ';  // the format pads the header to 8 bytes
  std::string bytes;
  bytes.reserve(8 + text.size() + offset);
  const uint64_t size = text.size();
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((size >> (8 * i)) & 0xFF));
  bytes += text;
  for (const auto& [name, t] : file.tensors) {
    bytes.append(reinterpret_cast<const char*>(t.values.data()), 4 * t.values.size());
  }
  write_output_file(path, bytes);
}

}  // namespace tpsim::shard
