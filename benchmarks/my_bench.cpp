// README.md's "Benchmark your own kernel" program, as written there (tests/check_readme_example.py
// keeps the two in step); built with the companion library as the README's command builds it, and
// run under mpiexec -n 2 as a test (benchmarks/meson.build).
#include <shardwise/bench/mpi_benchmark_main.hpp>
#include <shardwise/shardwise.hpp>
namespace sw = shardwise;

using Grid = sw::Mesh<sw::Axis<"x", 2>>;                                // 2 ranks
using Rows = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;       // rows over x
using Whole = sw::TensorSharding<sw::Replicated, sw::Replicated>;

// The kernel measured: C = A B with A's rows split and B on every rank (no communication).
static void BM_my_kernel(benchmark::State& state) {
  sw::ProcessGroupMesh<Grid> groups(MPI_COMM_WORLD);  // after MPI_Init: mpi_benchmark_main called it
  const auto n = state.range(0);
  const Eigen::MatrixXd a = Eigen::MatrixXd::Constant(n, n, 0.5), b = Eigen::MatrixXd::Identity(n, n);
  auto sa = sw::ShardedMatrix<double, Grid, Rows>::distribute(groups, a);
  auto sb = sw::ShardedMatrix<double, Grid, Whole>::distribute(groups, b);
  sw::bench::time_collective(state, MPI_COMM_WORLD, [&] {
    auto c = sw::matmul(sa, sb);
    benchmark::DoNotOptimize(c.local().data());
  });
  state.counters["GFLOP"] = benchmark::Counter(2e-9 * double(n * n * n), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_my_kernel)->Arg(512)->Arg(1024)->UseManualTime()->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) { return sw::bench::mpi_benchmark_main(argc, argv); }
