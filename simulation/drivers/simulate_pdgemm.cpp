// simulate_pdgemm: ScaLAPACK's PDGEMM, C[m, n] = A[m, k] B[k, n] (fp64, all three NB x NB
// block-cyclic on a p x q grid of MPI_COMM_WORLD, or --grid), the peer of simulate_matmul on the
// same simulated clusters. The grid: of every p x q = P, the one whose SUMMA estimate (below)
// is least, the squarest of equals, its longer side over the larger of m and n. A tall-skinny
// product then gets P x 1 (only B moves) where the squarest grid would move A's panels.
// With --allow-idle, grids of down to 3/4 of P ranks compete too, their bytes weighed by
// P / (p q), as shardwise's best plan weighs its meshes (plan_matmul_any_mesh): a ScaLAPACK user
// on a prime P takes a 2-D grid of fewer ranks rather than 1 x P, whose block-cyclic C leaves
// most ranks without a block when n / NB < P. The ranks outside the grid idle.
// Built by simulation/peers/build_scalapack_smpi.sh against SMPI, with flop_charging_dgemm.c as its
// dgemm_; run by `simulation/simulate pdgemm`.
// The same source, compiled with SHARDWISE_SIMULATE=1 and linked with the drop-in's
// src/scalapack_dropin.cpp before ScaLAPACK's archive, is simulate_dropin (`simulation/simulate
// dropin`): the same program and arguments, its pdgemm_ call computed by libshardwise_scalapack as
// a ScaLAPACK client's would be. Its row names the plan "dropin nb:NB" and, after the grid, the
// way the drop-in took (in place, reduced, gathered, local or redistributed), and in place of
// the SUMMA estimate the bytes the busiest rank sent per call as the drop-in counted them.
//
// --routine tran and --routine gemr2d time ScaLAPACK's other layout routines the drop-in serves on
// the same grid instead: PDTRAN, C (m x n) = A^T with A n x m, and PDGEMR2D, B (m x n, block
// 2 NB) := A (m x n, block NB) on the same grid (ScaLAPACK's REDIST in the archive); the row
// names the routine ("pdtran nb:NB", "dropin gemr2d nb:NB"), its GFLOP/s are 0, and in place of
// the SUMMA estimate the bytes a rank holds of A ("share"), or the busiest rank's bytes sent as
// the drop-in counted them.
//
//   simulate_pdgemm [--routine gemm|tran|gemr2d] [--m M] [--k K] [--n N] [--nb NB] [--grid PxQ] [--allow-idle]
//                   [--reps R] [--check] [--fold]
//     --m, --k  default to --n (256)
//     --grid  p q <= P; the ranks beyond p q idle
//     --check  the local GEMMs multiply and every rank checks its elements of C (small N)
//     --fold   A, B and C from SMPI's shared malloc (the same pages on every rank), for large P
// One line in simulate_matmul's table format: the time of the slowest rank (best of R runs
// after an untimed one), GFLOP/s, % of the hosts' peak, and in place of counted bytes the
// estimate of a stationary-C SUMMA on the grid, 8 [(m/p) k (q-1)/q + k (n/q) (p-1)/p] bytes
// received per rank (PBLAS may move data otherwise; nothing here counts its messages), with
// that estimate over the memory-independent lower bound (as in simulate_matmul).
// No static or global mutable state: under SMPI every rank is a thread of one process.
#include <mpi.h>
#include <simgrid/host.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "shardwise/plan/cost.hpp"              // matmul_lower_bound: the bound the table compares with
#include "shardwise/plan/sharding_planner.hpp"  // AnyMeshOptions: how many ranks the best plan may idle
#include "shardwise/scalapack/prototypes.h"      // BLACS, NUMROC, DESCINIT, PDGEMM
#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
#include "shardwise/detail/simulation.hpp"  // whether the drop-in's GEMMs compute, and its buffers fold
#include "shardwise/scalapack/pgemm.hpp"    // pgemm_stats: the way the drop-in took, its bytes
#include "shardwise/scalapack/pgemr2d.hpp"  // pgemr2d_stats and ptran_stats: their bytes
#include "shardwise/scalapack/ptran.hpp"
#define SIMULATE_DROPIN 1
#else
#define SIMULATE_DROPIN 0
#endif

// flop_charging_dgemm.c: whether the local GEMMs multiply (--check) or only charge their flops.
extern "C" void flop_charging_dgemm_computes(int yes);

