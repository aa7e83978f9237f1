// The drop-in p?gemm against ScaLAPACK's, side by side in one run: C = op(A) B (pdgemm,
// alpha 1, beta 0, whole matrices, NB x NB blocks from process (0, 0)). One table (issue 39),
//   pgemm/m:M/n:N/k:K/nb:NB/grid:RxC/order:O/transa:T
// the calls a ScaLAPACK client makes, from tiny (C a single block: 23x23x23, 23x4x23,
// 16x16x104) through 104^3, CP2K's C^T S C (128x128x736, A and B tall) and 736^3 to 2048^3,
// with TRANSA 'N' (ScaLAPACK's aligned case), 'T' and 'C' (A stored k x m), NB 32, 64 and 128,
// on the P x 1 grid in row-major order and the 1 x P grid in column-major order (both grid
// shapes, both BLACS orders); 2048^3 with 'N' and 'T', NB 32 and 128; and one 4096^3 call ('N',
// NB 128, P x 1). Each shape runs a fixed number of calls (about 10^9 flops' worth, 3 to 1000),
// so that the table takes a few minutes on 2 ranks.
// Each iteration runs ScaLAPACK's pdgemm_ and then shardwise::scalapack::pgemm (the engine of
// libshardwise_scalapack's pdgemm_) on the same descriptors, each timed as its slowest rank;
// the benchmark's time is shardwise's, and
//   ratio          shardwise's time / ScaLAPACK's (< 1: the drop-in is faster)
//   scalapack_ms   ScaLAPACK's time per call
//   GFLOPs         shardwise's rate, 2 m n k per call
//   redistributed_MiB, plan_MiB   what rank 0 sent per call: moving A, B and C between the
//                  block-cyclic layout and the plan's, and the plan itself (the cost model's)
//   in_place       the share of calls computed in place (SUMMA over the k blocks: the aligned
//                  case, op 'N'), not redistributed
//   reduced        the share of calls computed as partial products over each process's k rows,
//                  summed onto C's owners (op 'T'/'C' with A's and B's k rows aligned)
//   gathered       the share of calls computed by gathering sub(A) along the grid's row (op
//                  'T'/'C' on a 1 x P grid, C's columns dealt as B's)
//   local          the share of calls computed by the one process that holds all of sub(A),
//                  sub(B) and sub(C), without any communication (PgemmStats::local)
//
//   OPENBLAS_NUM_THREADS=1 mpiexec -n 2 --bind-to none build/benchmarks/pgemm_dropin_bench
//   (one BLAS thread per rank, as benchmarks/run sets it: OpenBLAS's default of one thread per
//   core oversubscribes the cores, and both libraries' times move with it)
#include <mpi.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "dropin_bench.hpp"
#include "shardwise/bench/mpi_benchmark_main.hpp"
#include "shardwise/scalapack/blacs.hpp"
#include "shardwise/scalapack/pgemm.hpp"

