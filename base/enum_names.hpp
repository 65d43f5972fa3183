// One table of names per enum, and the lookups over it: a value's name, the value of a name, the valid names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpsim {

// What a table's row is for. kNamed: the value's name, printed, read and listed among the valid names.
// kPrinted: printed only (an outcome no input asks for by name, or a printed name the input spells otherwise).
// kRead: read and listed, never printed (the input's spelling where a kPrinted row gives the printed one).
// kAlias: read only (another spelling accepted where a name is looked up, never listed).
enum class NameUse : uint8_t { kNamed, kPrinted, kRead, kAlias };

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
  NameUse use = NameUse::kNamed;
};

inline constexpr bool is_printed(NameUse use) {
  return use == NameUse::kNamed || use == NameUse::kPrinted;
}
inline constexpr bool is_read(NameUse use) {
  return use != NameUse::kPrinted;
}
inline constexpr bool is_listed(NameUse use) {
  return use == NameUse::kNamed || use == NameUse::kRead;
}

// The printed name of `value`: its table's first printed row. Empty if the table has none (a table lists
// every value of its enum; tests/base/enum_names_test.cpp checks that each printed name reads back).
template <typename E, std::size_t N>
constexpr std::string_view name_of(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& row : table) {
    if (row.value == value && is_printed(row.use)) return row.name;
  }
  return {};
}

// The value whose name (or alias) is `name`; nullopt for a name the table does not read.
template <typename E, std::size_t N>
constexpr std::optional<E> value_named(const EnumName<E> (&table)[N], std::string_view name) {
  for (const EnumName<E>& row : table) {
    if (row.name == name && is_read(row.use)) return row.value;
  }
  return std::nullopt;
}

// The names an input may give, in the table's order: what a message's "valid: a, b, c" lists.
template <typename E, std::size_t N>
std::vector<std::string> names_of(const EnumName<E> (&table)[N]) {
  std::vector<std::string> names;
  for (const EnumName<E>& row : table) {
    if (is_listed(row.use)) names.emplace_back(row.name);
  }
  return names;
}

}  // namespace tpsim