namespace {

/// As simulate_matmul's: exact in fp64, so a right product matches to the last bit.
double element(int which, long i, long j) {
  const long h = (i * 31 + j * 17 + which * 7) % 23;
  return static_cast<double>(h - 11) / 16.0;
}

/// Bytes each rank receives in a stationary-C SUMMA on a p x q grid: its rows of A's panels
/// from the q - 1 others of its grid row, its columns of B's from the p - 1 of its grid column.
double summa_estimate(double m, double k, double n, int p, int q) {
  return 8.0 * (m / p * k * (q - 1) / q + k * (n / q) * (p - 1) / p);
}

/// Global index of local row (or column) `l` on process coordinate `proc` of `procs`.
long global_index(int l, int block, int proc, int procs) {
  return (static_cast<long>(l) / block * procs + proc) * block + l % block;
}

struct Local {
  int rows = 0, cols = 0, lld = 1;
  int desc[9] = {};
  double* data = nullptr;
  bool folded = false;

  /// This rank's part of a global_rows x global_cols matrix.
  Local(int global_rows, int global_cols, int nb, int context, int my_row, int my_col, int p, int q, bool fold)
      : folded(fold) {
    const int zero = 0;
    rows = numroc_(&global_rows, &nb, &my_row, &zero, &p);
    cols = numroc_(&global_cols, &nb, &my_col, &zero, &q);
    lld = std::max(1, rows);
    int info = 0;
    descinit_(desc, &global_rows, &global_cols, &nb, &nb, &zero, &zero, &context, &lld, &info);
    const std::size_t bytes = sizeof(double) * static_cast<std::size_t>(lld) * static_cast<std::size_t>(std::max(1, cols));
    data = static_cast<double*>(fold ? SMPI_SHARED_MALLOC(bytes) : std::malloc(bytes));
    std::fill_n(data, bytes / sizeof(double), 0.0);
  }
  Local(const Local&) = delete;
  Local& operator=(const Local&) = delete;
  ~Local() {
    if (folded) SMPI_SHARED_FREE(data);
    else std::free(data);
  }
  double& at(int i, int j) const { return data[static_cast<std::size_t>(j) * static_cast<std::size_t>(lld) + static_cast<std::size_t>(i)]; }
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int m = -1, k = -1, n = 256, nb = 128, reps = 1, grid_p = 0, grid_q = 0;
  bool check = false, fold = false, allow_idle = false;
  std::string routine = "gemm";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--routine" && i + 1 < argc) routine = argv[++i];
    else if (arg == "--n" && i + 1 < argc) n = std::atoi(argv[++i]);
    else if (arg == "--m" && i + 1 < argc) m = std::atoi(argv[++i]);
    else if (arg == "--k" && i + 1 < argc) k = std::atoi(argv[++i]);
    else if (arg == "--grid" && i + 1 < argc && std::sscanf(argv[++i], "%dx%d", &grid_p, &grid_q) == 2) continue;
    else if (arg == "--nb" && i + 1 < argc) nb = std::atoi(argv[++i]);
    else if (arg == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--check") check = true;
    else if (arg == "--allow-idle") allow_idle = true;
    else if (arg == "--fold") fold = true;
    else {
      std::fprintf(stderr, "simulate_pdgemm: unknown argument '%s'\n", argv[i]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (routine != "gemm" && routine != "tran" && routine != "gemr2d") {
    std::fprintf(stderr, "simulate_pdgemm: unknown routine '%s' (gemm, tran, gemr2d)\n", routine.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
#if defined(SIMULATE_NO_PDGEMR2D)
  if (routine == "gemr2d") {
    std::fprintf(stderr, "simulate_pdgemm: built without ScaLAPACK's REDIST (PDGEMR2D); see build_scalapack_smpi.sh\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
#endif
  const bool product = routine == "gemm";
  if (m < 0) m = n;
  if (k < 0) k = n;
  if (check && fold) {
    std::fprintf(stderr, "simulate_pdgemm: --check and --fold exclude each other (folded blocks share their pages)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  flop_charging_dgemm_computes(check ? 1 : 0);
#if SIMULATE_DROPIN
  // Before the first call, the same on every rank (detail/simulation.hpp).
  shardwise::detail::simulation::compute().store(check);
  shardwise::detail::simulation::fold().store(fold);
#endif

  int me = 0, size = 0;
  Cblacs_pinfo(&me, &size);
  int p = 1, q = size;
  {
    double least = 1e300;
    const int fewest = shardwise::AnyMeshOptions{.allow_idle = allow_idle}.fewest_ranks(size);
    for (int used = size; used >= fewest; --used)  // all ranks first: fewer win only on bytes
      for (int rows = 1; rows <= used; ++rows) {
        if (used % rows != 0) continue;
        // As shardwise's planner weighs a plan on fewer ranks: each of them computes size / used
        // of a full share, so idling pays only where it cuts the bytes by more.
        const double bytes = summa_estimate(m, k, n, rows, used / rows) * size / used;
        const bool equal = bytes <= least * (1 + 1e-12) && bytes >= least * (1 - 1e-12);
        const auto squareness = [](int a, int b) { return std::abs(a - b); };
        const bool better_shaped = used == p * q && (squareness(rows, used / rows) < squareness(p, q) ||
                                   (squareness(rows, used / rows) == squareness(p, q) && (m > n ? rows > p : rows < p)));
        if (bytes < least * (1 - 1e-12) || (equal && better_shaped)) least = bytes, p = rows, q = used / rows;
      }
  }
  if (grid_p > 0) {
    if (grid_p < 1 || grid_q < 1 || grid_p * grid_q > size) {
      if (me == 0) std::fprintf(stderr, "simulate_pdgemm: --grid %dx%d needs more than the %d ranks\n", grid_p, grid_q, size);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    p = grid_p, q = grid_q;
  }
  int context = 0, rows = 0, cols = 0, my_row = -1, my_col = -1;
  Cblacs_get(-1, 0, &context);
  Cblacs_gridinit(&context, "Row", p, q);  // ranks p q and above get no grid: they idle
  const bool in_grid = me < p * q;
  if (in_grid) Cblacs_gridinfo(context, &rows, &cols, &my_row, &my_col);

  // gemm: A m x k, B k x n, C m x n. tran: A n x m, C m x n. gemr2d: A m x n, its copy C m x n
  // in blocks of 2 NB.
  const int c_nb = routine == "gemr2d" ? 2 * nb : nb;
  std::optional<Local> a, b, c;
  if (in_grid) {
    if (routine == "tran") a.emplace(n, m, nb, context, my_row, my_col, p, q, fold);
    else a.emplace(m, product ? k : n, nb, context, my_row, my_col, p, q, fold);
    if (product) b.emplace(k, n, nb, context, my_row, my_col, p, q, fold);
    c.emplace(m, n, c_nb, context, my_row, my_col, p, q, fold);
  }
  if (check && in_grid)
  {
    for (int j = 0; j < a->cols; ++j)
      for (int i = 0; i < a->rows; ++i) a->at(i, j) = element(0, global_index(i, nb, my_row, p), global_index(j, nb, my_col, q));
    if (product)
      for (int j = 0; j < b->cols; ++j)
        for (int i = 0; i < b->rows; ++i) b->at(i, j) = element(1, global_index(i, nb, my_row, p), global_index(j, nb, my_col, q));
  }
  const int one = 1;
  const double alpha = 1.0, beta = 0.0;
  auto run = [&] {
    if (!in_grid) return;
    if (routine == "tran") pdtran_(&m, &n, &alpha, a->data, &one, &one, a->desc, &beta, c->data, &one, &one, c->desc);
#if !defined(SIMULATE_NO_PDGEMR2D)
    else if (routine == "gemr2d") pdgemr2d_(&m, &n, a->data, &one, &one, a->desc, c->data, &one, &one, c->desc, &context);
#endif
    else
      pdgemm_("N", "N", &m, &n, &k, &alpha, a->data, &one, &one, a->desc, b->data, &one, &one, b->desc, &beta, c->data,
              &one, &one, c->desc);
  };
  run();
#if SIMULATE_DROPIN
  const shardwise::scalapack::PgemmStats first = shardwise::scalapack::pgemm_stats();
  const shardwise::scalapack::RedistributionStats first_copy =
      routine == "tran" ? shardwise::scalapack::ptran_stats() : shardwise::scalapack::pgemr2d_stats();
#endif
  double error = 0;
  if (check && in_grid)
    for (int j = 0; j < c->cols; ++j)
      for (int i = 0; i < c->rows; ++i) {
        const long gi = global_index(i, c_nb, my_row, p), gj = global_index(j, c_nb, my_col, q);
        double want = 0;
        if (routine == "tran") want = element(0, gj, gi);
        else if (routine == "gemr2d") want = element(0, gi, gj);
        else
          for (long l = 0; l < k; ++l) want += element(0, gi, l) * element(1, l, gj);
        error = std::max(error, std::abs(c->at(i, j) - want));
      }
  double seconds = 1e300;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    run();
    double elapsed = MPI_Wtime() - start;
    MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    seconds = std::min(seconds, elapsed);
  }
  MPI_Allreduce(MPI_IN_PLACE, &error, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  std::string label = "pd" + routine;
  bool handed_back = false;  // the drop-in refused the call (no PDGEMM follows it here)
  char way[64] = "";
  double estimate = product ? summa_estimate(m, k, n, p, q) / (1 << 20)
                            : 8.0 * m * n / (static_cast<double>(p) * q) / (1 << 20);
  const char* estimate_note = product ? "SUMMA estimate" : "share";
#if SIMULATE_DROPIN
  if (!product) {
    // The untimed first call's bytes sent, the busiest rank's, as the drop-in counts them.
    double sent = static_cast<double>(first_copy.sent_bytes);
    MPI_Allreduce(MPI_IN_PLACE, &sent, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    handed_back = first_copy.not_covered > 0;
    if (handed_back) std::snprintf(way, sizeof way, " (handed back: not simulated)");
    label = "dropin " + routine;
    estimate = sent / (1 << 20);
    estimate_note = "counted";
  } else {
    // The untimed first call's way (every timed call repeats it) and the busiest rank's bytes
    // sent in it: the redistribution's and the plan's, as the drop-in counts them.
    const shardwise::scalapack::PgemmStats s = first;
    double sent = static_cast<double>(s.redistributed_bytes + s.plan_bytes);
    MPI_Allreduce(MPI_IN_PLACE, &sent, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    handed_back = s.not_covered > 0;
    const char* name = handed_back   ? "handed back: not simulated"
                       : s.planned == 0 ? "not planned"
                       : s.local > 0   ? "local"
                       : s.in_place > 0 ? "in place"
                       : s.reduced > 0  ? "reduced"
                       : s.gathered > 0 ? "gathered"
                                        : (s.relabeled > 0 ? "redistributed, relabeled" : "redistributed");
    std::snprintf(way, sizeof way, " (%s)", name);
    label = "dropin";
    estimate = sent / (1 << 20);
    estimate_note = "counted";
  }
#endif
  if (me == 0) {
    const double mm = m, kk = k, nn = n, gflops = product ? 2.0 * mm * kk * nn / seconds / 1e9 : 0.0;
    const double peak = sg_host_get_speed(sg_host_self()) * size / 1e9;
    const double bound = product ? 8.0 * shardwise::matmul_lower_bound(m, k, n, size).words / (1 << 20) : 0.0;
    char mesh[64];
    if (p * q < size) std::snprintf(mesh, sizeof mesh, "%dx%d (%d idle)%s", p, q, size - p * q, way);
    else std::snprintf(mesh, sizeof mesh, "%dx%d%s", p, q, way);
    std::printf("| %d | %d | %d | %d | %s nb:%d | %s | block-cyclic %d x %d | %.6f | %.2f | %.1f | - | %.3f (%s) | - | "
                "%.3f | %.3f (%s) | %s |\n",
                size, m, k, n, label.c_str(), nb, mesh, nb, nb, seconds, gflops, 100.0 * gflops / peak, estimate, estimate_note,
                bound, bound > 0 ? estimate / bound : 0.0, SIMULATE_DROPIN ? "counted" : "estimate",
                check ? (error == 0.0 ? "exact" : "WRONG") : "not computed");
    std::fflush(stdout);
  }
  if (in_grid) Cblacs_gridexit(context);
#if SIMULATE_DROPIN
  // The executor's and the drop-in's folded buffers are SMPI's: given back before MPI_Finalize,
  // not at exit, where SMPI's shared free crashes (as simulate_matmul does).
  shardwise::detail::Workspace::local().release();
  shardwise::scalapack::detail::workspace<double>() = {};  // the drop-in's own (folding) buffers
#endif
  MPI_Finalize();
  return error == 0.0 && !handed_back ? 0 : 1;
}
