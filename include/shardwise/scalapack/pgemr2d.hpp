// shardwise/scalapack/pgemr2d.hpp: ScaLAPACK's p?gemr2d, computed by shardwise.
//
//   sub(B) := sub(A)      sub(A) = A(IA:IA+M-1, JA:JA+N-1), sub(B) = B(IB:IB+M-1, JB:JB+N-1)
//
// between two block-cyclic layouts, possibly on two different BLACS grids: a process may be in
// A's grid, B's, both or neither (its descriptor of a grid it is not in has CTXT_ = -1, and the
// rest of that descriptor is not read), and ICTXT is a context whose grid holds every process of
// both; every process of ICTXT's grid calls.
//
// How: one all-gather over ICTXT's communicator of what each process knows (its place in either
// grid, the grids' shapes, the descriptors' distributions, its own verdict on its arguments),
// which tells every process where each process of A's and B's grids is in ICTXT's communicator
// (so the grids' own communicators are never needed); when both operands are on ICTXT's own
// grid, every process already knows that, and one small all-reduce of the arguments replaces the
// all-gather. Then one exchange, one message per pair of processes that share elements
// (block_cyclic_copy.hpp). M or N = 0 returns at once, as
// PDGEMR2D does. Every process takes the same path, from the same gathered data: computed here,
// or refused everywhere with the reason (the drop-in then hands the call to ScaLAPACK's own
// routine, which reports invalid arguments as it always has): arguments out of the rules on any
// process, processes that disagree on M, N, or a grid's shape or descriptor, a grid whose
// processes do not all answer (a process of A's or B's grid outside ICTXT's), a submatrix of
// more than 2^31 - 1 elements. A process that is not in ICTXT's grid, or whose ICTXT has no MPI
// communicator of its grid's size, refuses alone (it cannot take part).
#pragma once

#include <mpi.h>

#include <array>
#include <numeric>
#include <cstdint>
#include <string>
#include <vector>

#include "shardwise/scalapack/blacs.hpp"
#include "shardwise/scalapack/block_cyclic_copy.hpp"
#include "shardwise/scalapack/pgemm.hpp"

