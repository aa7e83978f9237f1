// shardwise/scalapack/ptran.hpp: PBLAS's p?tran, p?tranu and p?tranc, computed by shardwise.
//
//   sub(C) := beta sub(C) + alpha op(sub(A))
//
// sub(C) = C(IC:IC+M-1, JC:JC+N-1), sub(A) = A(IA:IA+N-1, JA:JA+M-1), op the transpose (pstran,
// pdtran, pctranu, pztranu) or the conjugate transpose (pctranc, pztranc), A and C on one BLACS
// grid (either order) with any MB/NB/RSRC/CSRC each. A transpose is a redistribution: each
// element of sub(A) goes to the process that holds its transposed place in sub(C), one message
// per pair of processes (block_cyclic_copy.hpp), and alpha and beta are applied there (beta = 0
// does not read C, so NaN there is overwritten).
//
// As PDTRAN: M or N = 0, or alpha = 0 and beta = 1, is no work; alpha = 0 scales sub(C) by beta
// (zeros for beta = 0) without reading A. These calls need no communication and each process
// answers them from the arguments alone. The others are agreed on first (one small
// all-reduce: the verdicts and the arguments), so that every process takes the same path:
// computed here, or refused everywhere, with the reason, and the drop-in hands the call to
// PBLAS's own routine, which reports invalid arguments (PB_Cabort) as it always has.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

#include "shardwise/scalapack/block_cyclic_copy.hpp"
#include "shardwise/scalapack/pgemm.hpp"

namespace shardwise::scalapack {

namespace detail {

inline RedistributionStats& ptran_stats_storage() {
  static RedistributionStats s;
  return s;
}

/// Why a p?tran call is out of PBLAS's rules on this process (empty: none); `lld` as in
/// check_operand (false: only the checks every process answers alike).
inline std::string check_ptran(int m, int n, const Descriptor& da, int ia, int ja, const Descriptor& dc, int ic,
                               int jc, const Grid& grid, bool lld) {
  if (m < 0 || n < 0) return "M and N must not be negative";
  if (da.context != dc.context) return "A and C are on different BLACS contexts";
  std::string problem = check_operand("A", da, grid, ia, ja, n, m, lld);
  if (problem.empty()) problem = check_operand("C", dc, grid, ic, jc, m, n, lld);
  return problem;
}

/// A and C on one grid: the sides of the copy, ranks numbered as the grid's communicator.
inline BlockCyclicSide grid_side(const Descriptor& d, const Grid& grid, int i, int j) {
  BlockCyclicSide side{d.row_dim(grid), d.col_dim(grid), i - 1, j - 1, d.lld, {}, grid.row, grid.col};
  side.ranks.resize(static_cast<std::size_t>(grid.rows * grid.cols));
  for (int r = 0; r < grid.rows * grid.cols; ++r) side.ranks[static_cast<std::size_t>(r)] = r;
  return side;
}

}  // namespace detail

/// This process's p?tran counts since the start (or the last reset).
inline RedistributionStats ptran_stats() { return detail::ptran_stats_storage(); }
/// Sets them back to zero.
inline void reset_ptran_stats() { detail::ptran_stats_storage() = {}; }

/// The model of the bytes this process sends in ptran() with these arguments (valid ones): the
/// elements of sub(A) it holds whose place in sub(C) another process holds; 0 for the calls
/// that need no communication.
template <typename Scalar>
std::int64_t ptran_sent_bytes(int m, int n, Scalar alpha, int ia, int ja, const int* desca, int ic, int jc,
                              const int* descc, const Grid& grid) {
  if (m == 0 || n == 0 || alpha == Scalar(0)) return 0;
  const Descriptor da = Descriptor::from(desca), dc = Descriptor::from(descc);
  const detail::BlockCyclicSide source = detail::grid_side(da, grid, da.row(ia), da.col(ja));
  const detail::BlockCyclicSide target = detail::grid_side(dc, grid, dc.row(ic), dc.col(jc));
  return static_cast<std::int64_t>(sizeof(Scalar)) * detail::copy_sent_elements({m, n, true}, source, target);
}

/// sub(C) := beta sub(C) + alpha op(sub(A)), op(X) = X^T, or X^H when `conjugate` (complex
/// only; p?tranc). Collective over `grid` but for the calls that need no communication (see
/// the top of this file). Not covered (the same on every process, with the reason): arguments
/// out of PBLAS's rules, A and C on different contexts, arguments that differ across
/// processes, a submatrix of more than 2^31 - 1 elements.
template <typename Scalar>
PgemmOutcome ptran(bool conjugate, int m, int n, Scalar alpha, const Scalar* a, int ia, int ja, const int* desca,
                   Scalar beta, Scalar* c, int ic, int jc, const int* descc, const Grid& grid) {
  static_assert(shardwise::detail::is_array_scalar_v<Scalar>,
                "shardwise::scalapack::ptran: the scalar must be float, double, std::complex<float> or "
                "std::complex<double> (pstran, pdtran, pctranu/c, pztranu/c)");
  using namespace detail;
  RedistributionStats& stats = ptran_stats_storage();
  ++stats.calls;
  const Descriptor da = Descriptor::from(desca), dc = Descriptor::from(descc);
  // From here on both operands as their Descriptors count them (DTYPE 2 as DTYPE 1).
  da.locate(a, ia, ja, grid);
  dc.locate(c, ic, jc, grid);
  const std::string problem = check_ptran(m, n, da, ia, ja, dc, ic, jc, grid, true);
  const auto refuse = [&](std::string reason) {
    ++stats.not_covered;
    return PgemmOutcome{PgemmResult::not_covered, std::move(reason)};
  };

  // No communication: decided by each process alone (PBLAS requires the same arguments
  // everywhere); refused alone when the only fault is this process's LLD_.
  if (check_ptran(m, n, da, ia, ja, dc, ic, jc, grid, false).empty() && (m == 0 || n == 0 || alpha == Scalar(0))) {
    if (!problem.empty()) return refuse(problem);
    if (m > 0 && n > 0)
      scale_local(BlockCyclicOperand<Scalar*>{c, dc.lld, ic - 1, jc - 1, dc.row_dim(grid), dc.col_dim(grid), 0}, grid,
                  m, n, beta);
    ++stats.without_communication;
    return {};
  }

  const bool conjugated_op = conjugate && shardwise::detail::is_complex_v<Scalar>;
  if (!agree(grid.comm, problem.empty(),
             {m, n, ia, ja, ic, jc, conjugated_op ? 1 : 0, static_cast<std::int64_t>(sizeof(Scalar))}))
    return refuse(problem.empty() ? "another process's arguments are out of PBLAS's rules, or differ" : problem);
  const CopyShape shape{m, n, true};
  if (!copy_fits_int(shape)) return refuse("sub(C) has more than 2^31 - 1 elements");

  const BlockCyclicSide source = grid_side(da, grid, ia, ja), target = grid_side(dc, grid, ic, jc);
  const bool read_c = beta != Scalar(0);
  const auto op = [&](const Scalar& v) { return conjugated_op ? conjugated(v) : v; };
  if (read_c)
    copy(grid.comm, shape, source, a, target, c,
         [&](Scalar& into, const Scalar& v) { into = beta * into + alpha * op(v); }, stats);
  else
    copy(grid.comm, shape, source, a, target, c, [&](Scalar& into, const Scalar& v) { into = alpha * op(v); }, stats);
  ++stats.redistributed;
  return {};
}

}  // namespace shardwise::scalapack
