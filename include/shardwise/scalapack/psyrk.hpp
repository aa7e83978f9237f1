// shardwise/scalapack/psyrk.hpp: PBLAS's p?syrk and p?herk, computed by shardwise.
//
//   sub(C) := alpha op(sub(A)) op(sub(A))^T + beta sub(C)   (p?syrk; p?herk: ^H, real alpha, beta)
//
// on the UPLO triangle of the N x N sub(C) only (the other triangle is not touched), op(X) = X
// (TRANS = 'N': sub(A) N x K) or X^T (p?syrk 'T', and 'C' for the real types) or X^H (p?herk
// 'C'), sub(A) K x N then. p?herk sets the imaginary parts of sub(C)'s diagonal to zero, as
// PBLAS does. A and C on one BLACS grid (either order), any MB/NB/RSRC/CSRC each.
//
// How: pgemm() computes alpha op(sub(A)) op(sub(A))^T into a workspace laid out as C (C's
// descriptor, this process's LLD), then each process combines the triangle's elements it holds
// into C (beta = 0 does not read C, so NaN there is overwritten). Not the whole square: sub(C)
// is cut into column panels (a multiple of C's NB wide) and each panel's pgemm() computes only
// its rows that reach the triangle (the lower trapezoid for 'L', the upper for 'U'), as PBLAS
// itself splits the product. With p panels the flops are (p + 1) / p times PDSYRK's N (N + 1) K
// (p = 1: twice); each panel is one pgemm() call (its own redistribution of its share of
// op(sub(A))), so more panels move more bytes and cost more calls: psyrk_panels() picks p by N.
//
// As PDSYRK: N = 0, or (alpha = 0 or K = 0) and beta = 1, is no work; alpha = 0 or K = 0 scales
// the triangle by beta (zeros for beta = 0) without reading A. These need no communication.
// The others are agreed on first (one small all-reduce), so every process takes the same path:
// computed here, or refused everywhere with the reason (the drop-in then hands the call to
// PBLAS, which reports bad arguments as always).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "shardwise/scalapack/psymm.hpp"

