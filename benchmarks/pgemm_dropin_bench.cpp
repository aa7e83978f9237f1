// The drop-in p?gemm against ScaLAPACK's, side by side in one run: C = op(A) B (pdgemm,
// alpha 1, beta 0, whole matrices, NB x NB blocks from process (0, 0)). Two families:
//   pgemm/n:N/nb:NB/grid:RxC/order:O/transa:T   square n x n x n on every grid of the world's
//       ranks in row- and column-major grid order, with op 'N' (ScaLAPACK's aligned case: the
//       drop-in computes in place) and 'T' (it redistributes A, B and C);
//   pgemm_calls/m:M/n:N/k:K/nb:32/grid:Px1/order:R/transa:T   the calls a ScaLAPACK client
//       makes, from tiny (C a single block: 23x23x23, 23x4x23, 16x16x104) to 104^3,
//       128x128x736 with TRANSA = 'T' and 736^3, on the P x 1 grid (issue 39).
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
//   local          the share of calls computed by the one process that holds all of sub(A),
//                  sub(B) and sub(C), without any communication (PgemmStats::local)
//
//   mpiexec -n 2 --bind-to none build/benchmarks/pgemm_dropin_bench --benchmark_repetitions=3
#include <mpi.h>

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "pdgemm.hpp"  // the BLACS and ScaLAPACK prototypes
#include "shardwise/bench/mpi_benchmark_main.hpp"
#include "shardwise/scalapack/blacs.hpp"
#include "shardwise/scalapack/pgemm.hpp"

namespace {

namespace sc = shardwise::scalapack;

/// A grid per (rows, order), made once (collective) and kept.
int context_of(int rows, int cols, const char* order) {
  static std::vector<std::pair<std::string, int>> made;
  const std::string key = std::to_string(rows) + order;
  for (const auto& [k, c] : made)
    if (k == key) return c;
  int context = 0;
  Cblacs_get(0, 0, &context);
  Cblacs_gridinit(&context, order, rows, cols);
  made.emplace_back(key, context);
  return context;
}

struct Local {
  std::vector<double> data;
  int desc[9]{};
};

Local make(const sc::Grid& g, int context, int m, int n, int nb, unsigned seed) {
  Local x;
  const int zero = 0;
  const int rows = numroc_(&m, &nb, &g.row, &zero, &g.rows), cols = numroc_(&n, &nb, &g.col, &zero, &g.cols);
  const int lld = std::max(1, rows);
  int info = 0;
  descinit_(x.desc, &m, &n, &nb, &nb, &zero, &zero, &context, &lld, &info);
  x.data.resize(static_cast<std::size_t>(lld) * static_cast<std::size_t>(std::max(1, cols)));
  std::mt19937_64 draw(seed + static_cast<unsigned>(g.row * g.cols + g.col));
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (double& v : x.data) v = uniform(draw);
  return x;
}

double timed(MPI_Comm comm, auto&& call) {
  MPI_Barrier(comm);
  const double start = MPI_Wtime();
  call();
  double t = MPI_Wtime() - start;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
  return t;
}

/// C (m x n) = op(A) B, A m x k ('N') or k x m ('T'), B k x n.
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
  reference();  // warm-up: BLACS buffers, the plan, the process groups, page faults
  ours();
  const sc::PgemmStats before = sc::pgemm_stats();
  double reference_total = 0, ours_total = 0;
  for (auto _ : state) {
    reference_total += timed(g.comm, reference);
    const double t = timed(g.comm, ours);
    ours_total += t;
    state.SetIterationTime(t);
  }
  const sc::PgemmStats after = sc::pgemm_stats();
  const double calls = static_cast<double>(after.calls - before.calls);
  state.counters["ratio"] = ours_total / reference_total;
  state.counters["scalapack_ms"] = 1e3 * reference_total / static_cast<double>(state.iterations());
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * m * n * static_cast<double>(k) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["redistributed_MiB"] =
      static_cast<double>(after.redistributed_bytes - before.redistributed_bytes) / calls / (1 << 20);
  state.counters["plan_MiB"] = static_cast<double>(after.plan_bytes - before.plan_bytes) / calls / (1 << 20);
  state.counters["in_place"] = static_cast<double>(after.in_place - before.in_place) / calls;
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
    for (int n : {2048, 4096})
      for (int nb : {64, 128, 256})
        for (int rows = 1; rows <= size; ++rows) {
          if (size % rows != 0) continue;
          for (const char* order : {"R", "C"})
            for (const char transa : {'N', 'T'}) {
              const std::string name = "pgemm/n:" + std::to_string(n) + "/nb:" + std::to_string(nb) +
                                       "/grid:" + std::to_string(rows) + "x" + std::to_string(size / rows) +
                                       "/order:" + order + "/transa:" + transa;
              benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
                side_by_side(state, n, n, n, nb, rows, size / rows, order, transa);
              })->UseManualTime()->Unit(benchmark::kMillisecond);
            }
        }
    // A client's calls, tiny to medium (issue 39), on the P x 1 grid with NB 32.
    struct Call {
      int m, n, k;
      char transa;
    };
    for (const Call call : {Call{23, 23, 23, 'N'}, Call{23, 4, 23, 'N'}, Call{16, 16, 104, 'N'}, Call{104, 104, 104, 'N'},
                            Call{128, 128, 736, 'T'}, Call{736, 736, 736, 'N'}}) {
      const std::string name = "pgemm_calls/m:" + std::to_string(call.m) + "/n:" + std::to_string(call.n) +
                               "/k:" + std::to_string(call.k) + "/nb:32/grid:" + std::to_string(size) +
                               "x1/order:R/transa:" + call.transa;
      benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
        side_by_side(state, call.m, call.n, call.k, 32, size, 1, "R", call.transa);
      })->UseManualTime()->Unit(benchmark::kMicrosecond);
    }
  });
}
