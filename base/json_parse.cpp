// nlohmann's DOM parser with its parse error's byte kept, then that byte turned into a location.
#include "base/json_parse.hpp"

#include <cctype>
#include <optional>

#include "base/input_error.hpp"
#include "base/json_keys.hpp"

namespace tpsim::model {
namespace {

// nlohmann's DOM builder, keeping where a parse error happened: its exceptions for a number out of range carry no
// byte. (sax_parse calls the handler's parse_error by its static type, so this one hides the base's.)
class LocatingDomParser : public nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
 public:
  using json_sax_dom_parser::json_sax_dom_parser;

  template <class Exception>
  bool parse_error(std::size_t position, const std::string& last_token, const Exception& error) {
    error_end = position;
    error_token = last_token;
    return json_sax_dom_parser::parse_error(position, last_token, error);
  }

  size_t error_end = 0;  // the byte after the token that failed
  std::string error_token;
};

// The key whose value starts at byte `value` of `text` ("key": value): where its opening quote is, and its name; none
// (nullopt) when no key precedes the value (an array's item).
struct KeyAt {
  size_t byte = 0;
  std::string name;
};
std::optional<KeyAt> key_before(std::string_view text, size_t value) {
  const auto skip_space = [&](size_t i) {
    while (i > 0 && std::isspace(static_cast<unsigned char>(text[i - 1]))) --i;
    return i;
  };
  size_t i = skip_space(value);
  if (i == 0 || text[i - 1] != ':') return std::nullopt;
  const size_t close = skip_space(i - 1);
  if (close == 0 || text[close - 1] != '"') return std::nullopt;
  for (size_t open = close - 1; open > 0; --open) {
    if (text[open - 1] == '"' && (open < 2 || text[open - 2] != '\\')) {
      return KeyAt{open - 1, std::string(text.substr(open, close - 1 - open))};
    }
  }
  return std::nullopt;
}

}  // namespace

nlohmann::json parse_json_located(std::string_view text, const std::string& origin) {
  nlohmann::json doc;
  LocatingDomParser parser(doc);
  try {
    nlohmann::json::sax_parse(text, &parser);
  } catch (const nlohmann::json::parse_error& error) {
    const TextPosition pos = position_of_byte(text, error.byte == 0 ? 0 : error.byte - 1);
    throw InputError(format_location(origin, pos.line0, pos.col0),
                     std::string("not valid JSON (") + error.what() + ")");
  } catch (const nlohmann::json::exception&) {  // a number past a double (1e309)
    const std::string& number = parser.error_token;
    const size_t start = parser.error_end >= number.size() ? parser.error_end - number.size() : 0;
    const std::optional<KeyAt> key = key_before(text, start);
    const TextPosition pos = position_of_byte(text, key ? key->byte : start);
    throw InputError(format_location(origin, pos.line0, pos.col0),
                     (key ? "key \"" + echo_value(key->name) + "\": " : std::string()) + "the number " +
                         echo_value(number) +
                         " is past the largest a double holds (about 1.8e308); give a finite number");
  }
  return doc;
}

}  // namespace tpsim::model
