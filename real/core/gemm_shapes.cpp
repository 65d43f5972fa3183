// GEMM shapes from text: "MxNxK" on the command line or one per line of a shapes file.
#include "real/core/gemm_shapes.hpp"

#include <fstream>
#include <regex>
#include <sstream>

#include "base/input_error.hpp"

namespace tpsim::real {

GemmCase parse_gemm_shape(const std::string& text) {
  static const std::regex shape_pattern(R"(\s*(\d+)\s*[xX]\s*(\d+)\s*[xX]\s*(\d+)\s*)");
  std::smatch match;
  if (std::regex_match(text, match, shape_pattern)) {
    try {
      GemmCase c{std::stoll(match[1]), std::stoll(match[2]), std::stoll(match[3]), 1, "--shape " + text};
      if (c.m > 0 && c.n > 0 && c.k > 0) return c;
    } catch (const std::out_of_range&) {
    }
  }
  throw InputError("--shape '" + text + "': expected MxNxK with positive whole numbers, e.g. 4096x8192x1024");
}

std::vector<GemmCase> read_shapes_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open the shapes file");
  std::vector<GemmCase> out;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::istringstream words(line);
    std::string first;
    if (!(words >> first) || first[0] == '#') continue;
    try {
      GemmCase c = parse_gemm_shape(first);
      c.example = path + ":" + std::to_string(number);
      out.push_back(c);
    } catch (const InputError&) {
      throw InputError(path + ":" + std::to_string(number) + ":1: '" + first +
                       "' is not a shape; each line starts with MxNxK (lines starting with # are comments)");
    }
  }
  if (out.empty()) throw InputError(path + ": no shapes (expected lines starting with MxNxK)");
  return out;
}

std::string shapes_listing(const std::vector<GemmCase>& shapes) {
  std::string out = "# MxNxK  per-rank count  example op\n";
  for (const GemmCase& c : shapes) {
    out += std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + "  " +
           std::to_string(c.per_rank_count) + "  " + c.example + "\n";
  }
  return out;
}

}  // namespace tpsim::real