namespace shardwise::scalapack {

namespace detail {

inline RedistributionStats& pgemr2d_stats_storage() {
  static RedistributionStats s;
  return s;
}

/// This process's view of one of the two grids: whether it is in it, where, the grid's shape.
inline Grid place_in(int context, bool& member) {
  Grid g;
  member = context != -1 && in_grid(context);
  if (member) Cblacs_gridinfo(context, &g.rows, &g.cols, &g.row, &g.col);
  return g;
}

/// A side of the copy as this process sees it locally (ranks left empty); `i` and `j` as `d`
/// counts them.
inline BlockCyclicSide local_side(const Descriptor& d, bool member, const Grid& g, int i, int j) {
  if (!member) return {};
  return {d.row_dim(g), d.col_dim(g), i - 1, j - 1, d.lld, {}, g.row, g.col};
}

/// The fields of one grid's side that each process contributes to the all-gather.
constexpr std::size_t side_fields = 13;  // member, row, col, rows, cols, M_, N_, MB, NB, RSRC, CSRC, I, J
constexpr std::size_t head_fields = 4;   // verdict, M, N, scalar bytes
constexpr std::size_t record_fields = head_fields + 2 * side_fields;

inline void put_side(std::int64_t* at, bool member, const Grid& g, const Descriptor& d, int i, int j) {
  at[0] = member ? 1 : 0;
  if (!member) return;
  const std::array<std::int64_t, side_fields - 1> fields{g.row, g.col, g.rows, g.cols, d.m, d.n,
                                                         d.mb,  d.nb,  d.rsrc, d.csrc, i,   j};
  std::copy(fields.begin(), fields.end(), at + 1);
}

/// From every process's record: one grid's side, with its processes' ranks in the communicator
/// (this process's place and LLD from `mine`). Empty string when consistent; else why not.
inline std::string gather_side(const std::vector<std::int64_t>& records, int ranks, std::size_t offset,
                               const char* name, const BlockCyclicSide& mine, BlockCyclicSide& side) {
  const std::int64_t* shape = nullptr;  // the first member's fields
  std::vector<std::int64_t> seen;
  for (int r = 0; r < ranks; ++r) {
    const std::int64_t* at = records.data() + static_cast<std::size_t>(r) * record_fields + offset;
    if (at[0] == 0) continue;
    if (shape == nullptr) {
      shape = at;
      seen.assign(static_cast<std::size_t>(at[3] * at[4]), -1);
    }
    if (!std::equal(at + 3, at + side_fields, shape + 3))
      return std::string("the processes of ") + name + "'s grid disagree on its shape, descriptor or submatrix";
    const std::int64_t place = at[1] * at[4] + at[2];
    if (seen[static_cast<std::size_t>(place)] != -1)
      return std::string("two processes claim one place in ") + name + "'s grid";
    seen[static_cast<std::size_t>(place)] = r;
  }
  if (shape == nullptr) return std::string("no process is in ") + name + "'s grid";
  for (std::int64_t r : seen)
    if (r < 0) return std::string("a process of ") + name + "'s grid is not in ICTXT's";
  const auto rows = static_cast<int>(shape[3]), cols = static_cast<int>(shape[4]);
  side = mine;
  side.rows = {shape[5], shape[7], static_cast<int>(shape[9]), rows};
  side.cols = {shape[6], shape[8], static_cast<int>(shape[10]), cols};
  side.row0 = shape[11] - 1, side.col0 = shape[12] - 1;
  side.ranks.assign(seen.begin(), seen.end());
  return {};
}

}  // namespace detail

/// This process's p?gemr2d counts since the start (or the last reset).
inline RedistributionStats pgemr2d_stats() { return detail::pgemr2d_stats_storage(); }
/// Sets them back to zero.
inline void reset_pgemr2d_stats() { detail::pgemr2d_stats_storage() = {}; }

/// The model of the bytes this process sends in pgemr2d() with these (valid) arguments: the
/// elements of sub(A) it holds whose place in sub(B) is not its own. From this process's
/// arguments and grids alone (a process outside A's grid sends nothing).
template <typename Scalar>
std::int64_t pgemr2d_sent_bytes(int m, int n, int ia, int ja, const int* desca, int ib, int jb, const int* descb) {
  if (m <= 0 || n <= 0) return 0;
  bool in_a = false, in_b = false;
  const Grid grid_a = detail::place_in(desca[1], in_a), grid_b = detail::place_in(descb[1], in_b);
  const Descriptor da = in_a ? Descriptor::from(desca) : Descriptor{}, db = in_b ? Descriptor::from(descb) : Descriptor{};
  return static_cast<std::int64_t>(sizeof(Scalar)) *
         detail::copy_sent_elements({m, n, false}, detail::local_side(da, in_a, grid_a, da.row(ia), da.col(ja)),
                                    detail::local_side(db, in_b, grid_b, db.row(ib), db.col(jb)));
}

/// sub(B) := sub(A), collective over the grid of `ictxt` (see the top of this file). `a` and
/// `desca` are read only on A's grid, `b` and `descb` only on B's.
template <typename Scalar>
PgemmOutcome pgemr2d(int m, int n, const Scalar* a, int ia, int ja, const int* desca, Scalar* b, int ib, int jb,
                     const int* descb, int ictxt) {
  static_assert(shardwise::detail::is_array_scalar_v<Scalar>,
                "shardwise::scalapack::pgemr2d: the scalar must be float, double, std::complex<float> or "
                "std::complex<double> (psgemr2d, pdgemr2d, pcgemr2d, pzgemr2d)");
  using namespace detail;
  RedistributionStats& stats = pgemr2d_stats_storage();
  ++stats.calls;
  const auto refuse = [&](std::string reason) {
    ++stats.not_covered;
    return PgemmOutcome{PgemmResult::not_covered, std::move(reason)};
  };
  if (m == 0 || n == 0) {  // PDGEMR2D returns before anything else
    ++stats.without_communication;
    return {};
  }

  // ICTXT's communicator: this process's own facts, decided alone.
  if (!in_grid(ictxt)) return refuse("this process is not in the grid of ICTXT");
  int ictxt_rows = 0, ictxt_cols = 0, row = 0, col = 0, handle = 0;
  Cblacs_gridinfo(ictxt, &ictxt_rows, &ictxt_cols, &row, &col);
  Cblacs_get(ictxt, 10, &handle);
  const MPI_Comm comm = Cblacs2sys_handle(handle);
  int ranks = 0, me = 0;
  if (comm != MPI_COMM_NULL) MPI_Comm_size(comm, &ranks), MPI_Comm_rank(comm, &me);
  if (comm == MPI_COMM_NULL || ranks != ictxt_rows * ictxt_cols)
    return refuse("ICTXT's grid has no MPI communicator of its size");

  // This process's places and verdict, then everyone's.
  bool in_a = false, in_b = false;
  const Grid grid_a = place_in(desca[1], in_a), grid_b = place_in(descb[1], in_b);
  // A's descriptor is read on A's grid only, B's on B's; from here on each operand as its
  // Descriptor counts it (DTYPE 2 as DTYPE 1).
  const Descriptor da = in_a ? Descriptor::from(desca) : Descriptor{}, db = in_b ? Descriptor::from(descb) : Descriptor{};
  if (in_a) da.locate(a, ia, ja, grid_a);
  if (in_b) db.locate(b, ib, jb, grid_b);
  std::string problem;
  if (m < 0 || n < 0) problem = "M and N must not be negative";
  if (problem.empty() && in_a) problem = check_operand("A", da, grid_a, ia, ja, m, n);
  if (problem.empty() && in_b) problem = check_operand("B", db, grid_b, ib, jb, m, n);
  std::array<std::int64_t, record_fields> mine{};
  mine[0] = problem.empty() ? 0 : 1, mine[1] = m, mine[2] = n, mine[3] = static_cast<std::int64_t>(sizeof(Scalar));
  put_side(mine.data() + head_fields, in_a, grid_a, da, ia, ja);
  put_side(mine.data() + head_fields + side_fields, in_b, grid_b, db, ib, jb);
  const CopyShape shape{m, n, false};
  BlockCyclicSide source, target;

  // Both operands on ICTXT's own grid (a new block size, a copy within one grid): the process at
  // (row, col) is rank row * NPCOL + col of ICTXT's communicator, so every process knows where
  // every other is, and one small all-reduce agrees on the arguments, as p?tran's does. The
  // all-gather below takes P - 1 steps of latency as a ring (2.1 ms at P = 1024 on the simulated
  // fat tree, more than some whole copies); it stays for every other call, and names the reason
  // of a refusal.
  const bool own_grid = in_a && in_b && desca[1] == ictxt && descb[1] == ictxt && me == row * ictxt_cols + col;
  std::vector<std::int64_t> shared(mine.begin() + 1, mine.end());  // but each process's own places
  for (std::size_t side : {head_fields, head_fields + side_fields})
    shared[side] = shared[side + 1] = 0;  // mine[side + 1], mine[side + 2]: row and col
  if (agree(comm, problem.empty() && own_grid, shared)) {
    source = local_side(da, true, grid_a, ia, ja), target = local_side(db, true, grid_b, ib, jb);
    source.ranks.resize(static_cast<std::size_t>(ranks));
    std::iota(source.ranks.begin(), source.ranks.end(), 0);
    target.ranks = source.ranks;
  } else {
    std::vector<std::int64_t> records(static_cast<std::size_t>(ranks) * record_fields);
    MPI_Allgather(mine.data(), static_cast<int>(record_fields), MPI_INT64_T, records.data(),
                  static_cast<int>(record_fields), MPI_INT64_T, comm);
    for (int r = 0; r < ranks; ++r) {
      const std::int64_t* at = records.data() + static_cast<std::size_t>(r) * record_fields;
      if (at[0] != 0) return refuse(problem.empty() ? "another process's arguments are out of the rules" : problem);
      if (!std::equal(at + 1, at + head_fields, mine.data() + 1))
        return refuse("the processes disagree on M, N or the scalar type");
    }
    std::string inconsistent =
        gather_side(records, ranks, head_fields, "A", local_side(da, in_a, grid_a, ia, ja), source);
    if (inconsistent.empty())
      inconsistent =
          gather_side(records, ranks, head_fields + side_fields, "B", local_side(db, in_b, grid_b, ib, jb), target);
    if (!inconsistent.empty()) return refuse(inconsistent);
  }
  if (!copy_fits_int(shape)) return refuse("sub(A) has more than 2^31 - 1 elements");

  copy(comm, shape, source, a, target, b, [](Scalar& into, const Scalar& v) { into = v; }, stats);
  ++stats.redistributed;
  return {};
}

}  // namespace shardwise::scalapack
