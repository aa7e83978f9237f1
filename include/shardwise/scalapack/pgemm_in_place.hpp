// shardwise/scalapack/pgemm_in_place.hpp: the ways p?gemm computes a call in the operands' own
// arrays, with their conditions and traffic models: one process's local GEMM (local_pgemm),
// SUMMA over the k blocks in ScaLAPACK's aligned case (aligned, in_place_panels), partial
// products summed by a pairwise reduce-scatter where the k indices are dealt alike
// (split_over_k, reduced_pgemm), and sub(A) gathered along one process row (gather_row,
// gathered_pgemm).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <utility>
#include <vector>

#include "shardwise/comm/pairwise_reduce_scatter.hpp"
#include "shardwise/kernels/cyclic_summa.hpp"
#include "shardwise/kernels/gemm.hpp"
#include "shardwise/scalapack/pgemm_call.hpp"

namespace shardwise::scalapack::detail {

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

/// What the rank at (row, col) sends in reduced_pgemm's pairwise reduce-scatter: its
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
/// local arrays (one local GEMM, m x n), the others contribute zeros, and a pairwise
/// reduce-scatter (P - 1 exchanges) sums the partial products onto sub(C)'s owners, which
/// apply alpha and beta. No operand moves; reduction_traffic() is its model. Collective over
/// the grid; M, N, K > 0.
template <typename Scalar>
void reduced_pgemm(std::int64_t m, std::int64_t n, std::int64_t k, Scalar alpha,
                   const BlockCyclicOperand<const Scalar*>& a, const BlockCyclicOperand<const Scalar*>& b, Scalar beta,
                   const BlockCyclicOperand<Scalar*>& c, const Grid& grid, const reduction_split& split,
                   shardwise::detail::group_mesh_state& groups, pgemm_workspace<Scalar>& w) {
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
  // summed onto them by the pairwise exchange, whose traffic reduction_traffic() models.
  const int ranks = grid.rows * grid.cols, me = grid.row * grid.cols + grid.col;
  const Rect target{c.row0, c.col0, m, n};
  w.receive_counts.resize(static_cast<std::size_t>(ranks));
  w.receive_offsets.resize(static_cast<std::size_t>(ranks));
  w.send.resize(static_cast<std::size_t>(m * n));
  Scalar* packed = w.send.data();
  for (int d = 0; d < ranks; ++d) {
    w.receive_offsets[static_cast<std::size_t>(d)] = static_cast<int>(packed - w.send.data());
    w.receive_counts[static_cast<std::size_t>(d)] =
        static_cast<int>(held_count(c.rows, c.cols, d / grid.cols, d % grid.cols, target));
    for_each_held_run(c.rows, c.cols, d / grid.cols, d % grid.cols, target, c.ld,
                      [&](std::int64_t gr, std::int64_t gc, std::int64_t, std::int64_t length) {
                        packed = std::copy_n(w.partial.data() + (gr - c.row0) + (gc - c.col0) * m, length, packed);
                      });
  }
  w.receive.resize(static_cast<std::size_t>(std::max(1, w.receive_counts[static_cast<std::size_t>(me)])));
  // groups.world() is grid.comm's ranks in its order; w.partial, packed, serves as scratch.
  shardwise::detail::pairwise_reduce_scatter<Scalar>(groups.world(), w.send, w.receive_counts, w.receive_offsets,
                                                     w.receive, w.partial);
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

}  // namespace shardwise::scalapack::detail
