// shardwise/scalapack/pgemm.hpp: ScaLAPACK's p?gemm, computed by shardwise.
//
//   sub(C) := alpha op(sub(A)) op(sub(B)) + beta sub(C)
//
// with ScaLAPACK's arguments: TRANSA/TRANSB ('N', 'T', 'C'; either case), any M, N, K, the
// submatrices' first rows and columns (IA, JA, ...; 1-based) and descriptors with any MB/NB,
// RSRC/CSRC and LLD, on a BLACS grid in either order. The local arrays are ScaLAPACK's:
// column-major, leading dimension LLD.
//
// How: the operands' blocks are redistributed from their block-cyclic layout into the layout
// where the planner's cheapest plan over every mesh of the grid's P ranks starts
// (plan_matmul_any_mesh with every rank busy: a plan that idles ranks would need its own
// sub-communicator here; 1-D, 2-D SUMMA, 3-D, 2.5D, ...; op() and the submatrix offsets are
// applied while packing, so a transpose costs no extra pass), the plan runs through the one
// executor, and C's blocks go back to their block-cyclic owners, where alpha and beta are
// applied (beta = 0 never reads C, as in the BLAS). One all-to-all per operand, then the plan.
// This is COSMA's choice for pdgemm (redistribute, run the communication-optimal plan,
// redistribute back); its bytes are counted in PgemmStats.
//
// Three ways move less, and are taken where their modeled traffic on the busiest rank (bytes,
// then messages) is below the redistribution's: SUMMA over the k blocks in place (ScaLAPACK's
// aligned case, op 'N' both; PgemmStats::in_place); where op(A) or op(B) is transposed and
// sub(A)'s and sub(B)'s k indices are dealt alike over the grid (CP2K's C^T S C on a P x 1
// grid), each process's partial product over the k indices it holds, summed onto sub(C)'s
// owners by one reduce-scatter (PgemmStats::reduced); and where op(A) is transposed, the k rows
// lie on one process row and sub(C)'s columns as sub(B)'s (the same product on a 1 x P grid),
// sub(A) gathered along that row, each process then computing its columns of sub(C)
// (PgemmStats::gathered). The models are cached per call shape, as the plans are.
//
// pgemm() is collective over the grid. Its arguments are checked on every rank and the
// verdicts combined, with the ways' modeled costs, in one small all-reduce, so every rank takes
// the same path: computed here, or refused with the same reason everywhere (the drop-in library
// then hands the call to ScaLAPACK's own routine, which reports invalid arguments as ScaLAPACK
// does).
//
// Except the calls that need no communication, which each rank recognizes from the arguments
// alone and answers without that all-reduce (ScaLAPACK requires the same arguments on every
// process and checks nothing across ranks either): no product (M, N or K = 0, alpha = 0:
// C := beta C where it lies), and sub(A), sub(B), sub(C) all held by one process (a 1 x 1 grid,
// or a product whose sub(C) is one block and whose op(sub(A)) rows and op(sub(B)) columns lie on
// the same process): that process runs the local GEMM on its arrays, the others return at once
// (PgemmStats::local). PDGEMM does no more on such a call.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <climits>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "shardwise/comm/mpi.hpp"
#include "shardwise/kernels/cyclic_summa.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/plan/sharding_planner.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/scalapack/block_cyclic.hpp"

namespace shardwise::scalapack {

/// A BLACS process grid: `comm` holds its ranks in row-major order (rank = row * cols + col),
/// which is how BLACS numbers the processes of a grid in either grid order.
struct Grid {
  MPI_Comm comm = MPI_COMM_NULL;  ///< The grid's communicator.
  int rows = 1;                   ///< NPROW.
  int cols = 1;                   ///< NPCOL.
  int row = 0;                    ///< This process's MYROW.
  int col = 0;                    ///< This process's MYCOL.
};

/// A ScaLAPACK array descriptor (DTYPE_ = 1: dense block-cyclic; the 9 integers in order).
struct Descriptor {
  int dtype = 1;    ///< DTYPE_: 1 for a dense matrix.
  int context = 0;  ///< CTXT_: the BLACS context of the grid.
  int m = 0;        ///< M_: global rows.
  int n = 0;        ///< N_: global columns.
  int mb = 1;       ///< MB_: rows per block.
  int nb = 1;       ///< NB_: columns per block.
  int rsrc = 0;     ///< RSRC_: the process row of the first block row.
  int csrc = 0;     ///< CSRC_: the process column of the first block column.
  int lld = 1;      ///< LLD_: the leading dimension of the local array.

  /// From the 9 integers of DESC.
  static Descriptor from(const int* d) { return {d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8]}; }
  /// The distribution of the rows on grid `g`.
  [[nodiscard]] BlockCyclicDim row_dim(const Grid& g) const { return {m, mb, rsrc, g.rows}; }
  /// The distribution of the columns on grid `g`.
  [[nodiscard]] BlockCyclicDim col_dim(const Grid& g) const { return {n, nb, csrc, g.cols}; }
};

/// How a call ended.
enum class PgemmResult {
  computed,      ///< shardwise computed sub(C) (including the cases that need no product).
  not_covered,   ///< refused on every rank; `reason` says why (the drop-in falls back).
};

/// A call's outcome.
struct PgemmOutcome {
  PgemmResult result = PgemmResult::computed;  ///< Computed here, or not covered.
  std::string reason;  ///< Why it was not covered (the same text on every rank).
};

/// What this process's calls did, since the start or the last reset: the answer of
/// shardwise::scalapack::pgemm_stats.
struct PgemmStats {
  std::int64_t calls = 0;             ///< pgemm() calls.
  std::int64_t planned = 0;           ///< Calls that ran a plan.
  std::int64_t without_product = 0;   ///< Calls answered without a product (M or N = 0, alpha = 0, K = 0).
  std::int64_t not_covered = 0;       ///< Calls refused (see PgemmOutcome::reason).
  std::int64_t in_place = 0;          ///< Calls computed in place: SUMMA over the k blocks, no redistribution.
  std::int64_t local = 0;             ///< Calls whose sub(A), sub(B) and sub(C) one process holds: computed
                                      ///< there, no communication, no agreement (on every rank of the grid).
  std::int64_t reduced = 0;           ///< Calls computed as each process's partial product over the k indices
                                      ///< it holds of both operands, summed onto sub(C)'s owners (op 'T'/'C').
  std::int64_t gathered = 0;          ///< Calls computed by gathering sub(A) along the grid's row, where the
                                      ///< k rows lie on one process row and C's columns as B's (op(A) 'T'/'C').
  std::int64_t redistributed_bytes = 0;  ///< Bytes this rank sent to redistribute A, B and C.
  std::int64_t plan_bytes = 0;        ///< Bytes this rank sent in the plans (the cost model's figure).
};

namespace detail {

inline PgemmStats& stats() {
  static PgemmStats s;
  return s;
}

template <typename T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
  else if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
  else if constexpr (std::is_same_v<T, std::complex<float>>) return MPI_C_FLOAT_COMPLEX;
  else return MPI_C_DOUBLE_COMPLEX;
}

template <typename T>
T conjugated(const T& x) {
  if constexpr (shardwise::detail::is_complex_v<T>) return std::conj(x);
  else return x;
}

/// 'N' -> 0, 'T' -> 1, 'C' -> 2 (either case); -1 otherwise.
inline int op_code(char t) {
  switch (t) {
    case 'N': case 'n': return 0;
    case 'T': case 't': return 1;
    case 'C': case 'c': return 2;
    default: return -1;
  }
}

/// A rectangle of op-space: rows [row0, row0 + rows), columns [col0, col0 + cols).
struct Rect {
  std::int64_t row0 = 0, col0 = 0, rows = 0, cols = 0;
};

