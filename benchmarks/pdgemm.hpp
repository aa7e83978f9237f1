// ScaLAPACK's PDGEMM as a Google Benchmark peer of shardwise's matmul, on the ranks the program
// runs on (MPI_COMM_WORLD). Built when Meson finds `scalapack-openmpi` (benchmarks/meson.build:
// pdgemm_args, pdgemm_deps; the program is compiled with -DSHARDWISE_BENCH_PDGEMM=1).
//
//   #include "pdgemm.hpp"
//   return shardwise::bench::mpi_benchmark_main(argc, argv, [&](int) {
//     shardwise::bench::register_pdgemm_benchmarks(shapes);   // every rank, after MPI_Init
//   });
//
// Per (m, n, k) shape, block size NB in {64, 128, 256} and process grid p x q (p q = world
// size; every factorization, so 1x2 and 2x1 on 2 ranks, 1x1 on 1), a benchmark
//   pdgemm/nb:<NB>/grid:<p>x<q>/m:<m>/n:<n>/k:<k>      (+ "/manual_time" from Google Benchmark)
// times C = A B (alpha 1, beta 0; all three NB x NB block-cyclic over the grid) with
// time_collective: barrier, MPI_Wtime around pdgemm_, slowest rank's time. One untimed call
// comes first (BLACS buffers, page faults). Counters:
//   GFLOPs          2 m n k / 1e9 per second of that time (kIsIterationInvariantRate divides by
//                   the manual time)
//   bytes_per_rank  an estimate, not a measurement: the bytes a rank receives in a stationary-C
//                   SUMMA on the grid, 8 [(m/p) k (q-1)/q + k (n/q) (p-1)/p]; PBLAS may pick
//                   another algorithm (on 2 ranks this is also what a rank sends)
//   model_MiB       this rank's local A, B and C (numroc sizes)
//   ranks, distributed (= 1)
//
// The BLACS and ScaLAPACK prototypes: shardwise/scalapack/prototypes.h.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <shardwise/bench/mpi_benchmark_main.hpp>
#include <shardwise/scalapack/prototypes.h>

namespace shardwise::bench {

/// A BLACS process grid p x q over MPI_COMM_WORLD (row-major rank order), made once per shape
/// and kept for the life of the program. Creating one is collective: all ranks must ask for
/// the same grids in the same order (benchmarks run in the same order on every rank).
struct BlacsGrid {
  int context = -1, rows = 1, cols = 1, my_row = 0, my_col = 0;

  static const BlacsGrid& get(int p, int q) {
    static std::map<std::pair<int, int>, BlacsGrid> grids;
    auto [it, inserted] = grids.try_emplace({p, q});
    if (inserted) {
      int me = 0, procs = 0;
      Cblacs_pinfo(&me, &procs);
      if (p * q != procs)
        throw std::invalid_argument("pdgemm: a " + std::to_string(p) + "x" + std::to_string(q) + " grid needs " +
                                    std::to_string(p * q) + " ranks, this run has " + std::to_string(procs));
      BlacsGrid& g = it->second;
      Cblacs_get(-1, 0, &g.context);  // the system context: MPI_COMM_WORLD
      Cblacs_gridinit(&g.context, "Row", p, q);
      Cblacs_gridinfo(g.context, &g.rows, &g.cols, &g.my_row, &g.my_col);
    }
    return it->second;
  }
};

/// This rank's part of an m x n matrix distributed nb x nb block-cyclically (first block on
/// process (0, 0)), column-major with leading dimension lld, and its ScaLAPACK descriptor.
struct BlockCyclicMatrix {
  int rows = 0, cols = 0, nb = 1, local_rows = 0, local_cols = 0, lld = 1;
  std::array<int, 9> desc{};
  std::vector<double> local;

  BlockCyclicMatrix(const BlacsGrid& g, int m, int n, int block) : rows(m), cols(n), nb(block) {
    const int zero = 0;
    local_rows = numroc_(&m, &nb, &g.my_row, &zero, &g.rows);
    local_cols = numroc_(&n, &nb, &g.my_col, &zero, &g.cols);
    lld = std::max(1, local_rows);
    int info = 0;
    descinit_(desc.data(), &m, &n, &nb, &nb, &zero, &zero, &g.context, &lld, &info);
    if (info != 0) throw std::runtime_error("pdgemm: descinit_ failed, info = " + std::to_string(info));
    local.assign(static_cast<std::size_t>(lld) * static_cast<std::size_t>(local_cols), 0.0);
  }

