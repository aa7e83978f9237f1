// The drop-in p?tran and p?gemr2d against ScaLAPACK's, side by side in one run:
//   ptran/n:N/nb:NB/grid:RxC      C = A^T (pdtran, alpha 1, beta 0, whole n x n matrices, NB x NB
//                                 blocks from process (0, 0)) on every grid of the world's ranks;
//   pgemr2d/n:N/nb:NB/to:WHAT     B = A (pdgemr2d, whole n x n matrices): to nb:2NB on the same
//                                 1 x P grid, or to the P x 1 grid with the same NB.
//   psyrk/n:N/nb:NB/grid:RxC/panels:P
//                                 the lower triangle of C = A A^T (pdsyrk 'L' 'N', K = n, alpha
//                                 1, beta 0) with P column panels (0: psyrk_panels' choice);
//   psymm/n:N/nb:NB/grid:RxC      C = A B, A symmetric from its lower triangle (pdsymm 'L' 'L').
// Each iteration runs ScaLAPACK's routine and then shardwise::scalapack's (the engine of
// libshardwise_scalapack's) on the same descriptors, each timed as its slowest rank; the
// benchmark's time is shardwise's, and
//   ratio          shardwise's time / ScaLAPACK's (< 1: the drop-in is faster)
//   scalapack_ms   ScaLAPACK's time per call
//   sent_MiB       what rank 0 sent per call (RedistributionStats::sent_bytes; for p?syrk and
//                  p?symm Level3Stats' copy and pgemm bytes)
//   flops_ratio    (psyrk) the flops of psyrk's pgemm calls / PDSYRK's N (N + 1) K
//
//   mpiexec -n 2 --bind-to none build/benchmarks/ptran_bench --benchmark_repetitions=3
#include <mpi.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "dropin_bench.hpp"
#include "shardwise/bench/mpi_benchmark_main.hpp"
#include "shardwise/scalapack/blacs.hpp"
#include "shardwise/scalapack/pgemr2d.hpp"
#include "shardwise/scalapack/psymm.hpp"
#include "shardwise/scalapack/psyrk.hpp"
#include "shardwise/scalapack/ptran.hpp"

namespace {

namespace sc = shardwise::scalapack;
using shardwise::bench::dropin::context_of;
using shardwise::bench::dropin::Local;

/// This process's part of an n x n matrix (dropin::make).
Local make(const sc::Grid& g, int context, int n, int nb, unsigned seed) {
  return shardwise::bench::dropin::make(g, context, n, n, nb, seed);
}

/// dropin::side_by_side, and the counter sent_MiB from the routine's counts `stats` (calls,
/// sent_bytes); `same` says whether the two results agree.
void side_by_side(benchmark::State& state, MPI_Comm comm, auto&& reference, auto&& ours, auto&& stats, auto&& same) {
  const auto [before, after] = shardwise::bench::dropin::side_by_side(state, comm, reference, ours, stats);
  state.counters["sent_MiB"] = static_cast<double>(after.sent_bytes - before.sent_bytes) /
                               static_cast<double>(std::max<std::int64_t>(1, after.calls - before.calls)) / (1 << 20);
  int differ = same() ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &differ, 1, MPI_INT, MPI_MAX, comm);
  if (differ != 0) state.SkipWithError("shardwise's result differs from ScaLAPACK's");
}

void transpose(benchmark::State& state, int n, int nb, int rows, int cols) {
  const int context = context_of(rows, cols);
  const sc::Grid g = *sc::grid_of(context);
  const Local a = make(g, context, n, nb, 1);
  Local c_ref = make(g, context, n, nb, 2), c_sw = c_ref;
  const int one = 1;
  const double alpha = 1, beta = 0;
  side_by_side(
      state, g.comm,
      [&] { pdtran_(&n, &n, &alpha, a.data.data(), &one, &one, a.desc, &beta, c_ref.data.data(), &one, &one, c_ref.desc); },
      [&] { sc::ptran<double>(false, n, n, alpha, a.data.data(), 1, 1, a.desc, beta, c_sw.data.data(), 1, 1, c_sw.desc, g); },
      [] { return sc::ptran_stats(); }, [&] { return c_ref.data == c_sw.data; });
}

/// B = A from the 1 x P grid with NB to (rows x cols, nb_b).
void copy(benchmark::State& state, int n, int nb, int rows, int cols, int nb_b) {
  const int size = shardwise::bench::world_size();
  const int from = context_of(1, size), to = context_of(rows, cols);
  const sc::Grid ga = *sc::grid_of(from), gb = *sc::grid_of(to);
  const Local a = make(ga, from, n, nb, 1);
  Local b_ref = make(gb, to, n, nb_b, 2), b_sw = b_ref;
  const int one = 1;
  side_by_side(
      state, ga.comm,
      [&] { pdgemr2d_(&n, &n, a.data.data(), &one, &one, a.desc, b_ref.data.data(), &one, &one, b_ref.desc, &from); },
      [&] { sc::pgemr2d<double>(n, n, a.data.data(), 1, 1, a.desc, b_sw.data.data(), 1, 1, b_sw.desc, from); },
      [] { return sc::pgemr2d_stats(); }, [&] { return b_ref.data == b_sw.data; });
}