/// An operand as ScaLAPACK passes it: local array, the submatrix's first global row and
/// column (0-based here), its descriptor's distributions, and op.
template <typename Pointer>
struct BlockCyclicOperand {
  Pointer data = nullptr;
  std::int64_t ld = 1;
  std::int64_t row0 = 0, col0 = 0;  ///< IA - 1, JA - 1
  BlockCyclicDim rows, cols;
  int op = 0;  ///< 0: as is; 1: transposed; 2: conjugate-transposed

  /// The rows and columns of the array's own index space that an op-space rectangle covers.
  [[nodiscard]] Rect source(const Rect& r) const {
    return op == 0 ? Rect{row0 + r.row0, col0 + r.col0, r.rows, r.cols} : Rect{row0 + r.col0, col0 + r.row0, r.cols, r.rows};
  }
};

/// How many of the indices [0, end) of `d` process p holds: also the local index of the first
/// index at or after `end` that it holds (its indices are stored in order).
inline std::int64_t held_below(const BlockCyclicDim& d, int p, std::int64_t end) {
  return BlockCyclicDim{end, d.block, d.source, d.processes}.local_extent(p);
}

/// Calls f(run) for the runs of [first, first + count) that process p holds, in increasing
/// order (owned_runs, without a vector: the calls of a tiny p?gemm allocate nothing).
template <typename F>
void for_each_run(const BlockCyclicDim& d, int p, std::int64_t first, std::int64_t count, F&& f) {
  const std::int64_t end = first + count;
  for (std::int64_t g = first; g < end;) {
    const std::int64_t b = g / d.block;
    const int owner = static_cast<int>((d.source + b) % d.processes);
    if (owner == p) {
      const std::int64_t block_end = std::min(end, (b + 1) * d.block);
      f(IndexRun{g, d.local_index(g), block_end - g});
      g = block_end;
    } else {
      g = (b + (d.processes + p - owner) % d.processes) * d.block;  // p's next block
    }
  }
}

/// Calls f(global row, global column, local offset) for the elements of `source` that
/// process (p, q) holds, in a fixed order (column runs, columns, row runs, rows), which the
/// sender and the receiver both follow.
template <typename F>
void for_each_held(const BlockCyclicDim& rows, const BlockCyclicDim& cols, int p, int q, const Rect& source,
                   std::int64_t ld, F&& f) {
  if (source.rows <= 0 || source.cols <= 0) return;
  for_each_run(cols, q, source.col0, source.cols, [&](const IndexRun& c) {
    for (std::int64_t j = 0; j < c.length; ++j)
      for_each_run(rows, p, source.row0, source.rows, [&](const IndexRun& r) {
        for (std::int64_t i = 0; i < r.length; ++i) f(r.global + i, c.global + j, (c.local + j) * ld + r.local + i);
      });
  });
}

/// How many elements of `source` process (p, q) holds.
inline std::int64_t held_count(const BlockCyclicDim& rows, const BlockCyclicDim& cols, int p, int q, const Rect& source) {
  if (source.rows <= 0 || source.cols <= 0) return 0;
  const std::int64_t r = held_below(rows, p, source.row0 + source.rows) - held_below(rows, p, source.row0);
  const std::int64_t c = held_below(cols, q, source.col0 + source.cols) - held_below(cols, q, source.col0);
  return r * c;
}

/// Buffers kept from call to call: no allocation in the steady state.
template <typename Scalar>
struct pgemm_workspace {
  std::vector<Scalar> send, receive, a, b, c, partial;
  std::vector<std::int64_t> send_elements, receive_elements;  ///< per rank, before set_counts
  std::vector<int> send_counts, send_offsets, receive_counts, receive_offsets;
  std::vector<std::int64_t> held_rows, held_cols;  ///< the in-place SUMMA's cyclic_holders
};

template <typename Scalar>
pgemm_workspace<Scalar>& workspace() {
  static pgemm_workspace<Scalar> w;
  return w;
}

/// Sets the all-to-all counts and offsets (pgemm has checked that every total fits an int).
inline void set_counts(const std::vector<std::int64_t>& counts, std::vector<int>& out, std::vector<int>& offsets) {
  out.resize(counts.size());
  offsets.resize(counts.size());
  std::int64_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    out[i] = static_cast<int>(counts[i]);
    offsets[i] = static_cast<int>(total);
    total += counts[i];
  }
}

/// The all-to-all both redistributions make: w.send_elements[d] elements to rank d, packed by
/// pack(w.send.data()) in rank order; w.receive_elements[s] from rank s land in w.receive.
template <typename Scalar, typename Pack>
void exchange(const Grid& grid, pgemm_workspace<Scalar>& w, Pack&& pack) {
  const int me = grid.row * grid.cols + grid.col;
  std::int64_t send_total = 0, receive_total = 0;
  for (std::int64_t e : w.send_elements) send_total += e;
  for (std::int64_t e : w.receive_elements) receive_total += e;
  set_counts(w.send_elements, w.send_counts, w.send_offsets);
  set_counts(w.receive_elements, w.receive_counts, w.receive_offsets);
  w.send.resize(static_cast<std::size_t>(std::max<std::int64_t>(send_total, 1)));
  w.receive.resize(static_cast<std::size_t>(std::max<std::int64_t>(receive_total, 1)));
  pack(w.send.data());
  MPI_Alltoallv(w.send.data(), w.send_counts.data(), w.send_offsets.data(), mpi_type<Scalar>(), w.receive.data(),
                w.receive_counts.data(), w.receive_offsets.data(), mpi_type<Scalar>(), grid.comm);
  stats().redistributed_bytes += static_cast<std::int64_t>(sizeof(Scalar)) *
                                 (send_total - w.send_elements[static_cast<std::size_t>(me)]);
}

using Cube = Mesh<Axis<"x", dynamic_extent>, Axis<"y", dynamic_extent>, Axis<"z", dynamic_extent>>;

/// A plan for one (P, m, n, k, scalar size): its mesh, its lowered program, and where A, B
/// and C start and end (each rank's rectangle of op(sub(A)), op(sub(B)) and the product).
struct cached_plan {
  MeshedMatmulChoice planned;
  shardwise::detail::program program;
  Cube cube{1, 1, 1};
  std::vector<Rect> rect_a, rect_b, rect_c;
};

inline std::vector<Rect> rectangles(const shardwise::detail::tensor_axes& t, std::int64_t rows, std::int64_t cols,
                                    const Cube& cube);

/// The process groups of the plans' meshes over one grid's communicator. Kept as an MPI
/// attribute of that communicator, so that they are made on every rank of the grid at the
/// same call (a new communicator has none on any rank) and freed with it (BLACS_GRIDEXIT): a
/// handle is a per-process value that MPI may reuse, never a key.
struct grid_meshes {
  std::map<std::array<int, 3>, std::unique_ptr<ProcessGroupMesh<Cube>>> meshes;
};

inline int grid_meshes_keyval() {
  static const int key = [] {
    int k = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(
        MPI_COMM_NULL_COPY_FN,
        [](MPI_Comm, int, void* attribute, void*) -> int {
          delete static_cast<grid_meshes*>(attribute);
          return MPI_SUCCESS;
        },
        &k, nullptr);
    return k;
  }();
  return key;
}

inline grid_meshes& meshes_of_grid(MPI_Comm comm) {
  void* attribute = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm, grid_meshes_keyval(), &attribute, &found);
  if (found) return *static_cast<grid_meshes*>(attribute);
  auto* fresh = new grid_meshes;
  MPI_Comm_set_attr(comm, grid_meshes_keyval(), fresh);
  return *fresh;
}

inline std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t, int, std::int64_t>,
                std::unique_ptr<cached_plan>>&
plan_cache() {
  static std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t, int, std::int64_t>,
                  std::unique_ptr<cached_plan>>
      cache;
  return cache;
}

