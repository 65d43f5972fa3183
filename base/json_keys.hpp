// Checks on JSON texts that nlohmann's parser lets through: a key given twice in one object (it keeps
// the last silently), located in the text.
#pragma once

#include <string>
#include <string_view>

namespace tpsim::model {

// A 0-based line and column in a text (-1 when unknown).
struct TextPosition {
  int line0 = -1;
  int col0 = -1;
};
TextPosition position_of_byte(std::string_view text, size_t byte);

// Throws InputError when an object of the JSON text `text` (parsed already, so syntactically valid)
// gives a key twice: "<origin>[:line:col]: key "k" is given twice in one JSON object; give each key
// once". `locate`: add the line and column of the second occurrence (off for one-line records whose
// origin names the line already).
void refuse_duplicate_keys(std::string_view text, const std::string& origin, bool locate = true);

}  // namespace tpsim::model
