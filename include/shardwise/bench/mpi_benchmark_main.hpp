// shardwise/bench/mpi_benchmark_main.hpp: Google Benchmark (1.7) under mpiexec, for shardwise's
// benchmark programs and for a user's own kernels. Needs Google Benchmark (-lbenchmark) and MPI;
// nothing else of shardwise includes it.
//
//   static void BM_allreduce(benchmark::State& state) {
//     shardwise::bench::time_collective(state, MPI_COMM_WORLD, [&] { /* the collective step */ });
//   }
//   BENCHMARK(BM_allreduce)->UseManualTime();
//   int main(int argc, char** argv) { return shardwise::bench::mpi_benchmark_main(argc, argv); }
//
// - Default timing deadlocks collectives (ranks pick different iteration counts), so every
//   collective benchmark uses manual time: barrier, time the step with MPI_Wtime, take the
//   slowest rank's time (MPI_Allreduce MAX); all ranks then see the same times and iterate
//   alike. Rates therefore divide by the slowest rank's time.
// - Only rank 0 reports; other ranks get a null reporter and lose their --benchmark_out* flags.
// - Benchmarks that run on one rank only (say, a virtual cluster inside rank 0) are registered
//   by the `register_local` callback after MPI_Init; they run after the collective ones while
//   the other ranks wait in a barrier that sleeps instead of spinning on a core.
// - benchmark::Shutdown() comes before MPI_Finalize().
#pragma once

#include <benchmark/benchmark.h>
#include <mpi.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

/// Google Benchmark under MPI: timing that every rank agrees on, and the main() of a benchmark program.
namespace shardwise::bench {

/// This process's rank in MPI_COMM_WORLD.
inline int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}
/// The number of ranks in MPI_COMM_WORLD.
inline int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

/// Times `step` on every rank of `comm` per iteration; the iteration time is the slowest rank's.
///
/// Every rank of `comm` runs the benchmark; register it with UseManualTime(), which makes
/// Google Benchmark use these times (and so pick the same iteration count on every rank).
template <typename Step>
void time_collective(benchmark::State& state, MPI_Comm comm, Step&& step) {
  for (auto _ : state) {
    MPI_Barrier(comm);
    const double start = MPI_Wtime();
    step();
    double elapsed = MPI_Wtime() - start;
    MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, comm);
    state.SetIterationTime(elapsed);
  }
}

/// A barrier that sleeps while it waits, leaving the core to ranks that are still working.
inline void idle_barrier(MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(comm, &request);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// Reports nothing (ranks other than 0).
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  /// Accepts the run without printing its context.
  bool ReportContext(const Context&) override { return true; }
  /// Drops the results.
  void ReportRuns(const std::vector<Run>&) override {}
};

/// main() of an MPI benchmark program: MPI_Init, the benchmarks (reported by rank 0), MPI_Finalize.
///
/// `register_local(rank)` may register benchmarks that run on that rank alone (after the
/// collective ones, with benchmark::RegisterBenchmark). Returns 0, the exit status.
template <typename RegisterLocal>
int mpi_benchmark_main(int argc, char** argv, RegisterLocal&& register_local) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i)
    if (rank == 0 || std::strncmp(argv[i], "--benchmark_out", 15) != 0) args.push_back(argv[i]);
  int count = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&count, args.data());
  register_local(rank);
  if (rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    NullReporter null;
    benchmark::RunSpecifiedBenchmarks(&null);
  }
  idle_barrier(MPI_COMM_WORLD);
  benchmark::Shutdown();
  MPI_Finalize();
  return 0;
}

/// main() of an MPI benchmark program whose benchmarks are all registered with BENCHMARK().
inline int mpi_benchmark_main(int argc, char** argv) {
  return mpi_benchmark_main(argc, argv, [](int) {});
}

}  // namespace shardwise::bench