/// Bytes per rank the plan may hold: by default four times the rank's share of A, B and C
/// plus 16 MiB (room for the replicas a 2.5D or 3-D plan keeps); SHARDWISE_PGEMM_BUDGET_MIB
/// overrides it (a negative value counts as 0: no plan fits, ScaLAPACK computes every call that
/// needs one; the local calls need none).
inline std::int64_t budget_bytes(int ranks, std::int64_t m, std::int64_t n, std::int64_t k, int scalar_bytes) {
  if (const char* env = std::getenv("SHARDWISE_PGEMM_BUDGET_MIB"); env != nullptr && *env != '\0')
    return std::max<std::int64_t>(0, std::atoll(env)) << 20;
  return 4 * scalar_bytes * ((m * k + k * n + m * n) / ranks + 1) + (std::int64_t{16} << 20);
}

inline const cached_plan* plan_for(int ranks, std::int64_t m, std::int64_t n, std::int64_t k, int scalar_bytes) {
  const std::int64_t budget = budget_bytes(ranks, m, n, k, scalar_bytes);
  const auto key = std::make_tuple(ranks, m, n, k, scalar_bytes, budget);
  auto& cache = plan_cache();
  if (auto it = cache.find(key); it != cache.end()) return it->second.get();
  auto entry = std::make_unique<cached_plan>();
  entry->planned = plan_matmul_any_mesh(ranks, {{.m = m, .k = k, .n = n}, scalar_bytes, budget});
  if (!entry->planned.choice.found) return cache.emplace(key, nullptr).first->second.get();
  const auto& choice = entry->planned.choice;
  const auto row_major = shardwise::detail::dim_order::row_major(2);
  entry->program = shardwise::detail::lower(choice.plan.steps, choice.plan.start, shardwise::detail::matmul_indices,
                                            choice.panel_width, row_major, row_major, {}, row_major);
  std::array<int, 3> extents{1, 1, 1};
  for (int a = 0; a < entry->planned.mesh.ndim; ++a)
    extents[static_cast<std::size_t>(a)] = entry->planned.mesh.extents[static_cast<std::size_t>(a)];
  entry->cube = Cube{extents[0], extents[1], extents[2]};
  entry->rect_a = rectangles(choice.plan.start[Operand::A], m, k, entry->cube);
  entry->rect_b = rectangles(choice.plan.start[Operand::B], k, n, entry->cube);
  entry->rect_c = rectangles(choice.c, m, n, entry->cube);
  return cache.emplace(key, std::move(entry)).first->second.get();
}

inline ProcessGroupMesh<Cube>& groups_for(MPI_Comm comm, const Cube& cube) {
  auto& meshes = meshes_of_grid(comm).meshes;
  const std::array<int, 3> key{cube.extent(0), cube.extent(1), cube.extent(2)};
  auto& slot = meshes[key];
  if (!slot) slot = std::make_unique<ProcessGroupMesh<Cube>>(MpiCommunicator(comm), cube);
  return *slot;
}

/// Each rank's rectangle of an m x n operand stored as `t` on the plan's mesh.
inline std::vector<Rect> rectangles(const shardwise::detail::tensor_axes& t, std::int64_t rows, std::int64_t cols, const Cube& cube) {
  std::vector<Rect> r(static_cast<std::size_t>(cube.size()));
  for (int rank = 0; rank < cube.size(); ++rank) {
    const shardwise::detail::block_geometry geo(cube, cube.unravel(rank));
    const shardwise::detail::tensor_extents local = shardwise::detail::local_extents(t, {rows, cols}, geo);
    r[static_cast<std::size_t>(rank)] = {geo.offset(rows, t.dim(0)), geo.offset(cols, t.dim(1)), local[0], local[1]};
  }
  return r;
}

/// One all-to-all over the grid: op(sub(X)) into each rank's rectangle `to`, row-major.
template <typename Scalar>
void block_cyclic_to_blocks(const BlockCyclicOperand<const Scalar*>& x, const Grid& grid,
                            const std::vector<Rect>& to, std::vector<Scalar>& out, pgemm_workspace<Scalar>& w) {
  const int ranks = grid.rows * grid.cols, me = grid.row * grid.cols + grid.col;
  const Rect mine = to[static_cast<std::size_t>(me)];
  w.send_elements.resize(static_cast<std::size_t>(ranks));
  w.receive_elements.resize(static_cast<std::size_t>(ranks));
  for (int d = 0; d < ranks; ++d) {
    w.send_elements[static_cast<std::size_t>(d)] =
        held_count(x.rows, x.cols, grid.row, grid.col, x.source(to[static_cast<std::size_t>(d)]));
    w.receive_elements[static_cast<std::size_t>(d)] =
        held_count(x.rows, x.cols, d / grid.cols, d % grid.cols, x.source(mine));
  }
  exchange(grid, w, [&](Scalar* packed) {
    for (int d = 0; d < ranks; ++d)
      for_each_held(x.rows, x.cols, grid.row, grid.col, x.source(to[static_cast<std::size_t>(d)]), x.ld,
                    [&](std::int64_t, std::int64_t, std::int64_t offset) { *packed++ = x.data[offset]; });
  });
  out.resize(static_cast<std::size_t>(std::max<std::int64_t>(mine.rows * mine.cols, 1)));
  const Rect source = x.source(mine);
  const Scalar* next = w.receive.data();
  for (int s = 0; s < ranks; ++s)
    for_each_held(x.rows, x.cols, s / grid.cols, s % grid.cols, source, x.ld,
                  [&](std::int64_t gr, std::int64_t gc, std::int64_t) {
                    const std::int64_t i = gr - source.row0, j = gc - source.col0;  // in the source rectangle
                    if (x.op == 0) out[static_cast<std::size_t>(i * mine.cols + j)] = *next++;
                    else if (x.op == 1) out[static_cast<std::size_t>(j * mine.cols + i)] = *next++;
                    else out[static_cast<std::size_t>(j * mine.cols + i)] = conjugated(*next++);
                  });
}

/// This rank's elements of `source` (a rectangle of C's index space) := alpha * (the next
/// values, in for_each_held's order) + beta * C, where the product lands; beta = 0 does not read C.
/// Returns the value after the last one read.
template <typename Scalar>
const Scalar* store_scaled(const Scalar* next, const BlockCyclicOperand<Scalar*>& c, const Grid& grid,
                           const Rect& source, Scalar alpha, Scalar beta) {
  const bool read_c = beta != Scalar(0);
  for_each_held(c.rows, c.cols, grid.row, grid.col, source, c.ld, [&](std::int64_t, std::int64_t, std::int64_t offset) {
    const Scalar v = alpha * *next++;
    c.data[offset] = read_c ? v + beta * c.data[offset] : v;
  });
  return next;
}

/// One all-to-all over the grid: each rank's rectangle `from` of the product (row-major in
/// `in`) to sub(C)'s block-cyclic owners, which store alpha * value + beta * C.
template <typename Scalar>
void blocks_to_block_cyclic(const std::vector<Scalar>& in, const std::vector<Rect>& from, const Grid& grid,
                            const BlockCyclicOperand<Scalar*>& c, Scalar alpha, Scalar beta,
                            pgemm_workspace<Scalar>& w) {
  const int ranks = grid.rows * grid.cols, me = grid.row * grid.cols + grid.col;
  const Rect mine = c.source(from[static_cast<std::size_t>(me)]);
  w.send_elements.resize(static_cast<std::size_t>(ranks));
  w.receive_elements.resize(static_cast<std::size_t>(ranks));
  for (int d = 0; d < ranks; ++d) {
    w.send_elements[static_cast<std::size_t>(d)] = held_count(c.rows, c.cols, d / grid.cols, d % grid.cols, mine);
    w.receive_elements[static_cast<std::size_t>(d)] =
        held_count(c.rows, c.cols, grid.row, grid.col, c.source(from[static_cast<std::size_t>(d)]));
  }
  exchange(grid, w, [&](Scalar* packed) {
    for (int d = 0; d < ranks; ++d)
      for_each_held(c.rows, c.cols, d / grid.cols, d % grid.cols, mine, c.ld,
                    [&](std::int64_t gr, std::int64_t gc, std::int64_t) {
                      *packed++ = in[static_cast<std::size_t>((gr - mine.row0) * mine.cols + (gc - mine.col0))];
                    });
  });
  const Scalar* next = w.receive.data();
  for (int s = 0; s < ranks; ++s) next = store_scaled(next, c, grid, c.source(from[static_cast<std::size_t>(s)]), alpha, beta);
}

