// shardwise/scalapack/psymm.hpp: PBLAS's p?symm and p?hemm, computed by shardwise.
//
//   sub(C) := alpha sub(A) sub(B) + beta sub(C)   (SIDE = 'L')
//   sub(C) := alpha sub(B) sub(A) + beta sub(C)   (SIDE = 'R')
//
// sub(C) and sub(B) are M x N, sub(A) = A(IA:IA+K-1, JA:JA+K-1) with K = M ('L') or N ('R') is
// symmetric (p?symm) or Hermitian (p?hemm) and only its UPLO triangle is read (p?hemm: the real
// part of its diagonal, as PBLAS assumes the imaginary part zero). All on one BLACS grid (either
// order), any MB/NB/RSRC/CSRC each.
//
// How: sub(A) is expanded into a full K x K matrix in a workspace laid out as A (A's
// descriptor, this process's LLD): the (conjugate) transpose of sub(A) by one redistribution
// (block_cyclic_copy.hpp, one message per pair of processes), then the stored triangle over it
// from A's own local array; then pgemm() computes the product from the workspace, as p?gemm
// would. The bytes are the copy's (modeled by psymm_sent_bytes) plus pgemm's (its PgemmStats
// figures), counted in Level3Stats. The copy moves all of sub(A), the stored triangle's image
// included, which the overwrite then drops: twice the elements the other triangle needs, for
// one all-to-all with no triangle-shaped runs.
//
// As PDSYMM: M or N = 0, or alpha = 0 and beta = 1, is no work; alpha = 0 scales sub(C) by beta
// (zeros for beta = 0) without reading A or B. These need no communication and each process
// answers them from the arguments alone. The others are agreed on first (one small
// all-reduce), so every process takes the same path: computed here, or refused everywhere with
// the reason (the drop-in then hands the call to PBLAS, which reports bad arguments as always).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "shardwise/scalapack/block_cyclic_copy.hpp"
#include "shardwise/scalapack/pgemm.hpp"
#include "shardwise/scalapack/ptran.hpp"

