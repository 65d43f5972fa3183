// Sizes written by people ("1048576", "64KiB", "16MiB", "2GiB", "1.5GB": KB, MB, GB = 1e3, 1e6, 1e9),
// and numbers written for people.
#pragma once

#include <string>

#include "base/limits.hpp"

namespace tpsim::model {

// Bytes of a size text; throws InputError (without a location: callers add it) naming what is valid.
double parse_bytes(const std::string& text);

// `value` formatted with a printf pattern for one double ("%.3f"): for tables and reports.
std::string format_number(const char* pattern, double value);

// A size for people, in powers of two with three significant digits and never an exponent: "128 MiB",
// "18.6 GiB", "1000 MiB", "3 B". The one formatter of sizes in reports.
std::string human_bytes(double bytes);

}  // namespace tpsim::model