/// sub(C) := beta sub(C) on this rank's elements (beta = 0: zeros, C not read).
template <typename Scalar>
void scale_local(const BlockCyclicOperand<Scalar*>& c, const Grid& grid, std::int64_t m, std::int64_t n, Scalar beta) {
  if (beta == Scalar(1)) return;
  for_each_held(c.rows, c.cols, grid.row, grid.col, Rect{c.row0, c.col0, m, n}, c.ld,
                [&](std::int64_t, std::int64_t, std::int64_t offset) {
                  c.data[offset] = beta == Scalar(0) ? Scalar(0) : beta * c.data[offset];
                });
}

/// What this rank sends to others (bytes, and the ranks it sends to) when op(sub(X)) goes to
/// the ranks' rectangles `to` (block_cyclic_to_blocks' exchange), or when the rectangles `from`
/// of a product go back to sub(C)'s owners (blocks_to_block_cyclic's): the model of the
/// redistribution's traffic.
inline Traffic sent_elements(std::int64_t elements, std::int64_t scalar_bytes) {
  return elements > 0 ? Traffic{elements * scalar_bytes, 1} : Traffic{};
}
template <typename Pointer>
Traffic sent_to_rectangles(const BlockCyclicOperand<Pointer>& x, const Grid& grid, const std::vector<Rect>& to,
                           std::int64_t scalar_bytes) {
  const int ranks = grid.rows * grid.cols, me = grid.row * grid.cols + grid.col;
  Traffic total;
  for (int d = 0; d < ranks; ++d)
    if (d != me)
      total += sent_elements(held_count(x.rows, x.cols, grid.row, grid.col, x.source(to[static_cast<std::size_t>(d)])),
                             scalar_bytes);
  return total;
}
template <typename Pointer>
Traffic sent_from_rectangles(const BlockCyclicOperand<Pointer>& c, const Grid& grid, const std::vector<Rect>& from,
                             std::int64_t scalar_bytes) {
  const int ranks = grid.rows * grid.cols, me = grid.row * grid.cols + grid.col;
  const Rect mine = c.source(from[static_cast<std::size_t>(me)]);
  Traffic total;
  for (int d = 0; d < ranks; ++d)
    if (d != me) total += sent_elements(held_count(c.rows, c.cols, d / grid.cols, d % grid.cols, mine), scalar_bytes);
  return total;
}

/// Whether sub(C) = op(sub(A)) op(sub(B)) is ScaLAPACK's aligned case, which SUMMA over the k
/// blocks computes in the operands' own arrays: no transposes, A's column blocks the size of
/// B's row blocks with sub(A) and sub(B) starting at the same place within a block, and sub(C)
/// distributed as sub(A)'s rows and sub(B)'s columns.
inline bool aligned(int opa, int opb, const Descriptor& da, int ia, int ja, const Descriptor& db, int ib, int jb,
                    const Descriptor& dc, int ic, int jc) {
  return opa == 0 && opb == 0 && da.nb > 0 && da.nb == db.mb && (ja - 1) % da.nb == (ib - 1) % db.mb && ia == ic &&
         da.mb == dc.mb && da.rsrc == dc.rsrc && jb == jc && db.nb == dc.nb && db.csrc == dc.csrc;
}

/// The process coordinate along `d` that holds all of the indices [first, first + count)
/// (count > 0): the one there is, or the owner of their single block; -1 when several hold them.
inline int sole_owner(const BlockCyclicDim& d, std::int64_t first, std::int64_t count) {
  if (d.processes == 1) return 0;
  if (first / d.block != (first + count - 1) / d.block) return -1;
  return d.owner(first);
}

/// The in-place SUMMA's k panels (aligned() holds).
inline shardwise::detail::cyclic_panels in_place_panels(std::int64_t k, const Descriptor& da, int ja,
                                                        const Descriptor& db, int ib, const Grid& grid) {
  return {k, da.nb, da.csrc, db.rsrc, grid.cols, grid.rows, ja - 1, ib - 1};
}

/// ScaLAPACK's transposed case that partial products compute where the operands lie: op(A) =
/// A^T or A^H with B as is, or A as is with op(B) = B^T or B^H, so that the k indices of sub(A)
/// and sub(B) run along the same grid axis (rows for op(A) transposed, columns for op(B)); they
/// are dealt alike (one block size, the same place within a block, the same first process), and
/// sub(A)'s other indices (C's m) and sub(B)'s (C's n) all lie on one line of the grid (one
/// grid column, or row: a P x 1 or 1 x P grid, or a block each). Then each process of that
/// line holds, for the k indices it holds, all of op(sub(A))'s rows and op(sub(B))'s columns:
/// its partial product is all of sub(C)'s m x n, and sub(C) is their sum (CP2K's C^T S C with
/// tall C and S C on a P x 1 grid). M, N, K > 0.
struct reduction_split {
  bool possible = false;
  int line = 0;  ///< the grid column (op(A) transposed) or row (op(B) transposed) that holds them
};
inline reduction_split split_over_k(int opa, int opb, std::int64_t m, std::int64_t n, const Descriptor& da, int ia,
                                    int ja, const Descriptor& db, int ib, int jb, const Grid& grid) {
  if ((opa == 0) == (opb == 0)) return {};
  const bool rows = opa != 0;  // k along A's and B's rows (op(A) transposed), else along their columns
  const BlockCyclicDim ka = rows ? da.row_dim(grid) : da.col_dim(grid), kb = rows ? db.row_dim(grid) : db.col_dim(grid);
  const std::int64_t fa = rows ? ia - 1 : ja - 1, fb = rows ? ib - 1 : jb - 1;
  if (ka.block != kb.block || fa % ka.block != fb % kb.block || ka.owner(fa) != kb.owner(fb)) return {};
  const int line_a = sole_owner(rows ? da.col_dim(grid) : da.row_dim(grid), rows ? ja - 1 : ia - 1, m);
  const int line_b = sole_owner(rows ? db.col_dim(grid) : db.row_dim(grid), rows ? jb - 1 : ib - 1, n);
  if (line_a < 0 || line_a != line_b) return {};
  return {true, line_a};
}

/// What the rank at (row, col) sends in reduced_pgemm's reduce-scatter, modeled as a ring: its
/// partial sums of every element of sub(C) (`target`) but those it holds, in P - 1 messages.
inline Traffic reduction_traffic(const BlockCyclicDim& c_rows, const BlockCyclicDim& c_cols, int row, int col,
                                 const Rect& target, int ranks, std::int64_t scalar_bytes) {
  if (ranks <= 1) return {};
  return {scalar_bytes * (target.rows * target.cols - held_count(c_rows, c_cols, row, col, target)), ranks - 1};
}

/// ScaLAPACK's transposed case on a grid of one process row, or where the k indices lie on one:
/// op(A) = A^T or A^H with B as is, sub(A)'s and sub(B)'s K rows and sub(C)'s M rows all on one
/// process row, and sub(C)'s columns dealt as sub(B)'s (one block size, the same place within a
/// block, the same first process). Then each process of that row gathers all of sub(A) (K x M)
/// along the row and computes its own columns of sub(C) with one local GEMM, alpha and beta
/// included; B and C do not move (CP2K's C^T S C on a 1 x P grid). The row, or -1.
inline int gather_row(int opa, int opb, std::int64_t m, std::int64_t k, const Descriptor& da, int ia,
                      const Descriptor& db, int ib, int jb, const Descriptor& dc, int ic, int jc, const Grid& grid) {
  if (opa == 0 || opb != 0) return -1;
  const int row = sole_owner(da.row_dim(grid), ia - 1, k);
  if (row < 0 || sole_owner(db.row_dim(grid), ib - 1, k) != row || sole_owner(dc.row_dim(grid), ic - 1, m) != row)
    return -1;
  const BlockCyclicDim bc = db.col_dim(grid), cc = dc.col_dim(grid);
  if (bc.block != cc.block || (jb - 1) % bc.block != (jc - 1) % cc.block || bc.owner(jb - 1) != cc.owner(jc - 1))
    return -1;
  return row;
}

