// Reading and writing safetensors files with nlohmann-json for the header.
#include "shard/safetensors.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/input_error.hpp"

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

std::vector<float> decode(const std::string& dtype, const char* data, size_t bytes, const std::string& where) {
  std::vector<float> out;
  if (dtype == "F32") {
    out.resize(bytes / 4);
    std::memcpy(out.data(), data, out.size() * 4);
  } else if (dtype == "BF16" || dtype == "F16") {
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
  } else {
    throw InputError(where + ": dtype " + dtype + " is not supported; valid: F32, BF16, F16");
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

SafetensorsFile read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the safetensors file");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t header_size = 0;
  if (bytes.size() < 8) throw InputError(path + ": not a safetensors file (shorter than its 8-byte header length)");
  for (int i = 7; i >= 0; --i)
    header_size = (header_size << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  if (header_size > bytes.size() - 8) throw InputError(path + ": not a safetensors file (header length past the end)");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(8, header_size));
  } catch (const nlohmann::json::parse_error& error) {
    throw InputError(path + ": not a safetensors file (its header is not JSON: " + error.what() + ")");
  }
  const size_t data_start = 8 + header_size;
  SafetensorsFile file;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      for (const auto& [key, value] : entry.items()) {
        if (value.is_string()) file.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string where = path + ": tensor '" + name + "'";
    try {
      Tensor t;
      t.shape = entry.at("shape").get<std::vector<int64_t>>();
      const auto offsets = entry.at("data_offsets").get<std::vector<size_t>>();
      if (offsets.size() != 2 || offsets[0] > offsets[1] || data_start + offsets[1] > bytes.size()) {
        throw InputError(where + ": data_offsets outside the file");
      }
      t.values = decode(entry.at("dtype").get<std::string>(), bytes.data() + data_start + offsets[0],
                        offsets[1] - offsets[0], where);
      int64_t count = 1;
      for (int64_t d : t.shape) count *= d;
      if (count != static_cast<int64_t>(t.values.size())) throw InputError(where + ": shape and byte size disagree");
      file.tensors[name] = std::move(t);
    } catch (const nlohmann::json::exception& error) {
      throw InputError(where + ": malformed header entry (" + error.what() + ")");
    }
  }
  return file;
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
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path + ": cannot write here (check the directory exists and is writable)");
    uint64_t size = text.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((size >> (8 * i)) & 0xFF));
    out << text;
    for (const auto& [name, t] : file.tensors) {
      out.write(reinterpret_cast<const char*>(t.values.data()), static_cast<std::streamsize>(4 * t.values.size()));
    }
    if (!out.flush()) throw InputError(path + ": write failed");
  }
  std::filesystem::rename(temporary, path);
}

}  // namespace tpsim::shard
