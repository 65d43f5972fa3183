// Exposed communication and overlap from hand-made timelines.
#include <catch2/catch.hpp>

#include "model/graph/program_builder.hpp"
#include "sim/report/metrics.hpp"

using namespace tpsim;

TEST_CASE("exposed communication is the communication time the compute stream is idle") {
  model::LayerGraph graph(1);
  model::ProgramBuilder b(graph, 2.0);
  const model::OpId k1 = b.memory("k1", 1, 1, 0, "", {});
  const model::OpId c1 = b.exchange("c1", 0, 0, 1, model::Transport::kCopyEngine, "", {});
  const model::OpId k2 = b.memory("k2", 1, 1, 0, "", {});
  sim::Timeline timeline;
  timeline.ranks = 1;
  // compute: [0, 4] and [6, 8]; comm: [3, 7] -> exposed = [4, 6] = 2 of 4 communication seconds.
  timeline.spans = {{k1, 0, 0.0, 4.0}, {c1, 0, 3.0, 7.0}, {k2, 0, 6.0, 8.0}};
  timeline.makespan_s = 8.0;
  const sim::Metrics m = sim::compute_metrics(graph, timeline);
  CHECK(m.time_s == 8.0);
  CHECK(m.compute_s == 6.0);
  CHECK(m.comm_s == 4.0);
  CHECK(m.exposed_comm_s == 2.0);
  CHECK(m.overlap == 0.5);
  CHECK(m.idle_s == 0.0);
}
