// Duplicate JSON keys found with nlohmann's SAX interface, one set of keys per open object.
#include "base/json_keys.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "base/input_error.hpp"

namespace tpsim::model {
namespace {

// Records the first key an object repeats, and how many times that key was a key before it anywhere.
class DuplicateKeyFinder final : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::optional<std::string> duplicate;
  int earlier_uses = 0;  // of the duplicate key as a key, before its repetition

  bool null() override { return true; }
  bool boolean(bool /*value*/) override { return true; }
  bool number_integer(number_integer_t /*value*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*value*/) override { return true; }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override { return true; }
  bool string(string_t& /*value*/) override { return true; }
  bool binary(binary_t& /*value*/) override { return true; }
  bool start_object(std::size_t /*elements*/) override {
    open_.emplace_back();
    return true;
  }
  bool key(string_t& key) override {
    if (!open_.back().insert(key).second) {
      duplicate = key;
      earlier_uses = uses_[key];
      return false;  // stop: one is enough
    }
    ++uses_[key];
    return true;
  }
  bool end_object() override {
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*elements*/) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*error*/) override {
    return false;
  }

 private:
  std::vector<std::set<std::string>> open_;
  std::map<std::string, int> uses_;
};

// The byte offset of occurrence `n` (0-based) of `key` written as a key ("key" then ':'), or npos.
size_t offset_of_key(std::string_view text, const std::string& key, int n) {
  const std::string quoted = nlohmann::json(key).dump();
  for (size_t at = text.find(quoted); at != std::string_view::npos; at = text.find(quoted, at + 1)) {
    size_t after = at + quoted.size();
    while (after < text.size() &&
           (text[after] == ' ' || text[after] == '\t' || text[after] == '\n' || text[after] == '\r')) {
      ++after;
    }
    if (after < text.size() && text[after] == ':' && n-- == 0) return at;
  }
  return std::string_view::npos;
}

}  // namespace

TextPosition position_of_byte(std::string_view text, size_t byte) {
  TextPosition pos{0, 0};
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++pos.line0;
      pos.col0 = 0;
    } else {
      ++pos.col0;
    }
  }
  return pos;
}

void refuse_duplicate_keys(std::string_view text, const std::string& origin, bool locate) {
  DuplicateKeyFinder finder;
  nlohmann::json::sax_parse(text, &finder);
  if (!finder.duplicate) return;
  TextPosition pos;
  if (locate) {
    const size_t at = offset_of_key(text, *finder.duplicate, finder.earlier_uses);
    if (at != std::string_view::npos) pos = position_of_byte(text, at);
  }
  throw InputError(
      format_location(origin, pos.line0, pos.col0),
      "key \"" + echo_value(*finder.duplicate) + "\" is given twice in one JSON object; give each key once");
}

}  // namespace tpsim::model
