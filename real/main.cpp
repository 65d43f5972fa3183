// tpsim-real: measures GEMMs, collectives, copies and overlapped pipelines on this machine's GPUs and
// writes them in the measurement schema calibrate/ reads (see --help of each subcommand).
#include <iostream>

#include "base/input_error.hpp"
#include "real/core/gemm_shapes.hpp"
#include "real/core/options.hpp"
#include "real/cuda/benches.hpp"
#include "real/cuda/cuda_check.hpp"

#ifdef TPSIM_WITH_MPI
#include <mpi.h>
#endif

namespace {

int dispatch(const tpsim::real::RealOptions& o, const std::vector<std::string>& arguments) {
  using namespace tpsim::real;
  if (o.command == "gemm") return run_gemm_bench(o, arguments);
  if (o.command == "collective") return run_collective_bench(o, arguments);
  if (o.command == "memcpy") return run_memcpy_bench(o, arguments);
  if (o.command == "launch") return run_launch_bench(o, arguments);
  if (o.command == "overlap") return run_overlap_bench(o, arguments);
  if (o.command == "async-tp") return run_async_tp_bench(o, arguments);
  return run_dtp_bench(o, arguments);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> arguments(argv, argv + argc);
  tpsim::real::RealOptions options;
  try {
    options = tpsim::real::parse_options(arguments);
  } catch (const tpsim::real::CommandLineExit& exit) {
    return exit.code();
  } catch (const tpsim::InputError& error) {
    std::cerr << "tpsim-real: error: " << error.what() << "\n";
    return 2;
  }
  if (options.command == "shapes") {
    std::cout << tpsim::real::shapes_listing(options.shapes);
    return 0;
  }
#ifdef TPSIM_WITH_MPI
  if (options.launch.mpi) MPI_Init(&argc, &argv);
#endif
  int status = 0;
  try {
    status = dispatch(options, arguments);
  } catch (const tpsim::InputError& error) {
    std::cerr << "tpsim-real: error: " << error.what() << "\n";
    status = 2;
  } catch (const tpsim::real::GpuError& error) {
    std::cerr << "tpsim-real: GPU error: " << error.what() << "\n";
    status = 3;
  } catch (const std::exception& error) {
    std::cerr << "tpsim-real: internal error: " << error.what() << "\n";
    status = 4;
  }
#ifdef TPSIM_WITH_MPI
  if (options.launch.mpi) MPI_Finalize();
#endif
  return status;
}