namespace shardwise::scalapack {

/// What the calls of one level-3 routine over pgemm (p?symm/p?hemm, or p?syrk/p?herk) did on
/// this process, since the start or the last reset.
struct Level3Stats {
  std::int64_t calls = 0;                  ///< Calls.
  std::int64_t computed = 0;               ///< Calls computed through pgemm().
  std::int64_t without_communication = 0;  ///< Calls answered locally (no product: M, N or K = 0, alpha = 0).
  std::int64_t not_covered = 0;            ///< Calls refused (the drop-in hands them to ScaLAPACK).
  std::int64_t copy_bytes = 0;             ///< Bytes this process sent in the routine's own copies.
  std::int64_t messages = 0;               ///< Non-empty messages of those copies.
  std::int64_t gemm_calls = 0;             ///< pgemm() calls made.
  std::int64_t gemm_bytes = 0;             ///< Bytes this process sent in them (redistributions and plans).
  double gemm_flops = 0;                   ///< Their flops, all processes together (2 m n k each; complex x4).
};

namespace detail {

inline Level3Stats& psymm_stats_storage() {
  static Level3Stats s;
  return s;
}

/// 'L'/'U' and similar one-letter options (either case): whether `c` is `upper` or `lower`
/// case of `letter`.
inline bool is_option(char c, char letter) { return c == letter || c == letter + ('a' - 'A'); }

/// A workspace laid out as a matrix with descriptor `d` on this process: LLD x local columns.
template <typename Scalar>
std::vector<Scalar>& level3_workspace(const Descriptor& d, const Grid& grid) {
  static std::vector<Scalar> w;
  const std::int64_t size = std::int64_t{d.lld} * std::max<std::int64_t>(1, d.col_dim(grid).local_extent(grid.col));
  if (static_cast<std::int64_t>(w.size()) < size) w.resize(static_cast<std::size_t>(size));
  return w;
}

/// pgemm_described() with its bytes and flops counted in `stats`; false (with `reason`) when it
/// refused.
template <typename Scalar>
bool counted_pgemm(Level3Stats& stats, std::string& reason, char transa, char transb, int m, int n, int k,
                   Scalar alpha, const Scalar* a, int ia, int ja, const Descriptor& da, const Scalar* b, int ib,
                   int jb, const Descriptor& db, Scalar beta, Scalar* c, int ic, int jc, const Descriptor& dc,
                   const Grid& grid) {
  const PgemmStats before = pgemm_stats();
  const PgemmOutcome o =
      pgemm_described<Scalar>(transa, transb, m, n, k, alpha, a, ia, ja, da, b, ib, jb, db, beta, c, ic, jc, dc, grid);
  const PgemmStats after = pgemm_stats();
  ++stats.gemm_calls;
  stats.gemm_bytes += after.redistributed_bytes - before.redistributed_bytes + after.plan_bytes - before.plan_bytes;
  stats.gemm_flops += (shardwise::detail::is_complex_v<Scalar> ? 8.0 : 2.0) * m * n * k;
  if (o.result == PgemmResult::computed) return true;
  reason = o.reason;
  return false;
}

/// Why a p?symm/p?hemm call is out of PBLAS's rules on this process (empty: none); `lld` as in
/// check_operand.
inline std::string check_psymm(char side, char uplo, int m, int n, const Descriptor& da, int ia, int ja,
                               const Descriptor& db, int ib, int jb, const Descriptor& dc, int ic, int jc,
                               const Grid& grid, bool lld) {
  if (!is_option(side, 'L') && !is_option(side, 'R')) return "SIDE is not 'L' or 'R'";
  if (!is_option(uplo, 'U') && !is_option(uplo, 'L')) return "UPLO is not 'U' or 'L'";
  if (m < 0 || n < 0) return "M and N must not be negative";
  if (da.context != db.context || da.context != dc.context) return "A, B and C are on different BLACS contexts";
  const int k = is_option(side, 'L') ? m : n;
  std::string problem = check_operand("A", da, grid, ia, ja, k, k, lld);
  if (problem.empty()) problem = check_operand("B", db, grid, ib, jb, m, n, lld);
  if (problem.empty()) problem = check_operand("C", dc, grid, ic, jc, m, n, lld);
  return problem;
}

/// Whether element (i, j) of a submatrix (0-based, relative to its first) is in its UPLO triangle.
inline bool in_triangle(bool upper, std::int64_t i, std::int64_t j) { return upper ? i <= j : i >= j; }

}  // namespace detail

/// This process's p?symm/p?hemm counts since the start (or the last reset).
inline Level3Stats psymm_stats() { return detail::psymm_stats_storage(); }
/// Sets them back to zero.
inline void reset_psymm_stats() { detail::psymm_stats_storage() = {}; }

/// The model of the bytes this process sends in psymm()'s own copy (valid arguments; pgemm's
/// bytes come on top): the elements of sub(A) it holds whose transposed place another process
/// holds; 0 for the calls that need no communication.
template <typename Scalar>
std::int64_t psymm_sent_bytes(char side, int m, int n, Scalar alpha, int ia, int ja, const int* desca,
                              const Grid& grid) {
  if (m == 0 || n == 0 || alpha == Scalar(0)) return 0;
  const std::int64_t k = detail::is_option(side, 'L') ? m : n;
  const Descriptor da = Descriptor::from(desca);
  const detail::BlockCyclicSide a = detail::grid_side(da, grid, da.row(ia), da.col(ja));
  return static_cast<std::int64_t>(sizeof(Scalar)) * detail::copy_sent_elements({k, k, true}, a, a);
}

/// p?symm (`hermitian` false) or p?hemm (true, complex only): see the top of this file.
/// Collective over `grid` but for the calls that need no communication. Not covered (the same on
/// every process, with the reason): arguments out of PBLAS's rules, A, B and C on different
/// contexts, arguments that differ across processes, what pgemm() does not cover.
template <typename Scalar>
PgemmOutcome psymm(bool hermitian, char side, char uplo, int m, int n, Scalar alpha, const Scalar* a, int ia, int ja,
                   const int* desca, const Scalar* b, int ib, int jb, const int* descb, Scalar beta, Scalar* c, int ic,
                   int jc, const int* descc, const Grid& grid) {
  static_assert(shardwise::detail::is_array_scalar_v<Scalar>,
                "shardwise::scalapack::psymm: the scalar must be float, double, std::complex<float> or "
                "std::complex<double> (pssymm, pdsymm, pcsymm/pchemm, pzsymm/pzhemm)");
  using namespace detail;
  Level3Stats& stats = psymm_stats_storage();
  ++stats.calls;
  const Descriptor da = Descriptor::from(desca), db = Descriptor::from(descb), dc = Descriptor::from(descc);
  // From here on every operand as its Descriptor counts it (DTYPE 2 as DTYPE 1).
  da.locate(a, ia, ja, grid);
  db.locate(b, ib, jb, grid);
  dc.locate(c, ic, jc, grid);
  const std::string problem = check_psymm(side, uplo, m, n, da, ia, ja, db, ib, jb, dc, ic, jc, grid, true);
  const auto refuse = [&](std::string reason) {
    ++stats.not_covered;
    return PgemmOutcome{PgemmResult::not_covered, std::move(reason)};
  };

  // No product: decided by each process alone, as in ptran().
  if (check_psymm(side, uplo, m, n, da, ia, ja, db, ib, jb, dc, ic, jc, grid, false).empty() &&
      (m == 0 || n == 0 || alpha == Scalar(0))) {
    if (!problem.empty()) return refuse(problem);
    if (m > 0 && n > 0)
      scale_local(BlockCyclicOperand<Scalar*>{c, dc.lld, ic - 1, jc - 1, dc.row_dim(grid), dc.col_dim(grid), 0}, grid,
                  m, n, beta);
    ++stats.without_communication;
    return {};
  }

  const bool left = is_option(side, 'L'), upper = is_option(uplo, 'U');
  const bool conjugate = hermitian && shardwise::detail::is_complex_v<Scalar>;
  if (!agree(grid.comm, problem.empty(),
             {m, n, ia, ja, ib, jb, ic, jc, left ? 1 : 0, upper ? 1 : 0, conjugate ? 1 : 0,
              static_cast<std::int64_t>(sizeof(Scalar))}))
    return refuse(problem.empty() ? "another process's arguments are out of PBLAS's rules, or differ" : problem);
  const int k = left ? m : n;
  const CopyShape shape{k, k, true};
  if (!copy_fits_int(shape)) return refuse("sub(A) has more than 2^31 - 1 elements");

  // The full sub(A) in the workspace: its (conjugate) transpose everywhere, then the stored
  // triangle (p?hemm: a real diagonal) from A's own array.
  Scalar* const full = da.origin(level3_workspace<Scalar>(da, grid).data(), grid);  // laid out as A
  const BlockCyclicSide side_a = grid_side(da, grid, ia, ja);
  RedistributionStats copied;
  if (conjugate)
    copy(grid.comm, shape, side_a, a, side_a, full, [](Scalar& into, const Scalar& v) { into = conjugated(v); },
         copied);
  else
    copy(grid.comm, shape, side_a, a, side_a, full, [](Scalar& into, const Scalar& v) { into = v; }, copied);
  stats.copy_bytes += copied.sent_bytes;
  stats.messages += copied.messages;
  for_each_held(da.row_dim(grid), da.col_dim(grid), grid.row, grid.col, Rect{ia - 1, ja - 1, k, k}, da.lld,
                [&](std::int64_t gi, std::int64_t gj, std::int64_t offset) {
                  const std::int64_t i = gi - (ia - 1), j = gj - (ja - 1);
                  const auto o = static_cast<std::size_t>(offset);
                  if (i == j && conjugate) full[o] = Scalar(std::real(a[o]));
                  else if (in_triangle(upper, i, j)) full[o] = a[o];
                });

  std::string reason;
  const bool done =
      left ? counted_pgemm<Scalar>(stats, reason, 'N', 'N', m, n, m, alpha, full, ia, ja, da, b, ib, jb, db, beta, c,
                                   ic, jc, dc, grid)
           : counted_pgemm<Scalar>(stats, reason, 'N', 'N', m, n, n, alpha, b, ib, jb, db, full, ia, ja, da, beta, c,
                                   ic, jc, dc, grid);
  if (!done) return refuse(reason);
  ++stats.computed;
  return {};
}

}  // namespace shardwise::scalapack