/// What the rank at (row, col) sends in gathered_pgemm's all-gather of sub(A) along the grid
/// row `gather`, modeled as a ring: every rank's columns but its successor's, P - 1 messages.
inline Traffic gather_traffic(const BlockCyclicDim& a_cols, std::int64_t first, std::int64_t m, std::int64_t k,
                              int gather, int row, int col, std::int64_t scalar_bytes) {
  if (row != gather || a_cols.processes <= 1) return {};
  const int next = (col + 1) % a_cols.processes;
  const std::int64_t theirs = held_below(a_cols, next, first + m) - held_below(a_cols, next, first);
  return {scalar_bytes * k * (m - theirs), a_cols.processes - 1};
}

/// This rank's run of local indices of [first, first + count) in dimension d: (start, length).
inline std::pair<std::int64_t, std::int64_t> local_run(const BlockCyclicDim& d, int p, std::int64_t first,
                                                       std::int64_t count) {
  const std::int64_t start = held_below(d, p, first);
  return {start, held_below(d, p, first + count) - start};
}

/// The in-place SUMMA's holders: sub(C)'s rows on each grid row (sub(A)'s) and its columns on
/// each grid column (sub(B)'s), kept in w.
template <typename Scalar>
shardwise::detail::cyclic_holders in_place_holders(const Descriptor& da, int ia, std::int64_t m, const Descriptor& db,
                                                   int jb, std::int64_t n, const Grid& grid,
                                                   pgemm_workspace<Scalar>& w) {
  w.held_rows.resize(static_cast<std::size_t>(grid.rows));
  w.held_cols.resize(static_cast<std::size_t>(grid.cols));
  for (int r = 0; r < grid.rows; ++r) w.held_rows[static_cast<std::size_t>(r)] = local_run(da.row_dim(grid), r, ia - 1, m).second;
  for (int c = 0; c < grid.cols; ++c) w.held_cols[static_cast<std::size_t>(c)] = local_run(db.col_dim(grid), c, jb - 1, n).second;
  return {w.held_rows, w.held_cols};
}

/// Why an argument is out of ScaLAPACK's rules on this rank (empty: none). With `lld` false,
/// without the one check whose verdict may differ between processes that pass the same
/// arguments (LLD_ against this process's local rows).
inline std::string check_operand(const char* name, const Descriptor& d, const Grid& g, int i, int j,
                                 std::int64_t rows, std::int64_t cols, bool lld = true) {
  const std::string n = name;
  if (d.dtype != 1) return "DESC" + n + "(DTYPE_) is " + std::to_string(d.dtype) + ", not 1 (dense block-cyclic)";
  if (d.m < 0 || d.n < 0) return "DESC" + n + " has a negative extent";
  if (d.mb < 1 || d.nb < 1) return "DESC" + n + "'s block sizes MB and NB must be at least 1";
  if (d.rsrc < 0 || d.rsrc >= g.rows || d.csrc < 0 || d.csrc >= g.cols)
    return "DESC" + n + "'s RSRC/CSRC are outside the grid";
  if (lld && d.lld < std::max<std::int64_t>(1, d.row_dim(g).local_extent(g.row)))
    return "DESC" + n + "(LLD_) is smaller than the local rows";
  if (i < 1 || j < 1) return "I" + n + " and J" + n + " must be at least 1";
  if (rows > 0 && cols > 0 && (i - 1 + rows > d.m || j - 1 + cols > d.n))
    return "sub(" + n + ") reaches past the global " + n;
  return {};
}

/// Why the arguments of a call are out of ScaLAPACK's rules on this rank (empty: none); the
/// checks in the order pgemm() has always made them. With `lld` false, only the checks whose
/// verdict is the same on every process that passes the same arguments.
inline std::string check_arguments(int opa, int opb, int m, int n, int k, const Descriptor& da, int ia, int ja,
                                   const Descriptor& db, int ib, int jb, const Descriptor& dc, int ic, int jc,
                                   const Grid& grid, bool lld) {
  if (opa < 0) return "TRANSA is not 'N', 'T' or 'C'";
  if (opb < 0) return "TRANSB is not 'N', 'T' or 'C'";
  if (m < 0 || n < 0 || k < 0) return "M, N and K must not be negative";
  if (da.context != dc.context || db.context != dc.context) return "A, B and C are on different BLACS contexts";
  std::string problem = check_operand("C", dc, grid, ic, jc, m, n, lld);
  if (problem.empty()) problem = check_operand("A", da, grid, ia, ja, opa == 0 ? m : k, opa == 0 ? k : m, lld);
  if (problem.empty()) problem = check_operand("B", db, grid, ib, jb, opb == 0 ? k : n, opb == 0 ? n : k, lld);
  return problem;
}

/// sub(C) := alpha op(sub(A)) op(sub(B)) + beta sub(C) on the process that holds all three, in
/// its local arrays: a, b and c point at the submatrices' first elements (column-major, leading
/// dimensions lda, ldb, ldc; their local indices are consecutive, see sole_owner). beta = 0
/// does not read C. M, N, K > 0 and alpha != 0 (pgemm() answers the other calls before).
template <typename Scalar>
void local_pgemm(int opa, int opb, std::int64_t m, std::int64_t n, std::int64_t k, Scalar alpha, const Scalar* a,
                 std::int64_t lda, const Scalar* b, std::int64_t ldb, Scalar beta, Scalar* c, std::int64_t ldc) {
#if SHARDWISE_HAS_BLAS && !(defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE)
  // One BLAS call straight on the local arrays, alpha and beta included (the BLAS does not read
  // C when beta = 0): what PDGEMM's owner does. m, n, k and the LLDs are ScaLAPACK's ints.
  if (!has_eigen_backend || gemm_backend() == GemmBackend::blas) {
    const auto op = [](int o) { return o == 0 ? CblasNoTrans : o == 1 ? CblasTrans : CblasConjTrans; };
    const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
    const int la = static_cast<int>(lda), lb = static_cast<int>(ldb), lc = static_cast<int>(ldc);
    if constexpr (std::is_same_v<Scalar, double>)
      cblas_dgemm(CblasColMajor, op(opa), op(opb), mi, ni, ki, alpha, a, la, b, lb, beta, c, lc);
    else if constexpr (std::is_same_v<Scalar, float>)
      cblas_sgemm(CblasColMajor, op(opa), op(opb), mi, ni, ki, alpha, a, la, b, lb, beta, c, lc);
    else if constexpr (std::is_same_v<Scalar, std::complex<double>>)
      cblas_zgemm(CblasColMajor, op(opa), op(opb), mi, ni, ki, &alpha, a, la, b, lb, &beta, c, lc);
    else
      cblas_cgemm(CblasColMajor, op(opa), op(opb), mi, ni, ki, &alpha, a, la, b, lb, &beta, c, lc);
    return;
  }
#endif
  // Otherwise the kernels' GEMM (Eigen's) into a buffer, then alpha and beta.
  using shardwise::detail::matrix_view;
  auto& w = workspace<Scalar>();
  // op(sub(A)), m x k: as is (column-major), transposed (the same memory read row-major), or
  // conjugate-transposed (complex: packed column-major; real: the transpose).
  matrix_view<const Scalar> op_a{a, m, k, lda, opa != 0};
  if (opa == 2 && shardwise::detail::is_complex_v<Scalar>) {
    w.a.resize(static_cast<std::size_t>(m * k));
    for (std::int64_t j = 0; j < k; ++j)
      for (std::int64_t i = 0; i < m; ++i) w.a[static_cast<std::size_t>(i + j * m)] = conjugated(a[j + i * lda]);
    op_a = {w.a.data(), m, k, m, false};
  }
  matrix_view<const Scalar> op_b{b, k, n, ldb, opb != 0};
  if (opb == 2 && shardwise::detail::is_complex_v<Scalar>) {
    w.b.resize(static_cast<std::size_t>(k * n));
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < k; ++i) w.b[static_cast<std::size_t>(i + j * k)] = conjugated(b[j + i * ldb]);
    op_b = {w.b.data(), k, n, k, false};
  }
  // The product apart, then alpha and beta as the general path applies them.
  w.c.resize(static_cast<std::size_t>(m * n));
  shardwise::detail::gemm<Scalar>(matrix_view<Scalar>{w.c.data(), m, n, m, false}, op_a, op_b, false);
  const bool read_c = beta != Scalar(0);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      Scalar& into = c[j * ldc + i];
      const Scalar v = alpha * w.c[static_cast<std::size_t>(i + j * m)];
      into = read_c ? v + beta * into : v;
    }
}

