// cg_bench: one iteration of conjugate gradients on a dense SPD system (examples/cg.cpp's),
// A split by rows over every rank, written with shardwise (sw::matvec, sw::dot, sw::axpy,
// sw::scale, a reshard of p) next to the same iteration written by hand with MPI and BLAS
// (MPI_Allgather of p, dgemv, ddot + MPI_Allreduce, daxpy, dscal):
//
//   mpiexec -n 2 --bind-to none build/benchmarks/cg_bench [--benchmark_repetitions=5]
//
// cg/shardwise_unchecked is the library at CheckLevel::local (no cross-rank agreement on the
// extents: one small all-reduce per call fewer). cg/side_by_side runs one iteration of each of
// the three in turn per benchmark iteration, each timed as its slowest rank, so a busy machine
// slows all three alike; its time is shardwise's (checked), and its counters are
//   ratio            shardwise's time / the handwritten one's, summed over the iterations
//   ratio_unchecked  the same at CheckLevel::local
//   handwritten_ms   the handwritten iteration's time
// (with --benchmark_repetitions, Google Benchmark's median row is the median of each).
// SHARDWISE_BENCH_CG_N sets n (default 4096). Each solve restarts from x = 0 when the residual
// has shrunk by 1e10, the same in all.
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

/// One CG solve written with shardwise: A's rows over every rank; iteration() is one step.
struct ShardwiseCg {
  using Matrix = sw::ShardedTensor<double, Line, Rows>;
  using Column = sw::ShardedTensor<double, Line, Vector>;
  sw::ProcessGroupMesh<Line>& groups;
  long n;
  Matrix a;
  Column b, x, r, p;
  double bb = 0, rr = 0;

  static sw::ProcessGroupMesh<Line>& world_groups() {
    static sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{sw::bench::world_size()});
    return groups;
  }
  explicit ShardwiseCg(long size)
      : groups(world_groups()), n(size), a(groups, {n, n}), b(groups, {n}), x(groups, {n}), r(groups, {n}),
        p(groups, {n}) {
    const long row0 = sw::detail::block_begin(n, groups.mesh().size(), groups.rank());
    for (long i = 0; i < a.local().dimension(0); ++i) {
      b.local()(i) = b_entry(row0 + i);
      for (long j = 0; j < n; ++j) a.local()(i, j) = a_entry(row0 + i, j, n);
    }
    bb = sw::dot(b, b);
    r = b;
    p = b;
    rr = bb;
  }
  void iteration() {
    const auto q = sw::matvec(a, sw::reshard<Whole>(p));
    const double alpha = rr / sw::dot(p, q);
    sw::axpy(alpha, p, x);
    sw::axpy(-alpha, q, r);
    const double rr_next = sw::dot(r, r);
    if (rr_next < restart_ratio * bb) {  // converged: start again (rare, and the same in all)
      sw::scale(0.0, x);
      r = b;
      p = b;
      rr = bb;
      return;
    }
    sw::scale(rr_next / rr, p);
    sw::axpy(1.0, r, p);
    rr = rr_next;
  }
};

/// The same iteration as a person writes it with MPI and BLAS, on the same row blocks.
struct HandwrittenCg {
  long n;
  int rows = 0;
  bool equal_blocks;
  std::vector<int> counts, offsets;
  std::vector<double> a, b, x, p_all, q, r, p;
  double bb = 0, rr = 0;

