// Layout files and the permutation of checkpoint weights.
#include "shard/apply_layout.hpp"

#include <nlohmann/json.hpp>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/json_keys.hpp"
#include "base/limits.hpp"
#include "shard/forward.hpp"

namespace tpsim::shard {
namespace {

// New position -> old index: device 0's items in the listed order, then device 1's, ...
std::vector<int64_t> order_of(const std::vector<int>& device_of, int devices) {
  std::vector<int64_t> order;
  for (int d = 0; d < devices; ++d) {
    for (size_t i = 0; i < device_of.size(); ++i) {
      if (device_of[i] == d) order.push_back(static_cast<int64_t>(i));
    }
  }
  return order;
}

Matrix rows_in_blocks(const Matrix& m, const std::vector<int64_t>& order, int64_t block) {
  Matrix out(m.rows(), m.cols());
  for (size_t p = 0; p < order.size(); ++p) {
    out.middleRows(static_cast<int64_t>(p) * block, block) = m.middleRows(order[p] * block, block);
  }
  return out;
}

Vector entries_in_blocks(const Vector& v, const std::vector<int64_t>& order, int64_t block) {
  Vector out(v.size());
  for (size_t p = 0; p < order.size(); ++p) {
    out.segment(static_cast<int64_t>(p) * block, block) = v.segment(order[p] * block, block);
  }
  return out;
}

std::vector<int> devices_of(const nlohmann::json& devices, const std::string& key, int64_t count, int layer,
                            const std::string& path) {
  std::vector<int> device_of(static_cast<size_t>(count), -1);
  const std::string where = echo_path(path) + ": layer " + std::to_string(layer) + " " + key;
  for (size_t d = 0; d < devices.size(); ++d) {
    const auto& items = devices[d].at(key);
    if (static_cast<int64_t>(items.size()) * static_cast<int64_t>(devices.size()) != count) {
      throw InputError(where + ": device " + std::to_string(d) + " holds " + std::to_string(items.size()) +
                       ", a balanced layout gives each " +
                       std::to_string(count / static_cast<int64_t>(devices.size())));
    }
    for (const auto& item : items) {
      if (!item.is_number_integer()) throw InputError(where + ": " + echo_value(item.dump()) + " is not an index");
      const int64_t i = item.get<int64_t>();
      if (i < 0 || i >= count || device_of[static_cast<size_t>(i)] >= 0) {
        throw InputError(where + ": " + std::to_string(i) + " is out of range or on two devices");
      }
      device_of[static_cast<size_t>(i)] = static_cast<int>(d);
    }
  }
  return device_of;
}

}  // namespace

Layout parse_layout_json(const std::string& text, const std::string& path, const model::ArchSpec& arch) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("layout") || !j["layout"].is_array()) {
    throw InputError(echo_path(path) + ": not a layout file (from tpsim shard layout)");
  }
  model::refuse_duplicate_keys(text, echo_path(path));
  const auto& layers = j["layout"];
  if (static_cast<int64_t>(layers.size()) != arch.layers) {
    throw InputError(echo_path(path) + ": " + std::to_string(layers.size()) + " layers, the checkpoint has " +
                     std::to_string(arch.layers));
  }
  Layout l;
  try {
    l.devices = static_cast<int>(layers[0].at("devices").size());
    for (size_t i = 0; i < layers.size(); ++i) {
      const auto& devices = layers[i].at("devices");
      if (!devices.is_array() || devices.empty() || devices.size() != static_cast<size_t>(l.devices)) {
        throw InputError(echo_path(path) + ": layer " + std::to_string(i) +
                         " devices must be a non-empty list, as long in every layer");
      }
      l.head_device.push_back(devices_of(devices, "kv_groups", arch.kv_heads, static_cast<int>(i), path));
      l.neuron_device.push_back(devices_of(devices, "neurons", arch.intermediate, static_cast<int>(i), path));
    }
  } catch (const nlohmann::json::exception& error) {
    throw InputError(echo_path(path) + ": malformed layout (" + error.what() + ")");
  }
  return l;
}

Layout read_layout_json(const std::string& path, const Checkpoint& c) {
  return parse_layout_json(read_input_file(path, "layout", model::kMaxTextFileBytes), path, c.arch);
}

Checkpoint permuted(const Checkpoint& c, const Layout& layout) {
  Checkpoint out = c;
  const int64_t hd = c.arch.head_dim, per_group = c.arch.heads / c.arch.kv_heads;
  for (size_t i = 0; i < out.layers.size(); ++i) {
    LayerWeights& l = out.layers[i];
    const std::vector<int64_t> groups = order_of(layout.head_device[i], layout.devices);
    const std::vector<int64_t> neurons = order_of(layout.neuron_device[i], layout.devices);
    l.q = rows_in_blocks(l.q, groups, per_group * hd);
    l.k = rows_in_blocks(l.k, groups, hd);
    l.v = rows_in_blocks(l.v, groups, hd);
    const Matrix o_t = rows_in_blocks(Matrix(l.o.transpose()), groups, per_group * hd);
    l.o = o_t.transpose();
    if (l.q_bias) {
      l.q_bias = entries_in_blocks(*l.q_bias, groups, per_group * hd);
      l.k_bias = entries_in_blocks(*l.k_bias, groups, hd);
      l.v_bias = entries_in_blocks(*l.v_bias, groups, hd);
    }
    // q_norm and k_norm act per head over head_dim, the same for every head: nothing to permute.
    l.gate = rows_in_blocks(l.gate, neurons, 1);
    l.up = rows_in_blocks(l.up, neurons, 1);
    const Matrix down_t = rows_in_blocks(Matrix(l.down.transpose()), neurons, 1);
    l.down = down_t.transpose();
  }
  return out;
}

double logit_difference(const Checkpoint& a, const Checkpoint& b, int tokens) {
  std::vector<int> probe;
  for (int t = 0; t < tokens; ++t) probe.push_back(static_cast<int>((7 * t + 3) % a.arch.vocab));
  const Matrix la = forward(a, probe, nullptr), lb = forward(b, probe, nullptr);
  return (la - lb).cwiseAbs().maxCoeff() / std::max(1e-30f, la.cwiseAbs().maxCoeff());
}

}  // namespace tpsim::shard
