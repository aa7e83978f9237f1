// shardwise/scalapack/array_descriptor.hpp: the library's block-cyclic arrays as ScaLAPACK
// sees them, and ScaLAPACK's local arrays as the library's arrays, with no copy either way.
//
//   using Grid2 = sw::Mesh<sw::Axis<"r", sw::dynamic_extent>, sw::Axis<"c", sw::dynamic_extent>>;
//   using Cyclic = sw::TensorSharding<sw::BlockCyclic<"r", 64>, sw::BlockCyclic<"c", 64>>;
//   using A_t = sw::ShardedMatrix<double, Grid2, Cyclic, Eigen::ColMajor>;
//   auto a = A_t::generate(groups, {n, n}, f);                  // each rank its own blocks
//   const auto desc = sw::scalapack::descriptor(a, context);    // DESCA for ScaLAPACK
//   pdgesv_(&n, &one, a.data(), &one, &one, desc.data(), ...);  // works in a's memory
//   auto v = sw::scalapack::view<A_t>(groups, local, desca);    // a program's local array, typed
//   auto c = sw::matmul(v, b);                                   // block_cyclic_matmul_plan
//
// A BLACS grid is a mesh of two axes: the grid's rows are the mesh axis that deals the matrix's
// row blocks, its columns the axis that deals the column blocks. The grid order picks the mesh's
// axis order: BLACS numbers a row-major grid's processes (row, col) -> row * NPCOL + col, so the
// row axis comes first (Mesh<Axis<"r", P>, Axis<"c", Q>>); a column-major grid puts the column
// axis first. Both functions check, on every rank, that the grid of the context is the mesh
// (NPROW and NPCOL its extents, MYROW and MYCOL this rank's coordinates), that the descriptor's
// MB, NB, RSRC and CSRC are the sharding's BlockCyclic parameters and that LLD holds the local
// rows; a mismatch on any rank is the same std::invalid_argument on every rank. view() also
// checks that every rank passes the same M, N, MB, NB, RSRC and CSRC, before LLD (which must
// hold the rows that M gives this rank): a descriptor that differs on one rank is reported as
// that, naming the entry and the ranks, not as the LLD it makes too small.
#pragma once

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include "shardwise/comm/consistency.hpp"
#include "shardwise/distributed_array.hpp"
#include "shardwise/scalapack/blacs.hpp"
#include "shardwise/view.hpp"

