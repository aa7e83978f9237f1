// shardwise/scalapack/pgemm_call.hpp: a p?gemm call as ScaLAPACK passes it: the BLACS grid, the
// descriptors, op codes, the submatrices and which process holds which of their elements
// (index runs), the checks of the arguments against ScaLAPACK's rules, the counts
// (PgemmStats) and the buffers kept from call to call. What every way of computing a call
// (pgemm_redistribution.hpp, pgemm_in_place.hpp) and the other routines (ptran.hpp, ...) read.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <complex>
#include <cstdint>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "shardwise/comm/types.hpp"
#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
#include "shardwise/detail/simulation.hpp"  // SMPI: the buffers fold
#endif
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

/// A ScaLAPACK array descriptor: DTYPE_ 1 (BLOCK_CYCLIC_2D, 9 integers) or 2
/// (BLOCK_CYCLIC_2D_INB, 11: IMB_ and INB_, the first block's rows and columns, before MB_).
/// A DTYPE 2 matrix whose first block is no larger than the others (1 <= IMB <= MB, 1 <= INB <=
/// NB) is read as the DTYPE 1 matrix it ends: that one has MB - IMB rows and NB - INB columns
/// more at its start (row_pad, col_pad), in the first block of RSRC's process row and CSRC's
/// process column, which no local array stores. locate() (row(), col(), origin()) moves the caller's IA,
/// JA and local array into it, so that every routine works on DTYPE 1 alone; the pad lies
/// before every submatrix and is never read. Other DTYPE 2 descriptors keep dtype 2, which the
/// routines refuse (the drop-in hands those calls to ScaLAPACK).
struct Descriptor {
  int dtype = 1;    ///< DTYPE_: 1 for a dense matrix (2 only for a DTYPE 2 one not read as DTYPE 1).
  int context = 0;  ///< CTXT_: the BLACS context of the grid.
  int m = 0;        ///< M_: global rows (with row_pad).
  int n = 0;        ///< N_: global columns (with col_pad).
  int mb = 1;       ///< MB_: rows per block.
  int nb = 1;       ///< NB_: columns per block.
  int rsrc = 0;     ///< RSRC_: the process row of the first block row.
  int csrc = 0;     ///< CSRC_: the process column of the first block column.
  int lld = 1;      ///< LLD_: the leading dimension of the local array.
  int row_pad = 0;  ///< DTYPE 2: MB_ - IMB_, the rows before the caller's first.
  int col_pad = 0;  ///< DTYPE 2: NB_ - INB_, the columns before the caller's first.

  /// From the integers of DESC (9 for DTYPE 1, 11 for DTYPE 2).
  static Descriptor from(const int* d) {
    if (d[0] != 2) return {d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8]};
    Descriptor r{2, d[1], d[2], d[3], d[6], d[7], d[8], d[9], d[10]};
    const int imb = d[4], inb = d[5];
    if (imb >= 1 && inb >= 1 && imb <= r.mb && inb <= r.nb && r.m >= 0 && r.n >= 0 && r.m <= INT_MAX - r.mb &&
        r.n <= INT_MAX - r.nb) {
      r.dtype = 1, r.row_pad = r.mb - imb, r.col_pad = r.nb - inb;
      r.m += r.row_pad, r.n += r.col_pad;
    }
    return r;
  }
  /// The distribution of the rows on grid `g`.
  [[nodiscard]] BlockCyclicDim row_dim(const Grid& g) const { return {m, mb, rsrc, g.rows}; }
  /// The distribution of the columns on grid `g`.
  [[nodiscard]] BlockCyclicDim col_dim(const Grid& g) const { return {n, nb, csrc, g.cols}; }
  /// The caller's IA as this descriptor counts rows.
  [[nodiscard]] int row(int ia) const { return ia + row_pad; }
  /// The caller's JA as this descriptor counts columns.
  [[nodiscard]] int col(int ja) const { return ja + col_pad; }
  /// The caller's local array as this descriptor's on grid process (g.row, g.col): the first
  /// block's process row stores no pad rows, so its local row r is this one's r + row_pad
  /// (columns likewise). Only elements at or after the caller's first are ever addressed.
  template <typename Pointer>
  [[nodiscard]] Pointer origin(Pointer local, const Grid& g) const {
    const std::int64_t shift = (g.row == rsrc ? row_pad : 0) + (g.col == csrc ? std::int64_t{col_pad} * lld : 0);
    return shift == 0 || local == nullptr ? local : local - shift;
  }
  /// The caller's local array, IA and JA, in place, as this descriptor counts them (origin(),
  /// row(), col()): what each routine does to each operand at its entry.
  template <typename Pointer>
  void locate(Pointer& local, int& i, int& j, const Grid& g) const {
    local = origin(local, g), i = row(i), j = col(j);
  }
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
  std::int64_t relabeled = 0;         ///< Redistributed calls whose processes play other ranks of the plan,
                                      ///< so that more data stays where it lies (COSTA's relabeling).
  std::int64_t agreements_skipped = 0;  ///< Calls that communicated without the agreement, on the
                                        ///< one their call shape had before (SHARDWISE_PGEMM_AGREEMENT).
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

