// overhead_bench: the per-call cost of the library. An 8 x 8 matmul per policy, next to
// the raw MPI collectives its schedule performs (no GEMM), on the ranks it is started with
// (2 in benchmarks/run). Each timed iteration is a batch of calls; the reported time is per
// call. overhead/shardwise_unchecked/... is the same call at CheckLevel::local: without the
// cross-rank agreement on the shapes (one small all-reduce). Unsharded communicates nothing; its baseline is the
// same 8 x 8 GEMM written by hand.
#include <mpi.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

#include <shardwise/shardwise.hpp>

#include "bench_layouts.hpp"
#include <shardwise/bench/mpi_benchmark_main.hpp>

namespace sw = shardwise;
using namespace shardwise::bench;  // Line, Grid, Rep, RowsSplit, ColsSplit, Block

namespace {

constexpr long n = 8;            // m = n = k
constexpr int calls_per_batch = 1000;
constexpr int batches = 200;

using shardwise::bench::world_size;

/// Times batches of `call`; the iteration time is the slowest rank's batch time per call.
void time_per_call(benchmark::State& state, const std::function<void()>& call) {
  call();  // warm: groups and scratch
  for (auto _ : state) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < calls_per_batch; ++i) call();
    double elapsed = (MPI_Wtime() - start) / calls_per_batch;
    MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    state.SetIterationTime(elapsed);
  }
}

template <typename M>
sw::ProcessGroupMesh<M>& groups_for(const M& mesh) {
  static sw::ProcessGroupMesh<M> groups(MPI_COMM_WORLD, mesh);
  return groups;
}

template <typename M, typename ShA, typename ShB, typename ShC, typename V = sw::variant::Standard>
void library(benchmark::State& state, M mesh, bool checked) {
  auto& groups = groups_for(mesh);
  using Plan = sw::matmul_plan<M, ShA, ShB, ShC, V>;
  sw::ShardedMatrix<double, M, ShA> a(groups, n, n);
  sw::ShardedMatrix<double, M, ShB> b(groups, n, n);
  sw::ShardedMatrix<double, M, typename Plan::output_sharding> c(groups, n, n);
  a.local().setRandom();
  b.local().setRandom();
  sw::check_level() = checked ? sw::CheckLevel::cross_rank : sw::CheckLevel::local;
  time_per_call(state, [&] { sw::matmul_into(c, a, b, V{}); });
  sw::check_level() = sw::CheckLevel::cross_rank;
}

/// The raw collectives of each schedule on 8 x 8 doubles (P ranks, 1-D or P x 1).
struct Raw {
  int p = world_size(), r = 0;
  std::vector<double> in = std::vector<double>(n * n, 1.0), out = std::vector<double>(n * n, 0.0);
  Raw() { MPI_Comm_rank(MPI_COMM_WORLD, &r); }
  int block() const { return static_cast<int>(n * n / p); }

  void gemm() {  // Unsharded communicates nothing: its baseline is the 8 x 8 GEMM by hand
    Eigen::Map<Eigen::Matrix<double, n, n>>(out.data()).noalias() =
        Eigen::Map<const Eigen::Matrix<double, n, n>>(in.data()) * Eigen::Map<const Eigen::Matrix<double, n, n>>(in.data());
  }
  void all_gather() { MPI_Allgather(in.data(), block(), MPI_DOUBLE, out.data(), block(), MPI_DOUBLE, MPI_COMM_WORLD); }
  void all_reduce() { MPI_Allreduce(in.data(), out.data(), static_cast<int>(n * n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }
  void reduce_scatter() { MPI_Reduce_scatter_block(in.data(), out.data(), block(), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }
  void ring() {  // P - 1 steps of a nonblocking sendrecv, as the ring variants do
    for (int step = 0; step + 1 < p; ++step) {
      MPI_Request requests[2];
      MPI_Irecv(out.data(), block(), MPI_DOUBLE, (r + p - 1) % p, 3, MPI_COMM_WORLD, &requests[0]);
      MPI_Isend(in.data(), block(), MPI_DOUBLE, (r + 1) % p, 3, MPI_COMM_WORLD, &requests[1]);
      MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    }
  }
  void summa() {  // one broadcast of a B panel per owner (k = 8 < the panel width)
    for (int owner = 0; owner < p; ++owner) MPI_Bcast(out.data(), block(), MPI_DOUBLE, owner, MPI_COMM_WORLD);
  }
};

void add(const std::string& name, std::function<void(benchmark::State&)> f) {
  benchmark::RegisterBenchmark(name.c_str(), [f](benchmark::State& s) { f(s); })
      ->UseManualTime()
      ->Iterations(batches)  // fixed: per-call times would mislead the iteration estimate
      ->Unit(benchmark::kMicrosecond);
}

template <typename M, typename ShA, typename ShB, typename ShC, typename V = sw::variant::Standard>
void add_policy(const std::string& label, M mesh, void (Raw::*raw)()) {
  add("overhead/shardwise/" + label, [mesh](benchmark::State& s) { library<M, ShA, ShB, ShC, V>(s, mesh, true); });
  add("overhead/shardwise_unchecked/" + label,
      [mesh](benchmark::State& s) { library<M, ShA, ShB, ShC, V>(s, mesh, false); });
  add("overhead/raw/" + label, [raw](benchmark::State& s) {
    Raw collectives;
    time_per_call(s, [&] { (collectives.*raw)(); });
  });
}

void register_all() {
  const int p = world_size();
  const Line line{p};
  const Grid grid{p, 1};
  add_policy<Line, Rep, Rep, sw::NaturalOutput>("Unsharded", line, &Raw::gemm);
  add_policy<Line, ColsSplit, RowsSplit, sw::NaturalOutput>("MatchedInner/all_reduce", line, &Raw::all_reduce);
  add_policy<Line, ColsSplit, RowsSplit, RowsSplit>("MatchedInner/reduce_scatter", line, &Raw::reduce_scatter);
  add_policy<Line, ColsSplit, RowsSplit, RowsSplit, sw::variant::Ring>("MatchedInner/reduce_scatter_ring", line, &Raw::ring);
  add_policy<Line, ColsSplit, Rep, sw::NaturalOutput>("UnmatchedInner", line, &Raw::all_gather);
  add_policy<Line, RowsSplit, RowsSplit, sw::NaturalOutput>("Outer", line, &Raw::all_gather);
  add_policy<Line, RowsSplit, RowsSplit, sw::NaturalOutput, sw::variant::Ring>("Outer/ring", line, &Raw::ring);
  add_policy<Grid, Block, Block, sw::NaturalOutput>("Full", grid, &Raw::all_gather);
  add_policy<Grid, Block, Block, sw::NaturalOutput, sw::variant::Summa<256>>("Full/summa", grid, &Raw::summa);
}

}  // namespace

int main(int argc, char** argv) {
  return shardwise::bench::mpi_benchmark_main(argc, argv, [](int) { register_all(); });
}
