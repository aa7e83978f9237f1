// ScaLAPACK pdgemm alone (pdgemm.hpp), on the shapes of SHARDWISE_BENCH_SHAPES (bench_shapes.hpp).
// matmul_bench registers the same benchmarks next to shardwise's; this program is for the peer
// on its own (other rank counts, block sizes), and for the runner while matmul_bench is absent.
//
//   SHARDWISE_BENCH_SHAPES="2048" mpiexec -n 2 --bind-to core build/benchmarks/pdgemm_bench
//   (with the OMPI_* variables of TOOLCHAIN-NOTES and OPENBLAS_NUM_THREADS=1)
#include "bench_shapes.hpp"
#include <shardwise/bench/mpi_benchmark_main.hpp>
#include "pdgemm.hpp"

int main(int argc, char** argv) {
  return shardwise::bench::mpi_benchmark_main(argc, argv, [](int) {
    shardwise::bench::register_pdgemm_benchmarks(shardwise::bench::shapes_from_environment());
  });
}