/// Calls f(global row, global column, local offset, length) for each run of rows of `source`
/// that process (p, q) holds within one column (consecutive in both the global and the local
/// index), in for_each_held's order.
template <typename F>
void for_each_held_run(const BlockCyclicDim& rows, const BlockCyclicDim& cols, int p, int q, const Rect& source,
                       std::int64_t ld, F&& f) {
  if (source.rows <= 0 || source.cols <= 0) return;
  for_each_run(cols, q, source.col0, source.cols, [&](const IndexRun& c) {
    for (std::int64_t j = 0; j < c.length; ++j)
      for_each_run(rows, p, source.row0, source.rows,
                   [&](const IndexRun& r) { f(r.global, c.global + j, (c.local + j) * ld + r.local, r.length); });
  });
}

/// Calls f(global row, global column, local offset) for the elements of `source` that
/// process (p, q) holds, in a fixed order (column runs, columns, row runs, rows), which the
/// sender and the receiver both follow.
template <typename F>
void for_each_held(const BlockCyclicDim& rows, const BlockCyclicDim& cols, int p, int q, const Rect& source,
                   std::int64_t ld, F&& f) {
  for_each_held_run(rows, cols, p, q, source, ld,
                    [&](std::int64_t gr, std::int64_t gc, std::int64_t offset, std::int64_t length) {
                      for (std::int64_t i = 0; i < length; ++i) f(gr + i, gc, offset + i);
                    });
}

/// How many elements of `source` process (p, q) holds.
inline std::int64_t held_count(const BlockCyclicDim& rows, const BlockCyclicDim& cols, int p, int q, const Rect& source) {
  if (source.rows <= 0 || source.cols <= 0) return 0;
  const std::int64_t r = held_below(rows, p, source.row0 + source.rows) - held_below(rows, p, source.row0);
  const std::int64_t c = held_below(cols, q, source.col0 + source.cols) - held_below(cols, q, source.col0);
  return r * c;
}

#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
/// On a simulated cluster the drop-in's operand-sized buffers fold as the kernels' workspace
/// does (detail/simulation.hpp): at P = 256 a large-k product's redistribution would otherwise
/// hold four copies of A and B in the simulator's memory.
template <typename T>
struct folding_allocator {
  using value_type = T;
  folding_allocator() = default;
  template <typename U>
  folding_allocator(const folding_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    void* memory = shardwise::detail::simulation::allocate(n * sizeof(T));
    if (memory == nullptr) throw std::bad_alloc();
    return static_cast<T*>(memory);
  }
  void deallocate(T* p, std::size_t) noexcept { shardwise::detail::simulation::deallocate(p); }
  friend bool operator==(const folding_allocator&, const folding_allocator&) { return true; }
};
template <typename Scalar>
using scratch_vector = std::vector<Scalar, folding_allocator<Scalar>>;
#else
template <typename Scalar>
using scratch_vector = std::vector<Scalar>;
#endif

/// Buffers kept from call to call: no allocation in the steady state.
template <typename Scalar>
struct pgemm_workspace {
  scratch_vector<Scalar> send, receive, a, b, c, partial;
  std::vector<std::int64_t> send_elements, receive_elements;  ///< per rank, before set_counts
  std::vector<int> send_counts, send_offsets, receive_counts, receive_offsets;
  std::vector<std::int64_t> held_rows, held_cols;  ///< the in-place SUMMA's cyclic_holders
  std::vector<MPI_Request> requests;                ///< the redistribution's messages (exchange)
};

template <typename Scalar>
pgemm_workspace<Scalar>& workspace() {
  static pgemm_workspace<Scalar> w;
  return w;
}

/// Why an argument is out of ScaLAPACK's rules on this rank (empty: none); `i` and `j` as `d`
/// counts them (Descriptor::row, col). With `lld` false,
/// without the one check whose verdict may differ between processes that pass the same
/// arguments (LLD_ against this process's local rows).
inline std::string check_operand(const char* name, const Descriptor& d, const Grid& g, int i, int j,
                                 std::int64_t rows, std::int64_t cols, bool lld = true) {
  const std::string n = name;
  if (d.dtype == 2)
    return "DESC" + n + " is of DTYPE_ 2 with IMB_ or INB_ below 1 or above MB_ or NB_ (a first block larger than "
                        "the others is not computed here)";
  if (d.dtype != 1)
    return "DESC" + n + "(DTYPE_) is " + std::to_string(d.dtype) + ", not 1 or 2 (dense block-cyclic)";
  if (d.m < 0 || d.n < 0) return "DESC" + n + " has a negative extent";
  if (d.mb < 1 || d.nb < 1) return "DESC" + n + "'s block sizes MB and NB must be at least 1";
  if (d.rsrc < 0 || d.rsrc >= g.rows || d.csrc < 0 || d.csrc >= g.cols)
    return "DESC" + n + "'s RSRC/CSRC are outside the grid";
  // A DTYPE 2 array stores no pad rows (Descriptor).
  const std::int64_t stored_rows = d.row_dim(g).local_extent(g.row) - (g.row == d.rsrc ? d.row_pad : 0);
  if (lld && d.lld < std::max<std::int64_t>(1, stored_rows)) return "DESC" + n + "(LLD_) is smaller than the local rows";
  if (i - d.row_pad < 1 || j - d.col_pad < 1) return "I" + n + " and J" + n + " must be at least 1";
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

}  // namespace detail

}  // namespace shardwise::scalapack
