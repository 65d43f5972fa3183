// JSON text parsed with every error located: a syntax error at its line and column, and a number past the range of
// a double (which nlohmann reports without a position) at the key whose value it is.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tpsim::model {

// The document of `text`; InputError "<origin>:line:col: ..." when it is not valid JSON.
nlohmann::json parse_json_located(std::string_view text, const std::string& origin);

}  // namespace tpsim::model