  explicit HandwrittenCg(long size) : n(size) {
    const int ranks = sw::bench::world_size(), me = sw::bench::world_rank();
    counts.resize(static_cast<std::size_t>(ranks));
    offsets.resize(static_cast<std::size_t>(ranks));
    for (int k = 0; k < ranks; ++k) {
      counts[static_cast<std::size_t>(k)] = static_cast<int>(sw::detail::block_size(n, ranks, k));
      offsets[static_cast<std::size_t>(k)] = static_cast<int>(sw::detail::block_begin(n, ranks, k));
    }
    rows = counts[static_cast<std::size_t>(me)];
    const long row0 = offsets[static_cast<std::size_t>(me)];
    equal_blocks = n % ranks == 0;
    a.resize(static_cast<std::size_t>(rows * n));
    b.resize(static_cast<std::size_t>(rows));
    x.assign(static_cast<std::size_t>(rows), 0.0);
    p_all.resize(static_cast<std::size_t>(n));
    q.resize(static_cast<std::size_t>(rows));
    for (long i = 0; i < rows; ++i) {
      b[static_cast<std::size_t>(i)] = b_entry(row0 + i);
      for (long j = 0; j < n; ++j) a[static_cast<std::size_t>(i * n + j)] = a_entry(row0 + i, j, n);
    }
    bb = dot(b, b);
    r = b;
    p = b;
    rr = bb;
  }
  double dot(const std::vector<double>& u, const std::vector<double>& v) const {
    double s = cblas_ddot(rows, u.data(), 1, v.data(), 1);
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return s;
  }
  void iteration() {
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
  }
};

/// Sets the cross-rank checks for the scope (every rank alike), and back on at its end.
struct Checks {
  explicit Checks(bool on) { sw::check_level() = on ? sw::CheckLevel::cross_rank : sw::CheckLevel::local; }
  ~Checks() { sw::check_level() = sw::CheckLevel::cross_rank; }
  Checks(const Checks&) = delete;
  Checks& operator=(const Checks&) = delete;
};

void shardwise_iteration(benchmark::State& state, bool checked) {
  const Checks checks(checked);
  ShardwiseCg cg(problem_size());
  cg.iteration();  // warm: groups and scratch
  sw::bench::time_collective(state, MPI_COMM_WORLD, [&] { cg.iteration(); });
  state.counters["n"] = static_cast<double>(cg.n);
}

void handwritten_iteration(benchmark::State& state) {
  HandwrittenCg cg(problem_size());
  cg.iteration();
  sw::bench::time_collective(state, MPI_COMM_WORLD, [&] { cg.iteration(); });
  state.counters["n"] = static_cast<double>(cg.n);
}

/// The slowest rank's time of one call of `step`, after a barrier.
template <typename Step>
double timed(Step&& step) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  step();
  double t = MPI_Wtime() - start;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

/// The three in turn, one iteration each per benchmark iteration: the ratios of one run.
void side_by_side(benchmark::State& state) {
  const long n = problem_size();
  HandwrittenCg handwritten(n);
  ShardwiseCg checked(n), unchecked(n);
  handwritten.iteration();
  checked.iteration();
  {
    const Checks off(false);
    unchecked.iteration();
  }
  double handwritten_total = 0, checked_total = 0, unchecked_total = 0;
  for (auto _ : state) {
    handwritten_total += timed([&] { handwritten.iteration(); });
    {
      const Checks off(false);
      unchecked_total += timed([&] { unchecked.iteration(); });
    }
    const double t = timed([&] { checked.iteration(); });
    checked_total += t;
    state.SetIterationTime(t);
  }
  state.counters["n"] = static_cast<double>(n);
  state.counters["ratio"] = checked_total / handwritten_total;
  state.counters["ratio_unchecked"] = unchecked_total / handwritten_total;
  state.counters["handwritten_ms"] = 1e3 * handwritten_total / static_cast<double>(state.iterations());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("cg/handwritten_mpi_blas", handwritten_iteration)->UseManualTime();
  benchmark::RegisterBenchmark("cg/shardwise", [](benchmark::State& s) { shardwise_iteration(s, true); })
      ->UseManualTime();
  benchmark::RegisterBenchmark("cg/shardwise_unchecked", [](benchmark::State& s) { shardwise_iteration(s, false); })
      ->UseManualTime();
  benchmark::RegisterBenchmark("cg/side_by_side", side_by_side)->UseManualTime();
  return sw::bench::mpi_benchmark_main(argc, argv);
}
