// cg_bench: one iteration of conjugate gradients on a dense SPD system (examples/cg.cpp's),
// A split by rows over every rank, written with shardwise (sw::matvec, sw::dot, sw::axpy,
// sw::scale, a reshard of p) next to the same iteration written by hand with MPI and BLAS
// (MPI_Allgather of p, dgemv, ddot + MPI_Allreduce, daxpy, dscal). Both in one run, so their
// ratio is free of the machine's noise:
//
//   mpiexec -n 2 --bind-to none build/benchmarks/cg_bench [--benchmark_repetitions=5]
//
// cg/shardwise_unchecked is the library at CheckLevel::local (no cross-rank agreement on the
// extents: one small all-reduce per call fewer). SHARDWISE_BENCH_CG_N sets n (default 4096).
// Each solve restarts from x = 0 when the residual has shrunk by 1e10, the same in both.
#include <mpi.h>

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <shardwise/tensor.hpp>

#include <shardwise/bench/mpi_benchmark_main.hpp>

namespace sw = shardwise;

namespace {

using Line = sw::Mesh<sw::Axis<"x", sw::dynamic_extent>>;
using Rows = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;
using Vector = sw::TensorSharding<sw::Split<"x">>;
using Whole = sw::TensorSharding<sw::Replicated>;

long problem_size() {
  const char* given = std::getenv("SHARDWISE_BENCH_CG_N");
  return given != nullptr && std::atol(given) > 0 ? std::atol(given) : 4096;
}

double a_entry(long i, long j, long n) {
  if (i == j) return 3.0 + 8.0 * static_cast<double>(i) / static_cast<double>(n);
  const double d = static_cast<double>(i - j);
  return 1.0 / (1.0 + d * d);
}
double b_entry(long i) { return std::sin(0.1 * static_cast<double>(i) + 1.0); }

constexpr double restart_ratio = 1e-20;  // on r.r against b.b: restart from x = 0

void shardwise_iteration(benchmark::State& state, bool checked) {
  const long n = problem_size();
  static sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{sw::bench::world_size()});
  using Matrix = sw::ShardedTensor<double, Line, Rows>;
  using Column = sw::ShardedTensor<double, Line, Vector>;
  Matrix a(groups, {n, n});
  Column b(groups, {n});
  const long row0 = sw::detail::block_begin(n, groups.mesh().size(), groups.rank());
  for (long i = 0; i < a.local().dimension(0); ++i) {
    b.local()(i) = b_entry(row0 + i);
    for (long j = 0; j < n; ++j) a.local()(i, j) = a_entry(row0 + i, j, n);
  }
  sw::check_level() = checked ? sw::CheckLevel::cross_rank : sw::CheckLevel::local;
  const double bb = sw::dot(b, b);
  Column x(groups, {n});
  Column r = b, p = b;
  double rr = bb;
  const auto iteration = [&] {
    const auto q = sw::matvec(a, sw::reshard<Whole>(p));
    const double alpha = rr / sw::dot(p, q);
    sw::axpy(alpha, p, x);
    sw::axpy(-alpha, q, r);
    const double rr_next = sw::dot(r, r);
    if (rr_next < restart_ratio * bb) {  // converged: start again (rare, and the same in both)
      sw::scale(0.0, x);
      r = b;
      p = b;
      rr = bb;
      return;
    }
    sw::scale(rr_next / rr, p);
    sw::axpy(1.0, r, p);
    rr = rr_next;
  };
  iteration();  // warm: groups and scratch
  sw::bench::time_collective(state, MPI_COMM_WORLD, iteration);
  sw::check_level() = sw::CheckLevel::cross_rank;
  state.counters["n"] = static_cast<double>(n);
}

/// The same iteration as a person writes it with MPI and BLAS, on the same row blocks.
void handwritten_iteration(benchmark::State& state) {
  const long n = problem_size();
  const int ranks = sw::bench::world_size(), me = sw::bench::world_rank();
  std::vector<int> counts(static_cast<std::size_t>(ranks)), offsets(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    counts[static_cast<std::size_t>(r)] = static_cast<int>(sw::detail::block_size(n, ranks, r));
    offsets[static_cast<std::size_t>(r)] = static_cast<int>(sw::detail::block_begin(n, ranks, r));
  }
  const int rows = counts[static_cast<std::size_t>(me)];
  const long row0 = offsets[static_cast<std::size_t>(me)];
  const bool equal_blocks = n % ranks == 0;
  std::vector<double> a(static_cast<std::size_t>(rows * n)), b(static_cast<std::size_t>(rows)),
      x(static_cast<std::size_t>(rows), 0.0), p_all(static_cast<std::size_t>(n)), q(static_cast<std::size_t>(rows));
  for (long i = 0; i < rows; ++i) {
    b[static_cast<std::size_t>(i)] = b_entry(row0 + i);
    for (long j = 0; j < n; ++j) a[static_cast<std::size_t>(i * n + j)] = a_entry(row0 + i, j, n);
  }
  const auto dot = [&](const std::vector<double>& u, const std::vector<double>& v) {
    double s = cblas_ddot(rows, u.data(), 1, v.data(), 1);
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return s;
  };
  const double bb = dot(b, b);
  std::vector<double> r = b, p = b;
  double rr = bb;
  const auto iteration = [&] {
    if (equal_blocks)
      MPI_Allgather(p.data(), rows, MPI_DOUBLE, p_all.data(), rows, MPI_DOUBLE, MPI_COMM_WORLD);
    else
      MPI_Allgatherv(p.data(), rows, MPI_DOUBLE, p_all.data(), counts.data(), offsets.data(), MPI_DOUBLE,
                     MPI_COMM_WORLD);
    cblas_dgemv(CblasRowMajor, CblasNoTrans, rows, static_cast<int>(n), 1.0, a.data(), static_cast<int>(n),
                p_all.data(), 1, 0.0, q.data(), 1);
    const double alpha = rr / dot(p, q);
    cblas_daxpy(rows, alpha, p.data(), 1, x.data(), 1);
    cblas_daxpy(rows, -alpha, q.data(), 1, r.data(), 1);
    const double rr_next = dot(r, r);
    if (rr_next < restart_ratio * bb) {
      std::fill(x.begin(), x.end(), 0.0);
      r = b;
      p = b;
      rr = bb;
      return;
    }
    cblas_dscal(rows, rr_next / rr, p.data(), 1);
    cblas_daxpy(rows, 1.0, r.data(), 1, p.data(), 1);
    rr = rr_next;
  };
  iteration();
  sw::bench::time_collective(state, MPI_COMM_WORLD, iteration);
  state.counters["n"] = static_cast<double>(n);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("cg/handwritten_mpi_blas", handwritten_iteration)->UseManualTime();
  benchmark::RegisterBenchmark("cg/shardwise", [](benchmark::State& s) { shardwise_iteration(s, true); })
      ->UseManualTime();
  benchmark::RegisterBenchmark("cg/shardwise_unchecked", [](benchmark::State& s) { shardwise_iteration(s, false); })
      ->UseManualTime();
  return sw::bench::mpi_benchmark_main(argc, argv);
}
