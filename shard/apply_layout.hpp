// Applying a layout to a checkpoint: permute each layer's KV groups (q rows with their query heads, k
// and v rows, biases, o_proj columns) and FFN neurons (gate and up rows, down_proj columns) so that
// device d's contiguous TP shard holds what the layout gives it. The dense model computes the same
// function; apply checks that its logits do not change.
#pragma once

#include <string>

#include "shard/checkpoint.hpp"
#include "shard/layout.hpp"

namespace tpsim::shard {

// Reads the "layout" of a `tpsim shard layout` JSON file and checks it against the checkpoint: its
// layer, group and neuron counts, every group and neuron on exactly one device, balanced devices.
Layout read_layout_json(const std::string& path, const Checkpoint& checkpoint);
// The same from the file's text, checked against `arch`; `path` names it in errors.
Layout parse_layout_json(const std::string& text, const std::string& path, const model::ArchSpec& arch);

Checkpoint permuted(const Checkpoint& checkpoint, const Layout& layout);

// The largest |logit difference| between two checkpoints over a probe sequence, relative to the
// largest |logit| of the first.
double logit_difference(const Checkpoint& a, const Checkpoint& b, int tokens = 16);

}  // namespace tpsim::shard
