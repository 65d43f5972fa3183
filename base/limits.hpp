// The documented limits on inputs (docs/reliability.md): past each, tpsim refuses the input with a
// message that names the limit and what to do instead, rather than running out of memory or time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tpsim::model {

// The largest tensor or message size tpsim simulates: past it, simulated times of hours to years lose
// SimGrid's precision (a 1e21 B ring all-reduce ran 18x too fast), far beyond any tensor a TP group exchanges.
inline constexpr double kMaxSimulatedBytes = 1024.0 * 1024 * 1024 * 1024 * 1024;  // 1 PiB

// Input files are read whole: a scenario or profile (YAML), a JSON or text input (measurements,
// nccl-tests logs, config.json, layouts, token files), one safetensors file.
inline constexpr int64_t kMaxYamlFileBytes = int64_t{16} << 20;         // 16 MiB
inline constexpr int64_t kMaxTextFileBytes = int64_t{1} << 30;          // 1 GiB
inline constexpr int64_t kMaxSafetensorsFileBytes = int64_t{64} << 30;  // 64 GiB
// Nodes one YAML document may expand to (aliases repeat what they name), counting scalar bytes too.
inline constexpr int64_t kMaxYamlWork = int64_t{64} << 20;

// GPUs in one simulated group (a scenario's tp, predict collective --ranks) and nodes of a fabric.
inline constexpr int kMaxGroupRanks = 4096;
inline constexpr int kMaxNodes = 4096;
// Pipeline stages of a job (parallelism.pp): at most one layer each.
inline constexpr int kMaxPipelineStages = 1024;
// Data-parallel replicas of a job (parallelism.dp): 16,384 GPUs at tp 8 are 2,048 of them.
inline constexpr int kMaxDataParallel = 1 << 16;
// Decoder layers of a model (Llama-3.1-405B has 126).
inline constexpr int kMaxLayers = 1024;
// Micro-batches of one training step: each is simulated, so the step's program grows with them.
inline constexpr int64_t kMaxMicrobatches = 1024;
// A link or NIC (one direction) and a fat tree's oversubscription.
inline constexpr double kMaxLinkGBps = 1e5;
// A board power in watts (GB200's is 1200 W): beyond this it is a typo.
inline constexpr double kMaxPowerW = 1e4;
inline constexpr double kMaxOversubscription = 1e3;
// Chunks of an async-TP pipeline: past a few per rank a chunk's GEMM is a fraction of a wave.
inline constexpr int kMaxChunks = 1024;
// Points of a sweep (`tpsim sweep` builds each on demand), and of a sweep `tpsim run` holds in memory.
inline constexpr size_t kMaxSweepPoints = 1'000'000;
inline constexpr size_t kMaxRunPoints = 10'000;
// Random baselines plus restarts of one `tpsim shard layout`.
inline constexpr int kMaxLayoutSearches = 10'000;
// Any one latency or overhead of a calibration profile (a kernel launch or a collective step of a
// second is not a GPU); measured times in measurement files.
inline constexpr double kMaxProfileSeconds = 1.0;
// The smallest efficiency (a fraction of a peak rate) a profile may give: below it times leave any
// physical range (and near 0 they overflow the clock).
inline constexpr double kMinEfficiency = 1e-4;
inline constexpr double kMaxMeasuredSeconds = 3600.0;

// Work of one simulation (sim/engine/work_estimate.hpp), estimated before it starts: past either limit it is refused,
// with the estimate and what would run instead. Its activities (kernels, waits, flows) cost time, the more the more
// GPUs run at once; each op on each simulated GPU, and the platform's routing table over the GPUs, cost memory.
inline constexpr double kMaxSimulationSeconds = 300;
inline constexpr double kMaxSimulationBytes = 8.0 * (int64_t{1} << 30);  // 8 GiB
// A collective whose step-by-step run would start more flows than this (a ring all-reduce over more than 224 GPUs)
// runs in closed form: its time on an idle fabric, its bytes through each GPU's link beside the kernels.
inline constexpr int64_t kMaxSteppedFlows = 100'000;

}  // namespace tpsim::model