/// A level-3 routine's counts as side_by_side reads them: calls and bytes sent.
sc::RedistributionStats sent_by(const sc::Level3Stats& s) {
  return {.calls = s.calls, .sent_bytes = s.copy_bytes + s.gemm_bytes};
}

/// Whether the two results agree to 1e-12 relative to the largest element on this rank.
bool close(const std::vector<double>& x, const std::vector<double>& y) {
  double largest = 1, worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    largest = std::max(largest, std::abs(x[i]));
    worst = std::max(worst, std::abs(x[i] - y[i]));
  }
  return worst <= 1e-12 * largest;
}

void syrk(benchmark::State& state, int n, int nb, int rows, int cols, int panels) {
  const int context = context_of(rows, cols);
  const sc::Grid g = *sc::grid_of(context);
  const Local a = make(g, context, n, nb, 1);
  Local c_ref = make(g, context, n, nb, 2), c_sw = c_ref;
  const int one = 1;
  const double alpha = 1, beta = 0;
  const sc::Level3Stats before = sc::psyrk_stats();
  side_by_side(
      state, g.comm,
      [&] {
        pdsyrk_("L", "N", &n, &n, &alpha, a.data.data(), &one, &one, a.desc, &beta, c_ref.data.data(), &one, &one,
                c_ref.desc);
      },
      [&] {
        sc::psyrk<double>(false, 'L', 'N', n, n, alpha, a.data.data(), 1, 1, a.desc, beta, c_sw.data.data(), 1, 1,
                          c_sw.desc, g, panels);
      },
      [] { return sent_by(sc::psyrk_stats()); }, [&] { return close(c_ref.data, c_sw.data); });
  const sc::Level3Stats after = sc::psyrk_stats();
  state.counters["flops_ratio"] = (after.gemm_flops - before.gemm_flops) /
                                  static_cast<double>(std::max<std::int64_t>(1, after.calls - before.calls)) /
                                  (static_cast<double>(n) * (n + 1) * n);
}

void symm(benchmark::State& state, int n, int nb, int rows, int cols) {
  const int context = context_of(rows, cols);
  const sc::Grid g = *sc::grid_of(context);
  const Local a = make(g, context, n, nb, 1), b = make(g, context, n, nb, 3);
  Local c_ref = make(g, context, n, nb, 2), c_sw = c_ref;
  const int one = 1;
  const double alpha = 1, beta = 0;
  side_by_side(
      state, g.comm,
      [&] {
        pdsymm_("L", "L", &n, &n, &alpha, a.data.data(), &one, &one, a.desc, b.data.data(), &one, &one, b.desc, &beta,
                c_ref.data.data(), &one, &one, c_ref.desc);
      },
      [&] {
        sc::psymm<double>(false, 'L', 'L', n, n, alpha, a.data.data(), 1, 1, a.desc, b.data.data(), 1, 1, b.desc, beta,
                          c_sw.data.data(), 1, 1, c_sw.desc, g);
      },
      [] { return sent_by(sc::psymm_stats()); }, [&] { return close(c_ref.data, c_sw.data); });
}

}  // namespace

int main(int argc, char** argv) {
  return shardwise::bench::mpi_benchmark_main(argc, argv, [](int) {
    const int size = shardwise::bench::world_size();
    for (int n : {512, 2048, 4096})
      for (int nb : {32, 64})
        for (int rows = 1; rows <= size; ++rows) {
          if (size % rows != 0) continue;
          const std::string name = "ptran/n:" + std::to_string(n) + "/nb:" + std::to_string(nb) + "/grid:" +
                                   std::to_string(rows) + "x" + std::to_string(size / rows);
          benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
            transpose(state, n, nb, rows, size / rows);
          })->UseManualTime()->Unit(benchmark::kMillisecond);
        }
    for (int n : {2048, 4096})
      for (int nb : {32, 64}) {
        const std::string base = "pgemr2d/n:" + std::to_string(n) + "/nb:" + std::to_string(nb);
        benchmark::RegisterBenchmark((base + "/to:nb" + std::to_string(2 * nb)).c_str(),
                                     [=](benchmark::State& state) { copy(state, n, nb, 1, size, 2 * nb); })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark((base + "/to:" + std::to_string(size) + "x1").c_str(),
                                     [=](benchmark::State& state) { copy(state, n, nb, size, 1, nb); })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
      }
    for (int n : {512, 2048})
      for (int rows = 1; rows <= size; ++rows) {
        if (size % rows != 0) continue;
        const int nb = 64, cols = size / rows;
        const std::string grid =
            "/nb:" + std::to_string(nb) + "/grid:" + std::to_string(rows) + "x" + std::to_string(cols);
        for (int panels : {1, 0}) {
          const std::string name = "psyrk/n:" + std::to_string(n) + grid + "/panels:" + std::to_string(panels);
          benchmark::RegisterBenchmark(name.c_str(),
                                       [=](benchmark::State& state) { syrk(state, n, nb, rows, cols, panels); })
              ->UseManualTime()
              ->Unit(benchmark::kMillisecond);
        }
        benchmark::RegisterBenchmark(("psymm/n:" + std::to_string(n) + grid).c_str(),
                                     [=](benchmark::State& state) { symm(state, n, nb, rows, cols); })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
      }
  });
}