namespace shardwise::scalapack {

namespace detail {

/// The static checks: a matrix whose rows and columns are both block-cyclic, column-major.
template <typename A>
constexpr void check_scalapack_array() {
  static_assert(shardwise::detail::is_matrix_type_v<A>,
                "shardwise::scalapack: the array must be a ShardedMatrix (ScaLAPACK's arrays are matrices)");
  if constexpr (shardwise::detail::is_matrix_type_v<A>) {
    static_assert(A::sharding::dim_cycle[0] > 0 && A::sharding::dim_cycle[1] > 0,
                  "shardwise::scalapack: ScaLAPACK's layout is block-cyclic in both dimensions: give the matrix a "
                  "TensorSharding<BlockCyclic<\"row axis\", MB, RSRC>, BlockCyclic<\"column axis\", NB, CSRC>>");
    static_assert(A::storage_order == Eigen::ColMajor,
                  "shardwise::scalapack: ScaLAPACK's local arrays are column-major; declare the matrix with "
                  "Eigen::ColMajor");
  }
}

/// Why the grid of `context` and `desc` do not fit array type A on this rank (empty: they do).
template <typename A, MeshType M>
std::string mismatch(const ProcessGroupMesh<M>& groups, int context, const std::array<int, 9>& desc) {
  int rows = 0, cols = 0, row = -1, col = -1;
  Cblacs_gridinfo(context, &rows, &cols, &row, &col);
  const int row_axis = A::axes.dim(0)[0], col_axis = A::axes.dim(1)[0];
  const auto& mesh = groups.mesh();
  const auto& at = groups.coordinate();
  auto text = [](auto... pieces) { return shardwise::detail::message({pieces...}); };
  if (row < 0 || col < 0) return text("this process is not in the grid of BLACS context ", std::int64_t{context});
  if (rows != mesh.extent(static_cast<std::size_t>(row_axis)) || cols != mesh.extent(static_cast<std::size_t>(col_axis)))
    return text("the BLACS grid is ", std::int64_t{rows}, " x ", std::int64_t{cols}, " but the mesh's axes are ",
                std::int64_t{mesh.extent(static_cast<std::size_t>(row_axis))}, " x ",
                std::int64_t{mesh.extent(static_cast<std::size_t>(col_axis))});
  if (row != at[static_cast<std::size_t>(row_axis)] || col != at[static_cast<std::size_t>(col_axis)])
    return text("this process is (", std::int64_t{row}, ", ", std::int64_t{col}, ") in the BLACS grid but (",
                std::int64_t{at[static_cast<std::size_t>(row_axis)]}, ", ",
                std::int64_t{at[static_cast<std::size_t>(col_axis)]},
                ") on the mesh: a row-major grid needs the row axis first in the Mesh, a column-major one the "
                "column axis");
  if (desc[0] != 1) return text("DTYPE_ is ", std::int64_t{desc[0]}, ", not 1 (dense block-cyclic)");
  if (desc[2] < 0 || desc[3] < 0) return text("the descriptor has a negative extent");
  if (desc[4] != A::sharding::dim_cycle[0] || desc[5] != A::sharding::dim_cycle[1])
    return text("the descriptor's blocks are ", std::int64_t{desc[4]}, " x ", std::int64_t{desc[5]},
                " but the sharding's are ", A::sharding::dim_cycle[0], " x ", A::sharding::dim_cycle[1]);
  if (desc[6] != A::sharding::dim_first[0] || desc[7] != A::sharding::dim_first[1])
    return text("the descriptor's first process is (", std::int64_t{desc[6]}, ", ", std::int64_t{desc[7]},
                ") but the sharding's is (", std::int64_t{A::sharding::dim_first[0]}, ", ",
                std::int64_t{A::sharding::dim_first[1]}, ")");
  return {};
}

/// Why `desc`'s LLD_ is too small for the rows this rank holds (empty: it is not), for a rank in
/// the grid of `context`. The rows follow from M_, so this is checked once every rank is known
/// to pass the same M_: otherwise the consequence ("LLD_ is 11 but this process holds 12 rows")
/// would hide the cause (M_ differs across ranks).
inline std::string local_rows_mismatch(int context, const std::array<int, 9>& desc) {
  int rows = 0, cols = 0, row = -1, col = -1;
  Cblacs_gridinfo(context, &rows, &cols, &row, &col);
  const shardwise::BlockCyclicDim r{desc[2], desc[4], desc[6], rows};
  if (desc[8] < std::max<std::int64_t>(1, r.local_extent(row)))
    return shardwise::detail::message({"LLD_ is ", std::int64_t{desc[8]}, " but this process holds ",
                                       r.local_extent(row), " rows"});
  return {};
}

}  // namespace detail

/// A typed view of a ScaLAPACK local array (`local`, column-major, leading dimension LLD) and
/// its descriptor `desc`, as array type A (a ShardedMatrix whose rows and columns are
/// BlockCyclic, column-major; see the top of this file): no copy. Collective over the mesh.
template <typename A, typename E, MeshType M>
auto view(const ProcessGroupMesh<M>& groups, E* local, const int* desc) {
  detail::check_scalapack_array<A>();
  std::array<int, 9> d{};
  for (int i = 0; i < 9; ++i) d[static_cast<std::size_t>(i)] = desc[i];
  // First what each rank can tell from its own grid and descriptor against the type, and that
  // the descriptors agree; then LLD_ against the local rows, which follow from the agreed M_.
  LocalProblem problem;
  const std::string text = detail::mismatch<A>(groups, d[1], d);
  if (!text.empty()) problem.set(text);
  const std::int64_t values[] = {d[2], d[3], d[4], d[5], d[6], d[7]};
  agree_on_all_ranks(groups.world(), values, problem, "shardwise::scalapack::view", "the descriptors",
                     "M_|N_|MB_|NB_|RSRC_|CSRC_");
  LocalProblem rows_problem;
  const std::string rows_text = detail::local_rows_mismatch(d[1], d);
  if (!rows_text.empty()) rows_problem.set(rows_text);
  agree_on_all_ranks(groups.world(), std::span<const std::int64_t>{}, rows_problem, "shardwise::scalapack::view",
                     "the descriptors");
  using V = typename shardwise::detail::view_type_of<A, E>::type;
  return V(groups, {d[2], d[3]}, local, {1, d[8]}, shardwise::detail::view_unchecked_t{});
}

/// The ScaLAPACK descriptor (DTYPE_, CTXT_, M_, N_, MB_, NB_, RSRC_, CSRC_, LLD_) of a
/// block-cyclic matrix of the library (owning or a view of column-major memory) on the grid of
/// BLACS context `context`, so that ScaLAPACK routines work in its memory (data()). Collective
/// over the mesh: the grid is checked against it on every rank.
template <typename A>
std::array<int, 9> descriptor(const A& a, int context) {
  detail::check_scalapack_array<A>();
  const std::int64_t ld = std::max<std::int64_t>({1, a.local_rows(), a.stride(1)});
  const std::array<int, 9> d{1, context, static_cast<int>(a.rows()), static_cast<int>(a.cols()),
                             static_cast<int>(A::sharding::dim_cycle[0]), static_cast<int>(A::sharding::dim_cycle[1]),
                             A::sharding::dim_first[0], A::sharding::dim_first[1], static_cast<int>(ld)};
  LocalProblem problem;
  if (!a.valid())  // reported on every rank by the agreement below, not on this rank alone
    problem.set(shardwise::detail::unusable_text("the matrix", "matrix", a.released()),
                LocalProblem::Kind::logic_error);
  else if (a.rows() > INT_MAX || a.cols() > INT_MAX || ld > INT_MAX)
    problem.set("the matrix has more than 2^31 - 1 rows, columns or local rows, which a descriptor cannot hold");
  else if (const std::string text = detail::mismatch<A>(a.groups(), context, d); !text.empty())
    problem.set(text);
  else if (const std::string rows_text = detail::local_rows_mismatch(context, d); !rows_text.empty())
    problem.set(rows_text);
  const std::int64_t values[] = {a.rows(), a.cols()};
  agree_on_all_ranks(a.groups().world(), values, problem, "shardwise::scalapack::descriptor", "the global shapes",
                     "rows|columns");
  return d;
}

}  // namespace shardwise::scalapack