/// sub(C) := alpha op(sub(A)) op(sub(B)) + beta sub(C) where split_over_k() holds: each
/// process of the split's line multiplies the k indices it holds of both operands, in its
/// local arrays (one local GEMM, m x n), the others contribute zeros, and one reduce-scatter
/// sums the partial products onto sub(C)'s owners, which apply alpha and beta. No operand
/// moves; reduction_traffic() is its model. Collective over the grid; M, N, K > 0.
template <typename Scalar>
void reduced_pgemm(std::int64_t m, std::int64_t n, std::int64_t k, Scalar alpha,
                   const BlockCyclicOperand<const Scalar*>& a, const BlockCyclicOperand<const Scalar*>& b, Scalar beta,
                   const BlockCyclicOperand<Scalar*>& c, const Grid& grid, const reduction_split& split,
                   pgemm_workspace<Scalar>& w) {
  const Rect sa = a.source({0, 0, m, k}), sb = b.source({0, 0, k, n});
  const auto [a_row0, a_rows] = local_run(a.rows, grid.row, sa.row0, sa.rows);
  const auto [a_col0, a_cols] = local_run(a.cols, grid.col, sa.col0, sa.cols);
  const auto [b_row0, b_rows] = local_run(b.rows, grid.row, sb.row0, sb.rows);
  const auto [b_col0, b_cols] = local_run(b.cols, grid.col, sb.col0, sb.cols);
  const bool on_line = (a.op != 0 ? grid.col : grid.row) == split.line;
  const std::int64_t local_k = a.op != 0 ? a_rows : a_cols;
  w.partial.resize(static_cast<std::size_t>(m * n));
  if (on_line && local_k > 0)
    local_pgemm<Scalar>(a.op, b.op, m, n, local_k, Scalar(1), a.data + a_row0 + a_col0 * a.ld, a.ld,
                        b.data + b_row0 + b_col0 * b.ld, b.ld, Scalar(0), w.partial.data(), m);
  else
    std::fill(w.partial.begin(), w.partial.end(), Scalar(0));
  static_cast<void>(b_rows), static_cast<void>(b_cols);  // b's are local_k and n on the line, by the split

  // The partial sums in the order of sub(C)'s owners (each one's elements as it stores them),
  // summed by one reduce-scatter (pgemm has checked that m n fits an int).
  const int ranks = grid.rows * grid.cols, me = grid.row * grid.cols + grid.col;
  const Rect target{c.row0, c.col0, m, n};
  w.receive_counts.resize(static_cast<std::size_t>(ranks));
  w.send.resize(static_cast<std::size_t>(m * n));
  Scalar* packed = w.send.data();
  for (int d = 0; d < ranks; ++d) {
    w.receive_counts[static_cast<std::size_t>(d)] =
        static_cast<int>(held_count(c.rows, c.cols, d / grid.cols, d % grid.cols, target));
    for_each_held(c.rows, c.cols, d / grid.cols, d % grid.cols, target, c.ld,
                  [&](std::int64_t gr, std::int64_t gc, std::int64_t) {
                    *packed++ = w.partial[static_cast<std::size_t>((gr - c.row0) + (gc - c.col0) * m)];
                  });
  }
  w.receive.resize(static_cast<std::size_t>(std::max(1, w.receive_counts[static_cast<std::size_t>(me)])));
  MPI_Reduce_scatter(w.send.data(), w.receive.data(), w.receive_counts.data(), mpi_type<Scalar>(), MPI_SUM,
                     grid.comm);
  store_scaled<Scalar>(w.receive.data(), c, grid, target, alpha, beta);
}

/// sub(C) := alpha op(sub(A)) sub(B) + beta sub(C) where gather_row() holds: the processes of
/// that grid row gather sub(A) (K x M, column-major, in global column order) along the row, and
/// each multiplies it into its own columns of sub(C) in place; the other rows hold none of C.
/// gather_traffic() is its model. Collective over the grid; M, N, K > 0.
template <typename Scalar>
void gathered_pgemm(std::int64_t m, std::int64_t n, std::int64_t k, Scalar alpha,
                    const BlockCyclicOperand<const Scalar*>& a, const BlockCyclicOperand<const Scalar*>& b,
                    Scalar beta, const BlockCyclicOperand<Scalar*>& c, const Grid& grid, int gather,
                    shardwise::detail::group_mesh_state& groups, pgemm_workspace<Scalar>& w) {
  if (grid.row != gather) return;
  AnyCommunicator& along_row = groups.group_along({1});  // the ranks of this grid row, by column
  const Rect sa = a.source({0, 0, m, k});                  // K x M in A's index space
  const auto [a_row0, a_rows] = local_run(a.rows, grid.row, sa.row0, sa.rows);
  const auto [a_col0, a_cols] = local_run(a.cols, grid.col, sa.col0, sa.cols);
  static_cast<void>(a_rows);  // k, by the gather row
  w.send_elements.resize(static_cast<std::size_t>(grid.cols));
  for (int q = 0; q < grid.cols; ++q)
    w.send_elements[static_cast<std::size_t>(q)] = k * (held_below(a.cols, q, sa.col0 + m) - held_below(a.cols, q, sa.col0));
  w.send.resize(static_cast<std::size_t>(std::max<std::int64_t>(1, k * a_cols)));
  for (std::int64_t j = 0; j < a_cols; ++j)
    std::copy_n(a.data + a_row0 + (a_col0 + j) * a.ld, k, w.send.data() + j * k);
  w.receive.resize(static_cast<std::size_t>(k * m));
  along_row.all_gather_v(std::span<const Scalar>(w.send.data(), static_cast<std::size_t>(k * a_cols)),
                         std::span<Scalar>(w.receive.data(), static_cast<std::size_t>(k * m)), w.send_elements);
  // Rank order to global column order: each rank's columns are its runs, in order.
  w.partial.resize(static_cast<std::size_t>(k * m));
  const Scalar* next = w.receive.data();
  for (int q = 0; q < grid.cols; ++q)
    for_each_run(a.cols, q, sa.col0, m, [&](const IndexRun& r) {
      std::copy_n(next, k * r.length, w.partial.data() + (r.global - sa.col0) * k);
      next += k * r.length;
    });
  const auto [b_row0, b_rows] = local_run(b.rows, grid.row, b.row0, k);
  const auto [b_col0, b_cols] = local_run(b.cols, grid.col, b.col0, n);
  const auto [c_row0, c_rows] = local_run(c.rows, grid.row, c.row0, m);
  const auto [c_col0, c_cols] = local_run(c.cols, grid.col, c.col0, n);
  static_cast<void>(b_rows), static_cast<void>(c_rows), static_cast<void>(c_cols);  // k, m, b_cols by the row
  if (b_cols > 0)
    local_pgemm<Scalar>(a.op, 0, m, b_cols, k, alpha, w.partial.data(), k, b.data + b_row0 + b_col0 * b.ld, b.ld,
                        beta, c.data + c_row0 + c_col0 * c.ld, c.ld);
}

