// The profile's sections of their own shape (gemm, memory, attention, deepep, linear_attention, nccl, copy_engine,
// power, launch) as tables of keys, which the profile reader and writer both walk; and a profile as written, the plain
// value the fit hands the writer (its values, the text each section's sources say and its fits' errors).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/cost/profile.hpp"

namespace tpsim::sim {

struct ProfileSection;

// One key of a profile section, in the order a written profile gives them. A value key reads one number into the
// profile (and is written from it); a text key is a source the written profile states; a fit key is a fit's record;
// a nested key is a section inside the section; a part is read and written by the reader's and writer's own code
// (attention.kernel and attention.kernels).
struct ProfileField {
  enum class Kind { kValue, kText, kFit, kNested, kPart };
  // How a value reads: a fraction in [kMinEfficiency, 1]; a positive count up to `high`; a number in [low, high].
  enum class Reads { kFraction, kCount, kRange };
  const char* key = nullptr;
  Kind kind = Kind::kValue;
  Reads reads = Reads::kRange;
  double low = 0;
  double high = 0;
  bool microseconds = false;  // written in us, held in seconds
  // Its value in the profile (nullopt where the profile, or the optional part it sits in, has none), and setting it
  // (creating the optional parts it sits in).
  std::optional<double> (*get)(const CostProfile&) = nullptr;
  void (*set)(CostProfile&, double) = nullptr;
  // A profile without a base gives it (a required section's key); where an optional section is absent from the
  // base, every required key of it is given.
  bool required = false;
  const char* source_key = nullptr;  // the text key that says where it comes from, when not `<key>_source`
  double written_above = -1e300;     // the writer writes it only above this value
  const ProfileSection* nested = nullptr;
};

struct ProfileSection {
  const char* key;
  std::vector<ProfileField> fields;
  // Whether the profile has the section (nullptr: every profile has it; else an optional section).
  bool (*present)(const CostProfile&) = nullptr;
  bool records_sources = true;     // the reader keeps where each value comes from (deepep.low_latency does not)
  bool shares_parent_fit = false;  // its values are fitted by the enclosing section's fit (nccl.small_messages)
};

// The sections of their own shape, in the order a written profile gives them; the optional transport sections
// (transport_sections()) come between copy_engine and power.
const std::vector<ProfileSection>& profile_sections();
// The sections before the transport sections (gemm ... copy_engine), the rest after them.
inline constexpr size_t kSectionsBeforeTransports = 7;

// attention's forward_causal_tokens or backward_causal_tokens above this is a typo (public kernels give 300-800,
// docs/model.md).
inline constexpr double kMaxCausalTokens = 1 << 20;

// A fit's record as written: a note ("not fitted: no measurements") or its fitted values, its point count, and
// (unless `errors_listed` is false) its maximum, held-out and per-point errors.
struct FitRecord {
  std::string note;
  std::vector<std::string> values;
  size_t points = 0;
  bool errors_listed = true;
  double max_abs_error_pct = 0;
  double held_out_max_abs_error_pct = -1;                    // -1: none
  std::vector<std::pair<std::string, double>> point_errors;  // origin (file:line), error in percent
};

// A profile as `tpsim calibrate` writes it: the values, and per section the text a fit attaches.
struct WrittenProfile {
  CostProfile profile;
  std::vector<std::string> comments;  // the header's comment lines
  std::string gpu;
  std::string base;  // the `base:` key (empty: none)
  // "gemm.tile_source" -> the text, "nccl.small_messages.source" -> ...: a text key is written where present.
  std::map<std::string, std::string> texts;
  // "gemm.fit", "power.curve_fit", "nccl.small_messages.fit" -> the fit: written where present.
  std::map<std::string, FitRecord> fits;
  // A comment line written after the named section (an optional transport section, present or not).
  std::map<std::string, std::string> notes_after;
};

}  // namespace tpsim::sim
