// Reading a traced step's rows and comparing each with the simulated ops the scenario names for it.
#include "calibrate/trace/traced_rows.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "base/input_error.hpp"
#include "calibrate/sources/csv_table.hpp"

namespace tpsim::calibrate {

namespace {

const char kHeader[] = "variant,order,kernel_or_block,duration_ms,kind";

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// "L12.attn.core" -> "attn.core"; names without a layer prefix stay whole.
std::string without_layer(const std::string& name) {
  if (name.size() < 3 || name[0] != 'L' || !std::isdigit(static_cast<unsigned char>(name[1]))) return name;
  size_t i = 1;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
  return i < name.size() && name[i] == '.' ? name.substr(i + 1) : name;
}

std::string layer_of(const std::string& name) {
  const std::string rest = without_layer(name);
  return rest.size() == name.size() ? "" : name.substr(0, name.size() - rest.size());
}

std::string row_name(const RowOps& o) {
  return o.variant + " row " + std::to_string(o.order);
}

double summed_ops_s(const sim::VariantRun& variant, const RowOps& o) {
  std::map<std::string, double> by_name;
  for (const std::string& n : o.ops) by_name[n] = -1;
  for (const sim::PassTrace& pass : variant.passes) {
    for (const sim::OpSpan& span : pass.timeline.spans) {
      if (span.rank != 0) continue;
      const auto it = by_name.find(without_layer(pass.graph.op(span.op).name));
      if (it == by_name.end()) continue;
      it->second = std::max(it->second, 0.0) + (span.end_s - span.start_s);
    }
  }
  double total = 0;
  for (const auto& [name, seconds] : by_name) {
    if (seconds < 0) {
      throw InputError(row_name(o) + ": variant " + variant.variant.name + " ran no op named '" + name +
                       "' on GPU 0 (names as `tpsim run --trace` shows them, without the layer's L<i>.)");
    }
    total += seconds;
  }
  return total;
}

double span_s(const sim::VariantRun& variant, const RowOps& o) {
  // Per pass and layer: the first op's earliest start to the last op's latest end.
  std::map<std::pair<size_t, std::string>, std::pair<double, double>> spans;
  for (size_t p = 0; p < variant.passes.size(); ++p) {
    const sim::PassTrace& pass = variant.passes[p];
    for (const sim::OpSpan& span : pass.timeline.spans) {
      if (span.rank != 0) continue;
      const std::string& full = pass.graph.op(span.op).name;
      const std::string name = without_layer(full);
      if (name != o.span_first && name != o.span_last) continue;
      auto [it, added] = spans.try_emplace({p, layer_of(full)}, NAN, NAN);
      if (name == o.span_first)
        it->second.first = std::isnan(it->second.first) ? span.start_s : std::min(it->second.first, span.start_s);
      if (name == o.span_last)
        it->second.second = std::isnan(it->second.second) ? span.end_s : std::max(it->second.second, span.end_s);
    }
  }
  double total = 0;
  bool any = false;
  for (const auto& [key, se] : spans) {
    if (std::isnan(se.first) || std::isnan(se.second)) continue;
    total += se.second - se.first;
    any = true;
  }
  if (!any) {
    throw InputError(row_name(o) + ": variant " + variant.variant.name + " ran no op named '" + o.span_first +
                     "' followed by one named '" + o.span_last + "' on GPU 0 in the same layer");
  }
  return total;
}

}  // namespace

const std::vector<std::string>& traced_row_kinds() {
  static const std::vector<std::string> kKinds = {"collective", "layout_copy", "gemm", "memory", "attention",
                                                  "pipeline",   "gap",         "rate", "span"};
  return kKinds;
}

bool is_traced_rows_csv(const std::string& text) {
  return text.rfind(kHeader, 0) == 0;
}

TracedRows read_traced_rows(const std::string& text, const std::string& path) {
  if (!is_traced_rows_csv(text)) {
    throw InputError(path + ":1: a traced step's rows start with the header '" + std::string(kHeader) + "'");
  }
  const CsvTable table = CsvTable::parse(text, path);
  TracedRows out{path, {}};
  for (size_t r = 0; r < table.rows(); ++r) {
    const std::string where = path + ":" + std::to_string(r + 2);
    TracedRow row;
    row.line = r + 2;
    row.variant = table.at(r, "variant");
    if (row.variant.empty())
      throw InputError(where + ": empty variant; name the scenario variant the row was traced in");
    row.label = table.at(r, "kernel_or_block");
    row.kind = table.at(r, "kind");
    const std::vector<std::string>& kinds = traced_row_kinds();
    if (std::find(kinds.begin(), kinds.end(), row.kind) == kinds.end()) {
      throw InputError(where + ": kind '" + row.kind + "' is not one of " + joined(kinds));
    }
    const double ms = table.number(r, "duration_ms");
    if (!std::isfinite(ms) || ms < 0) {
      throw InputError(where + ": duration_ms must be a finite number of milliseconds >= 0, not '" +
                       table.at(r, "duration_ms") + "'");
    }
    row.duration_s = ms * 1e-3;
    if (!table.at(r, "order").empty()) row.order = table.integer(r, "order");
    out.rows.push_back(row);
  }
  return out;
}

double predicted_row_s(const sim::VariantRun& variant, const RowOps& ops) {
  return ops.ops.empty() ? span_s(variant, ops) : summed_ops_s(variant, ops);
}

TracedVariantComparison compare_traced_rows(const TracedRows& rows, const sim::VariantRun& variant,
                                            const std::vector<RowOps>& mapping) {
  TracedVariantComparison out;
  double summed = 0;
  for (const TracedRow& row : rows.rows) {
    if (row.variant != variant.variant.name) continue;
    if (row.kind == "span") {
      out.measured_step_s = row.duration_s;
      out.step_from_span = true;
      continue;
    }
    if (row.kind != "rate") summed += row.duration_s;
    RowComparison c{row, std::nullopt};
    for (const RowOps& o : mapping) {
      if (row.order > 0 && o.variant == row.variant && o.order == row.order)
        c.predicted_s = predicted_row_s(variant, o);
    }
    out.rows.push_back(c);
  }
  if (!out.step_from_span) out.measured_step_s = summed;
  out.predicted_step_s = variant.metrics.time_s;
  return out;
}

}  // namespace tpsim::calibrate