  /// Global index of local row (or column) `l` on process coordinate `proc` of `procs`.
  [[nodiscard]] static int global_index(int l, int block, int proc, int procs) {
    return (l / block * procs + proc) * block + l % block;
  }

  /// Sets every local element to f(global_row, global_col).
  template <typename F>
  void fill(const BlacsGrid& g, F&& f) {
    for (int j = 0; j < local_cols; ++j)
      for (int i = 0; i < local_rows; ++i)
        local[static_cast<std::size_t>(j) * static_cast<std::size_t>(lld) + static_cast<std::size_t>(i)] =
            f(global_index(i, nb, g.my_row, g.rows), global_index(j, nb, g.my_col, g.cols));
  }

  [[nodiscard]] double& at(int i, int j) {
    return local[static_cast<std::size_t>(j) * static_cast<std::size_t>(lld) + static_cast<std::size_t>(i)];
  }
};

/// C = A B through pdgemm_ (alpha 1, beta 0), whole matrices.
inline void pdgemm(const BlockCyclicMatrix& a, const BlockCyclicMatrix& b, BlockCyclicMatrix& c) {
  const int one = 1;
  const double alpha = 1.0, beta = 0.0;
  pdgemm_("N", "N", &c.rows, &c.cols, &a.cols, &alpha, a.local.data(), &one, &one, a.desc.data(), b.local.data(),
          &one, &one, b.desc.data(), &beta, c.local.data(), &one, &one, c.desc.data());
}

/// Every p x q with p q = size, p ascending.
inline std::vector<std::pair<int, int>> grid_shapes(int size) {
  std::vector<std::pair<int, int>> shapes;
  for (int p = 1; p <= size; ++p)
    if (size % p == 0) shapes.emplace_back(p, size / p);
  return shapes;
}

/// The benchmark body: see the top of this file.
inline void pdgemm_benchmark(benchmark::State& state, int nb, int p, int q, long m, long n, long k) {
  const BlacsGrid& g = BlacsGrid::get(p, q);
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  BlockCyclicMatrix a(g, mi, ki, nb), b(g, ki, ni, nb), c(g, mi, ni, nb);
  std::mt19937_64 draw(12345u + static_cast<unsigned>(g.my_row * q + g.my_col));
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (double& x : a.local) x = uniform(draw);
  for (double& x : b.local) x = uniform(draw);
  pdgemm(a, b, c);  // warm-up, untimed
  time_collective(state, MPI_COMM_WORLD, [&] { pdgemm(a, b, c); });
  benchmark::DoNotOptimize(c.local.data());

  const double md = static_cast<double>(m), nd = static_cast<double>(n), kd = static_cast<double>(k);
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * md * nd * kd * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes_per_rank"] =
      8.0 * (md / p * kd * (q - 1) / q + kd * (nd / q) * (p - 1) / p);  // estimate, see above
  state.counters["model_MiB"] =
      static_cast<double>(a.local.size() + b.local.size() + c.local.size()) * 8.0 / (1024.0 * 1024.0);
  state.counters["ranks"] = p * q;
  state.counters["distributed"] = 1;
}

/// Registers pdgemm/nb:<NB>/grid:<p>x<q>/m:/n:/k: for every shape, NB and grid of this world.
/// Call on every rank after MPI_Init (e.g. in mpi_benchmark_main's register callback).
inline void register_pdgemm_benchmarks(const std::vector<std::array<long, 3>>& shapes,
                                       const std::vector<int>& block_sizes = {64, 128, 256}) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    throw std::logic_error("register_pdgemm_benchmarks: call it after MPI_Init (the grids depend on the world size)");
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (const auto& shape : shapes)
    for (int nb : block_sizes)
      for (const auto& grid : grid_shapes(size)) {
        const long m = shape[0], n = shape[1], k = shape[2];
        const int p = grid.first, q = grid.second;
        const std::string name = "pdgemm/nb:" + std::to_string(nb) + "/grid:" + std::to_string(p) + "x" +
                                 std::to_string(q) + "/m:" + std::to_string(m) + "/n:" + std::to_string(n) +
                                 "/k:" + std::to_string(k);
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
          pdgemm_benchmark(state, nb, p, q, m, n, k);
        })->UseManualTime()->Unit(benchmark::kMillisecond);
      }
}

}  // namespace shardwise::bench