namespace {

namespace sc = shardwise::scalapack;
using shardwise::bench::dropin::context_of;
using shardwise::bench::dropin::Local;
using shardwise::bench::dropin::make;

/// C (m x n) = op(A) B, A m x k ('N') or k x m ('T', 'C'), B k x n.
void side_by_side(benchmark::State& state, int m, int n, int k, int nb, int rows, int cols, const char* order,
                  char transa) {
  const int context = context_of(rows, cols, order);
  const sc::Grid g = *sc::grid_of(context);
  const Local a = transa == 'N' ? make(g, context, m, k, nb, 1) : make(g, context, k, m, nb, 1);
  const Local b = make(g, context, k, n, nb, 2);
  Local c_ref = make(g, context, m, n, nb, 3), c_sw = c_ref;
  const int one = 1;
  const double alpha = 1, beta = 0;
  const char transa_text[2] = {transa, '\0'};
  auto reference = [&] {
    pdgemm_(transa_text, "N", &m, &n, &k, &alpha, a.data.data(), &one, &one, a.desc, b.data.data(), &one, &one, b.desc, &beta,
            c_ref.data.data(), &one, &one, c_ref.desc);
  };
  auto ours = [&] {
    sc::pgemm<double>(transa, 'N', m, n, k, alpha, a.data.data(), 1, 1, a.desc, b.data.data(), 1, 1, b.desc, beta,
                      c_sw.data.data(), 1, 1, c_sw.desc, g);
  };
  const auto [before, after] = shardwise::bench::dropin::side_by_side(state, g.comm, reference, ours, sc::pgemm_stats);
  const double calls = static_cast<double>(after.calls - before.calls);
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * m * n * static_cast<double>(k) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["redistributed_MiB"] =
      static_cast<double>(after.redistributed_bytes - before.redistributed_bytes) / calls / (1 << 20);
  state.counters["plan_MiB"] = static_cast<double>(after.plan_bytes - before.plan_bytes) / calls / (1 << 20);
  state.counters["in_place"] = static_cast<double>(after.in_place - before.in_place) / calls;
  state.counters["reduced"] = static_cast<double>(after.reduced - before.reduced) / calls;
  state.counters["gathered"] = static_cast<double>(after.gathered - before.gathered) / calls;
  state.counters["local"] = static_cast<double>(after.local - before.local) / calls;
  // The two answers agree (both are checked against ScaLAPACK's in tests/test_pgemm_scalapack).
  double worst = 0;
  for (std::size_t i = 0; i < c_ref.data.size(); ++i) worst = std::max(worst, std::abs(c_ref.data[i] - c_sw.data[i]));
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, g.comm);
  if (worst > 1e-9 * k) state.SkipWithError("shardwise's C differs from ScaLAPACK's");
}

}  // namespace

int main(int argc, char** argv) {
  return shardwise::bench::mpi_benchmark_main(argc, argv, [](int) {
    const int size = shardwise::bench::world_size();
    struct Call {
      int m, n, k;
    };
    struct Layout {
      int rows;
      const char* order;
    };
    auto add = [&](Call call, int nb, Layout layout, char transa) {
      const int rows = layout.rows, cols = size / layout.rows;
      const std::string name = "pgemm/m:" + std::to_string(call.m) + "/n:" + std::to_string(call.n) +
                               "/k:" + std::to_string(call.k) + "/nb:" + std::to_string(nb) + "/grid:" +
                               std::to_string(rows) + "x" + std::to_string(cols) + "/order:" + layout.order +
                               "/transa:" + transa;
      // A fixed count per shape, about 10^9 flops of each library's (3 to 1000 calls): an
      // iteration's barriers and all-reduces outweigh a tiny call, and a time target would
      // take minutes per tiny shape.
      const double flops = 2.0 * call.m * call.n * static_cast<double>(call.k);
      const auto iterations = static_cast<benchmark::IterationCount>(std::clamp(1e9 / flops, 3.0, 1000.0));
      benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
        side_by_side(state, call.m, call.n, call.k, nb, rows, cols, layout.order, transa);
      })->UseManualTime()->Iterations(iterations)->Unit(flops > 1e9 ? benchmark::kMillisecond : benchmark::kMicrosecond);
    };
    const Call calls[] = {{23, 23, 23}, {23, 4, 23}, {16, 16, 104}, {104, 104, 104}, {128, 128, 736}, {736, 736, 736}};
    for (const Call call : calls)
      for (const char transa : {'N', 'T', 'C'})
        for (const int nb : {32, 64, 128})
          for (const Layout layout : {Layout{size, "R"}, Layout{1, "C"}}) add(call, nb, layout, transa);
    // The large end, fewer cells: a call takes a good part of a second on 2 cores.
    for (const char transa : {'N', 'T'})
      for (const int nb : {32, 128})
        for (const Layout layout : {Layout{size, "R"}, Layout{1, "C"}}) add({2048, 2048, 2048}, nb, layout, transa);
    add({4096, 4096, 4096}, 128, {size, "R"}, 'N');
  });
}
