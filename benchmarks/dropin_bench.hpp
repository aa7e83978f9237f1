// The drop-in's engines against ScaLAPACK's routines, side by side in one run
// (pgemm_dropin_bench, ptran_bench): the BLACS grids, the block-cyclic operands, and the timing
// of one library's call next to the other's. The BLACS and ScaLAPACK prototypes:
// shardwise/scalapack/prototypes.h.
#pragma once

#include <mpi.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "shardwise/scalapack/blacs.hpp"
#include "shardwise/scalapack/prototypes.h"

namespace shardwise::bench::dropin {

/// A BLACS grid per (rows, cols, order) of the world's processes, made once (collectively: every
/// rank asks for the same grids in the same order) and kept.
inline int context_of(int rows, int cols, const char* order = "R") {
  static std::vector<std::pair<std::tuple<int, int, std::string>, int>> made;
  const std::tuple<int, int, std::string> key{rows, cols, order};
  for (const auto& [k, c] : made)
    if (k == key) return c;
  int context = 0;
  Cblacs_get(0, 0, &context);
  Cblacs_gridinit(&context, order, rows, cols);
  made.emplace_back(key, context);
  return context;
}

/// This process's part of an m x n matrix in NB x NB blocks from process (0, 0), and its
/// descriptor.
struct Local {
  std::vector<double> data;
  int desc[9]{};
};

/// Elements uniform in [-1, 1), drawn from `seed` and the process's place in the grid.
inline Local make(const shardwise::scalapack::Grid& g, int context, int m, int n, int nb, unsigned seed) {
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

/// The time of `call` on its slowest rank of `comm`, from a barrier.
inline double timed(MPI_Comm comm, auto&& call) {
  MPI_Barrier(comm);
  const double start = MPI_Wtime();
  call();
  double t = MPI_Wtime() - start;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
  return t;
}

/// Calls `reference` (ScaLAPACK's routine) and `ours` (shardwise's engine) once each, untimed
/// (BLACS buffers, plans, workspaces, page faults), then alternately, each timed(); ours is the
/// benchmark's time. Sets the counters ratio (ours / reference) and scalapack_ms (reference's
/// time per call); returns `stats()` read before the timed calls and after them.
inline auto side_by_side(benchmark::State& state, MPI_Comm comm, auto&& reference, auto&& ours, auto&& stats) {
  reference();
  ours();
  const auto before = stats();
  double reference_total = 0, ours_total = 0;
  for (auto _ : state) {
    reference_total += timed(comm, reference);
    const double t = timed(comm, ours);
    ours_total += t;
    state.SetIterationTime(t);
  }
  state.counters["ratio"] = ours_total / reference_total;
  state.counters["scalapack_ms"] = 1e3 * reference_total / static_cast<double>(state.iterations());
  return std::pair{before, stats()};
}

}  // namespace shardwise::bench::dropin