/// The ways pgemm() computes a call that needs communication.
enum class way : int { in_place, reduced, gathered, redistributed };

/// Each way's modeled traffic on this rank for one call (unavailable ways: `none`), and the
/// redistribution's plan alone (its figure in PgemmStats::plan_bytes).
struct way_costs {
  static constexpr Traffic none{INT64_MAX / 4, INT64_MAX / 4};
  std::array<Traffic, 4> of{none, none, none, none};
  Traffic plan;
};

/// The costs, by the call's arguments (but LLD_ and the contexts) and its plan: a client calls
/// few shapes many times, and a tiny call should not spend its time modeling. Bounded.
inline std::map<std::array<std::int64_t, 36>, way_costs>& cost_cache() {
  static std::map<std::array<std::int64_t, 36>, way_costs> cache;
  return cache;
}

}  // namespace detail

/// This process's counts since the start (or the last reset).
inline PgemmStats pgemm_stats() { return detail::stats(); }
/// Sets the counts back to zero.
inline void reset_pgemm_stats() { detail::stats() = {}; }

/// sub(C) := alpha op(sub(A)) op(sub(B)) + beta sub(C), collective over `grid` (see the top of
/// this file), but for the calls that need no communication (see "local" in the body). Not covered (the same on every rank, with the reason): arguments out of
/// ScaLAPACK's rules, A, B and C on different contexts, arguments that differ across ranks,
/// no plan within the memory budget, and an operand of more than 2^31 - 1 elements.
template <typename Scalar>
PgemmOutcome pgemm(char transa, char transb, int m, int n, int k, Scalar alpha, const Scalar* a, int ia, int ja,
                   const int* desca, const Scalar* b, int ib, int jb, const int* descb, Scalar beta, Scalar* c, int ic,
                   int jc, const int* descc, const Grid& grid) {
  static_assert(shardwise::detail::is_array_scalar_v<Scalar>,
                "shardwise::scalapack::pgemm: the scalar must be float, double, std::complex<float> or "
                "std::complex<double> (psgemm, pdgemm, pcgemm, pzgemm)");
  using namespace detail;
  ++stats().calls;
  const Descriptor da = Descriptor::from(desca), db = Descriptor::from(descb), dc = Descriptor::from(descc);
  const int opa = op_code(transa), opb = op_code(transb);
  const std::string problem = check_arguments(opa, opb, m, n, k, da, ia, ja, db, ib, jb, dc, ic, jc, grid, true);

  // The calls that need no communication, decided by each rank from the arguments alone, with
  // no agreement: ScaLAPACK requires every process to pass the same M, N, K, TRANSA/B,
  // alpha, beta, IA, JA, ..., and descriptors (but LLD_), and checks nothing across ranks
  // either; PDGEMM does the same local work on such a call. They are the calls without a
  // product (M, N or K = 0, alpha = 0: each process scales its own part of sub(C) by beta) and
  // those whose sub(A), sub(B) and sub(C) all lie on one process (pr, pc), as on a 1 x 1 grid
  // or when sub(C) is a single block: that process computes, the others return at once.
  // Arguments out of the rules take the agreement below, as they always have, unless the
  // only fault is this process's LLD_ (the one check a process cannot know the others'
  // verdict of): then the call is refused here alone, and the drop-in's ScaLAPACK reports it.
  if (problem.empty() ||
      check_arguments(opa, opb, m, n, k, da, ia, ja, db, ib, jb, dc, ic, jc, grid, false).empty()) {
    const bool no_product = m == 0 || n == 0 || k == 0 || alpha == Scalar(0);
    int pr = -1, pc = -1;
    bool one_process = false;
    if (!no_product) {
      pr = sole_owner(dc.row_dim(grid), ic - 1, m);
      pc = sole_owner(dc.col_dim(grid), jc - 1, n);
      one_process = pr >= 0 && pc >= 0 && sole_owner(da.row_dim(grid), ia - 1, opa == 0 ? m : k) == pr &&
                    sole_owner(da.col_dim(grid), ja - 1, opa == 0 ? k : m) == pc &&
                    sole_owner(db.row_dim(grid), ib - 1, opb == 0 ? k : n) == pr &&
                    sole_owner(db.col_dim(grid), jb - 1, opb == 0 ? n : k) == pc;
    }
    if (no_product || one_process) {
      if (!problem.empty()) {
        ++stats().not_covered;
        return {PgemmResult::not_covered, problem};
      }
      if (no_product) {
        if (m > 0 && n > 0)
          scale_local(BlockCyclicOperand<Scalar*>{c, dc.lld, ic - 1, jc - 1, dc.row_dim(grid), dc.col_dim(grid), 0},
                      grid, m, n, beta);
        ++stats().without_product;
        return {};
      }
      ++stats().local;
      if (grid.row == pr && grid.col == pc) {
        const auto at = [&](const Descriptor& d, int i, int j) {
          return d.row_dim(grid).local_index(i - 1) + d.col_dim(grid).local_index(j - 1) * d.lld;
        };
        local_pgemm<Scalar>(opa, opb, m, n, k, alpha, a + at(da, ia, ja), da.lld, b + at(db, ib, jb), db.lld, beta,
                            c + at(dc, ic, jc), dc.lld);
      }
      return {};
    }
  }

  // The ways to compute the call, each with its modeled traffic on this rank (bytes, messages):
  // SUMMA over the k blocks in place, PDGEMM's algorithm, where the operands are aligned; the
  // partial products over each process's k indices summed onto C's owners, where op(A) or
  // op(B) is transposed and their k indices are dealt alike; the redistribution into the
  // planner's plan and back, always. The cheapest on the busiest rank wins (fewest bytes, then
  // fewest messages; a tie goes to the one that moves no operand).
  const int ranks = grid.rows * grid.cols;
  const auto scalar_bytes = static_cast<std::int64_t>(sizeof(Scalar));
  const bool fits = std::max({std::int64_t{m} * k, std::int64_t{k} * n, std::int64_t{m} * n}) <= INT_MAX;
  const bool valid = problem.empty() && fits;  // then M, N, K > 0 and alpha != 0: no-product calls returned
  const cached_plan* plan = valid ? plan_for(ranks, m, n, k, static_cast<int>(scalar_bytes)) : nullptr;
  const bool in_place_possible = aligned(opa, opb, da, ia, ja, db, ib, jb, dc, ic, jc);
  const reduction_split split = valid ? split_over_k(opa, opb, m, n, da, ia, ja, db, ib, jb, grid) : reduction_split{};
  const int gather = valid ? gather_row(opa, opb, m, k, da, ia, db, ib, jb, dc, ic, jc, grid) : -1;
  const BlockCyclicOperand<Scalar*> sub_c{c, dc.lld, ic - 1, jc - 1, dc.row_dim(grid), dc.col_dim(grid), 0};
  const BlockCyclicOperand<const Scalar*> sub_a{a, da.lld, ia - 1, ja - 1, da.row_dim(grid), da.col_dim(grid), opa};
  const BlockCyclicOperand<const Scalar*> sub_b{b, db.lld, ib - 1, jb - 1, db.row_dim(grid), db.col_dim(grid), opb};
  const shardwise::detail::operand_extents global = shardwise::detail::matmul_extents({.m = m, .k = k, .n = n});
  auto& w = workspace<Scalar>();
  way_costs costs;
  if (plan != nullptr) {
    const std::array<std::int64_t, 36> key{
        ranks, grid.rows, grid.cols, grid.row, grid.col, m, n, k, opa, opb, ia, ja, ib, jb, ic, jc, scalar_bytes,
        reinterpret_cast<std::intptr_t>(plan), da.m, da.n, da.mb, da.nb, da.rsrc, da.csrc, db.m, db.n, db.mb, db.nb,
        db.rsrc, db.csrc, dc.m, dc.n, dc.mb, dc.nb, dc.rsrc, dc.csrc};
    auto& cache = cost_cache();
    if (auto it = cache.find(key); it != cache.end()) {
      costs = it->second;
    } else {
      if (in_place_possible) {
        const auto rows = local_run(da.row_dim(grid), grid.row, ia - 1, m).second;
        const auto cols = local_run(db.col_dim(grid), grid.col, jb - 1, n).second;
        costs.of[0] = shardwise::detail::cyclic_summa_traffic(in_place_panels(k, da, ja, db, ib, grid), grid.row,
                                                              grid.col, rows, cols, scalar_bytes,
                                                              in_place_holders(da, ia, m, db, jb, n, grid, w));
      }
      if (split.possible)
        costs.of[1] = reduction_traffic(sub_c.rows, sub_c.cols, grid.row, grid.col, Rect{ic - 1, jc - 1, m, n}, ranks,
                                        scalar_bytes);
      if (gather >= 0)
        costs.of[2] = gather_traffic(sub_a.cols, ja - 1, m, k, gather, grid.row, grid.col, scalar_bytes);
      const MatmulChoice& choice = plan->planned.choice;
      // The geometry without the plan's process groups: their making is collective, and a rank
      // whose arguments are out of the rules models nothing.
      costs.plan = shardwise::detail::schedule_traffic(
          choice.plan.steps, choice.plan.start, global,
          shardwise::detail::block_geometry(plan->cube, plan->cube.unravel(grid.row * grid.cols + grid.col)),
          scalar_bytes, choice.panel_width);
      costs.of[3] = sent_to_rectangles(sub_a, grid, plan->rect_a, scalar_bytes) +
                    sent_to_rectangles(sub_b, grid, plan->rect_b, scalar_bytes) +
                    sent_from_rectangles(sub_c, grid, plan->rect_c, scalar_bytes) + costs.plan;
      if (cache.size() >= 4096) cache.clear();
      cache.emplace(key, costs);
    }
  }

  // One all-reduce (minimum of x and of -x) makes every rank's verdict and arguments agree
  // (part of what they agree on: the descriptors' blocks and first processes decide the ways)
  // and gives each way's cost on the busiest rank.
  constexpr std::size_t agreed = 17;
  const std::array<std::int64_t, agreed> mine{problem.empty() ? 0 : 1, m, n, k, opa, opb, ia, ja, ib, jb, ic, jc,
                                              scalar_bytes, in_place_possible ? 1 : 0, split.possible ? 1 : 0,
                                              split.line, gather};
  std::array<std::int64_t, 2 * agreed + 8> both{};
  for (std::size_t i = 0; i < agreed; ++i) both[i] = mine[i], both[i + agreed] = -mine[i];
  for (std::size_t w = 0; w < costs.of.size(); ++w)
    both[2 * agreed + 2 * w] = -costs.of[w].bytes, both[2 * agreed + 2 * w + 1] = -costs.of[w].messages;
  MPI_Allreduce(MPI_IN_PLACE, both.data(), static_cast<int>(both.size()), MPI_INT64_T, MPI_MIN, grid.comm);
  bool differ = false;
  for (std::size_t i = 1; i < agreed; ++i) differ = differ || both[i] != -both[i + agreed];
  if (-both[agreed] != 0 || differ) {
    ++stats().not_covered;
    if (differ) return {PgemmResult::not_covered, "the arguments differ across the ranks of the grid"};
    return {PgemmResult::not_covered, problem.empty() ? "another rank's arguments are out of ScaLAPACK's rules"
                                                      : problem};
  }

  // Every exchange then counts in int, as MPI_Alltoallv does: each element of an operand is
  // sent once, so no rank sends or receives more than the largest operand.
  if (!fits) {
    ++stats().not_covered;
    return {PgemmResult::not_covered, "an operand has more than 2^31 - 1 elements"};
  }
  if (plan == nullptr) {
    ++stats().not_covered;
    return {PgemmResult::not_covered, "no plan fits the memory budget (SHARDWISE_PGEMM_BUDGET_MIB)"};
  }
  way chosen = way::redistributed;
  for (const way candidate : {way::gathered, way::reduced, way::in_place}) {
    const auto i = static_cast<std::size_t>(candidate), best = static_cast<std::size_t>(chosen);
    const Traffic busiest{-both[2 * agreed + 2 * i], -both[2 * agreed + 2 * i + 1]};
    const Traffic so_far{-both[2 * agreed + 2 * best], -both[2 * agreed + 2 * best + 1]};
    if (busiest.bytes == way_costs::none.bytes) continue;
    if (busiest.bytes < so_far.bytes || (busiest.bytes == so_far.bytes && busiest.messages <= so_far.messages))
      chosen = candidate;
  }

  if (chosen == way::in_place) {
    const auto [row0, rows] = local_run(da.row_dim(grid), grid.row, ia - 1, m);
    const auto [col0, cols] = local_run(db.col_dim(grid), grid.col, jb - 1, n);
    w.c.resize(static_cast<std::size_t>(std::max<std::int64_t>(1, rows * cols)));
    shardwise::detail::cyclic_summa<Scalar>(groups_for(grid.comm, Cube{grid.rows, grid.cols, 1}).state(), {0}, {1},
                                            in_place_panels(k, da, ja, db, ib, grid), a + row0, da.lld,
                                            b + col0 * db.lld, db.lld, w.c.data(), rows, rows, cols, w.a, w.b,
                                            in_place_holders(da, ia, m, db, jb, n, grid, w));
    const bool read_c = beta != Scalar(0);
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < rows; ++i) {
        Scalar& into = c[(col0 + j) * dc.lld + row0 + i];
        const Scalar v = alpha * w.c[static_cast<std::size_t>(i + j * rows)];
        into = read_c ? v + beta * into : v;
      }
    stats().plan_bytes += costs.of[0].bytes;
    ++stats().in_place;
    ++stats().planned;
    return {};
  }
  if (chosen == way::gathered) {
    gathered_pgemm<Scalar>(m, n, k, alpha, sub_a, sub_b, beta, sub_c, grid, gather,
                           groups_for(grid.comm, Cube{grid.rows, grid.cols, 1}).state(), w);
    stats().plan_bytes += costs.of[2].bytes;
    ++stats().gathered;
    ++stats().planned;
    return {};
  }
  if (chosen == way::reduced) {
    reduced_pgemm<Scalar>(m, n, k, alpha, sub_a, sub_b, beta, sub_c, grid, split, w);
    stats().plan_bytes += costs.of[1].bytes;
    ++stats().reduced;
    ++stats().planned;
    return {};
  }

  block_cyclic_to_blocks(sub_a, grid, plan->rect_a, w.a, w);
  block_cyclic_to_blocks(sub_b, grid, plan->rect_b, w.b, w);
  const Rect out = plan->rect_c[static_cast<std::size_t>(grid.row * grid.cols + grid.col)];
  w.c.resize(static_cast<std::size_t>(std::max<std::int64_t>(out.rows * out.cols, 1)));
  ProcessGroupMesh<Cube>& groups = groups_for(grid.comm, plan->cube);
  shardwise::detail::executor<Scalar, true>(plan->program, groups.state(), global, {w.a.data(), w.b.data(), nullptr, w.c.data()})
      .run();
  stats().plan_bytes += costs.plan.bytes;
  blocks_to_block_cyclic(w.c, plan->rect_c, grid, sub_c, alpha, beta, w);
  ++stats().planned;
  return {};
}

}  // namespace shardwise::scalapack