namespace shardwise::scalapack {

namespace detail {

inline Level3Stats& psyrk_stats_storage() {
  static Level3Stats s;
  return s;
}

/// op(sub(A))'s code: 0 'N', 1 transposed, 2 conjugate-transposed; -1 when TRANS is not one
/// PBLAS accepts for the routine (p?herk: 'N', 'C'; complex p?syrk: 'N', 'T'; real: 'N', 'T', 'C').
inline int syrk_op(char trans, bool hermitian, bool complex) {
  if (is_option(trans, 'N')) return 0;
  if (hermitian) return is_option(trans, 'C') ? 2 : -1;
  if (is_option(trans, 'T') || (!complex && is_option(trans, 'C'))) return 1;
  return -1;
}

/// Why a p?syrk/p?herk call is out of PBLAS's rules on this process (empty: none).
inline std::string check_psyrk(char uplo, int op, int n, int k, const Descriptor& da, int ia, int ja,
                               const Descriptor& dc, int ic, int jc, const Grid& grid, bool lld) {
  if (!is_option(uplo, 'U') && !is_option(uplo, 'L')) return "UPLO is not 'U' or 'L'";
  if (op < 0) return "TRANS is not one the routine accepts";
  if (n < 0 || k < 0) return "N and K must not be negative";
  if (da.context != dc.context) return "A and C are on different BLACS contexts";
  std::string problem = check_operand("A", da, grid, ia, ja, op == 0 ? n : k, op == 0 ? k : n, lld);
  if (problem.empty()) problem = check_operand("C", dc, grid, ic, jc, n, n, lld);
  return problem;
}

/// Calls f(element) for the elements of sub(C)'s UPLO triangle this process holds, with
/// whether it is on the diagonal.
template <typename Scalar, typename F>
void for_each_in_triangle(Scalar* c, const Descriptor& dc, int ic, int jc, std::int64_t n, bool upper,
                          const Grid& grid, F&& f) {
  for_each_held(dc.row_dim(grid), dc.col_dim(grid), grid.row, grid.col, Rect{ic - 1, jc - 1, n, n}, dc.lld,
                [&](std::int64_t gi, std::int64_t gj, std::int64_t offset) {
                  const std::int64_t i = gi - (ic - 1), j = gj - (jc - 1);
                  if (in_triangle(upper, i, j)) f(c[offset], offset, i == j);
                });
}

}  // namespace detail

/// This process's p?syrk/p?herk counts since the start (or the last reset).
inline Level3Stats psyrk_stats() { return detail::psyrk_stats_storage(); }
/// Sets them back to zero.
inline void reset_psyrk_stats() { detail::psyrk_stats_storage() = {}; }

/// The column panels psyrk() cuts an N x N sub(C) into by default: one below N = 1024 (there
/// each further pgemm() call cost more than the flops it saved: n = 512 on 2 ranks took 1.6 to
/// 2 times as long with 2 panels), then one per 512 columns, at most 8 (flops 1.125 times
/// PDSYRK's); n = 2048: 4 panels took 0.64 times the time of 1 on a 1 x 2 grid, 1.17 on 2 x 1.
inline int psyrk_panels(std::int64_t n) {
  return n < 1024 ? 1 : static_cast<int>(std::clamp<std::int64_t>(n / 512, 2, 8));
}

/// p?syrk (`hermitian` false) or p?herk (true, complex only; alpha and beta real): see the top
/// of this file. `panels`: the column panels (0: psyrk_panels(N)). Collective over `grid` but for
/// the calls that need no communication. Not covered (the same on every process, with the
/// reason): arguments out of PBLAS's rules, A and C on different contexts, arguments that differ
/// across processes, what pgemm() does not cover.
template <typename Scalar>
PgemmOutcome psyrk(bool hermitian, char uplo, char trans, int n, int k, Scalar alpha, const Scalar* a, int ia, int ja,
                   const int* desca, Scalar beta, Scalar* c, int ic, int jc, const int* descc, const Grid& grid,
                   int panels = 0) {
  static_assert(shardwise::detail::is_array_scalar_v<Scalar>,
                "shardwise::scalapack::psyrk: the scalar must be float, double, std::complex<float> or "
                "std::complex<double> (pssyrk, pdsyrk, pcsyrk/pcherk, pzsyrk/pzherk)");
  using namespace detail;
  Level3Stats& stats = psyrk_stats_storage();
  ++stats.calls;
  const Descriptor da = Descriptor::from(desca), dc = Descriptor::from(descc);
  // From here on both operands as their Descriptors count them (DTYPE 2 as DTYPE 1).
  da.locate(a, ia, ja, grid);
  dc.locate(c, ic, jc, grid);
  const bool complex = shardwise::detail::is_complex_v<Scalar>;
  const bool herk = hermitian && complex;
  const int op = syrk_op(trans, herk, complex);
  const bool upper = is_option(uplo, 'U');
  const std::string problem = check_psyrk(uplo, op, n, k, da, ia, ja, dc, ic, jc, grid, true);
  const auto refuse = [&](std::string reason) {
    ++stats.not_covered;
    return PgemmOutcome{PgemmResult::not_covered, std::move(reason)};
  };
  // p?herk: the diagonal's imaginary parts become zero (PBLAS takes them as zero on entry).
  const auto finish = [&](Scalar& into, bool diagonal) {
    if (herk && diagonal) into = Scalar(std::real(into));
  };

  // No product: decided by each process alone, as in ptran().
  if (check_psyrk(uplo, op, n, k, da, ia, ja, dc, ic, jc, grid, false).empty() &&
      (n == 0 || k == 0 || alpha == Scalar(0))) {
    if (!problem.empty()) return refuse(problem);
    if (n > 0 && beta != Scalar(1))
      for_each_in_triangle(c, dc, ic, jc, n, upper, grid, [&](Scalar& x, std::int64_t, bool diagonal) {
        x = beta == Scalar(0) ? Scalar(0) : beta * x;
        finish(x, diagonal);
      });
    ++stats.without_communication;
    return {};
  }

  if (!agree(grid.comm, problem.empty(),
             {n, k, ia, ja, ic, jc, op, upper ? 1 : 0, herk ? 1 : 0, static_cast<std::int64_t>(sizeof(Scalar)),
              panels}))
    return refuse(problem.empty() ? "another process's arguments are out of PBLAS's rules, or differ" : problem);

  // alpha op(A) op(A)^T into the workspace, panel by panel: op(sub(A))'s rows from r on start
  // at A(IA + r, JA) ('N') or A(IA, JA + r); op(sub(A))^T's columns likewise.
  Scalar* const product = dc.origin(level3_workspace<Scalar>(dc, grid).data(), grid);  // laid out as C
  const char op_a = op == 0 ? 'N' : op == 1 ? 'T' : 'C';
  const char op_b = op != 0 ? 'N' : herk ? 'C' : 'T';
  const auto row_of = [&](int r) { return op == 0 ? ia + r : ia; };
  const auto col_of = [&](int r) { return op == 0 ? ja : ja + r; };
  const int count = panels > 0 ? panels : psyrk_panels(n);
  const std::int64_t target = (n + count - 1) / count;  // rounded up to a multiple of C's NB
  const auto step = static_cast<int>(std::min<std::int64_t>(n, (target + dc.nb - 1) / dc.nb * dc.nb));
  std::string reason;
  for (int j0 = 0; j0 < n; j0 += step) {
    const int w = std::min(step, n - j0);
    const int r0 = upper ? 0 : j0, rows = upper ? j0 + w : n - j0;
    if (!counted_pgemm<Scalar>(stats, reason, op_a, op_b, rows, w, k, alpha, a, row_of(r0), col_of(r0), da, a,
                               row_of(j0), col_of(j0), da, Scalar(0), product, ic + r0, jc + j0, dc, grid))
      return refuse(reason);  // C not written yet: PBLAS can take the call from the start
  }
  const bool read_c = beta != Scalar(0);
  for_each_in_triangle(c, dc, ic, jc, n, upper, grid, [&](Scalar& x, std::int64_t offset, bool diagonal) {
    const Scalar v = product[offset];
    x = read_c ? v + beta * x : v;
    finish(x, diagonal);
  });
  ++stats.computed;
  return {};
}

}  // namespace shardwise::scalapack
