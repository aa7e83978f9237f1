// The edges where users live, under mpiexec (2, 3 and 4 ranks, see tests/meson.build): a
// mistake made on ONE rank only, the others correct, is the same error on every rank and never
// a hang (every precondition goes into the operation's one agreement); a caller's own buffers
// are checked against the partition and for overlap; a C that partly overlaps A is still right;
// NaN in is NaN out. The checks are collective (mpi_errors.hpp): a hang fails the test's timeout.
#include <gtest/gtest.h>
#include <mpi.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mpi_errors.hpp"
#include "mpi_support.hpp"
#include "shardwise/detail/partition.hpp"
#include "shardwise/matmul.hpp"
#include "shardwise/plan/sharding_planner.hpp"
#include "shardwise/tensor.hpp"

namespace {

namespace sw = shardwise;
using sw::testing::expect_same_error_on_every_rank;
using sw::testing::world_rank;
using sw::testing::world_size;

using Line = sw::Mesh<sw::Axis<"p", sw::dynamic_extent>>;
using Rows = sw::TensorSharding<sw::Split<"p">, sw::Replicated>;
using Cols = sw::TensorSharding<sw::Replicated, sw::Split<"p">>;
using Whole = sw::TensorSharding<sw::Replicated, sw::Replicated>;
using Vec = sw::ShardedTensor<double, Line, sw::TensorSharding<sw::Split<"p">>>;
using Tensor3 = sw::ShardedTensor<double, Line, sw::TensorSharding<sw::Split<"p">, sw::Replicated, sw::Replicated>>;
using Tensor2 = sw::ShardedTensor<double, Line, sw::TensorSharding<sw::Replicated, sw::Replicated>>;

/// The last rank: the one that makes the mistake.
int last() { return world_size() - 1; }
bool on_last() { return world_rank() == last(); }
/// Every rank but the last, as the messages list them.
std::string all_but_last() {
  return world_size() == 2 ? "rank 0" : "ranks 0\u2013" + std::to_string(world_size() - 2);
}
std::string on_last_rank() { return " (on rank " + std::to_string(last()) + ")"; }

sw::ProcessGroupMesh<Line> line_groups() { return sw::ProcessGroupMesh<Line>(MPI_COMM_WORLD, Line{world_size()}); }

// ---- an operand moved from or released on one rank only ---------------------------------------

TEST(OneRankOnly, MatmulOfAMatrixMovedFrom) {
  const auto groups = line_groups();
  sw::ShardedMatrix<double, Line, Cols> a(groups, 9, 8);
  const sw::ShardedMatrix<double, Line, Rows> b(groups, 8, 6);
  std::optional<sw::ShardedMatrix<double, Line, Cols>> taken;
  if (on_last()) taken.emplace(std::move(a));
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)sw::matmul(a, b); },  // NOLINT(bugprone-use-after-move): the point
      "shardwise::matmul: A was moved from (it no longer holds a block); use the matrix it was moved into" +
          on_last_rank());
}

TEST(OneRankOnly, EinsumOfATensorMovedFrom) {
  const auto groups = line_groups();
  const Tensor3 x(groups, {9, 3, 4});
  Tensor2 w(groups, {4, 5});
  std::optional<Tensor2> taken;
  if (on_last()) taken.emplace(std::move(w));
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)sw::einsum<"bsm,mh->bsh">(x, w); },  // NOLINT(bugprone-use-after-move)
      "shardwise::einsum: B was moved from (it no longer holds a block); use the tensor it was moved into" +
          on_last_rank());
}

TEST(OneRankOnly, EinsumOfOperandsWithOtherDimensions) {
  // The last rank contracts a 3-D tensor where the others contract a matrix: each rank's
  // agreement has another number of values, and it is still every rank's one error.
  const auto groups = line_groups();
  const Tensor3 x(groups, {9, 3, 4});
  const sw::ShardedTensor<double, Line, sw::TensorSharding<sw::Split<"p">, sw::Replicated>> y(groups, {9, 4});
  const Tensor2 w(groups, {4, 5});
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD,
      [&] {
        if (on_last()) (void)sw::einsum<"bsm,mh->bsh">(x, w);
        else (void)sw::einsum<"bm,mh->bh">(y, w);
      },
      "shardwise::einsum: the extents of A and B differ across ranks (every rank must pass the same): the operands "
      "have other types or dimensions on some ranks (the call agrees on 5 values on " + all_but_last() + ", 6 on rank " +
          std::to_string(last()) + ")");
}

TEST(OneRankOnly, GemmIntoAReleasedC) {
  const auto groups = line_groups();
  const sw::ShardedMatrix<double, Line, Cols> a(groups, 9, 8);
  const sw::ShardedMatrix<double, Line, Rows> b(groups, 8, 6);
  sw::ShardedMatrix<double, Line, Whole> c(groups, 9, 6);
  std::optional<Eigen::MatrixXd> block;
  if (on_last()) block.emplace(std::move(c).release());
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { sw::gemm(1.0, a, b, 0.0, c); },
      "shardwise::gemm: C was released (release() moved its block out)");
}

TEST(OneRankOnly, ToGlobalAndReshardOfAMatrixMovedFrom) {
  const auto groups = line_groups();
  sw::ShardedMatrix<double, Line, Rows> a(groups, 9, 4);
  std::optional<sw::ShardedMatrix<double, Line, Rows>> taken;
  if (on_last()) taken.emplace(std::move(a));
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)a.to_global(); },  // NOLINT(bugprone-use-after-move)
      "shardwise::ShardedMatrix::to_global: the matrix was moved from (it no longer holds a block); use the matrix "
      "it was moved into" + on_last_rank());
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)sw::reshard<Whole>(a); },  // NOLINT(bugprone-use-after-move)
      "shardwise::reshard: the matrix was moved from" );
}

TEST(OneRankOnly, TransposedViewOfAMatrixMovedFrom) {
  // transposed and permuted are local: of an unusable matrix they give an unusable view, which
  // the next collective operation refuses on every rank.
  const auto groups = line_groups();
  sw::ShardedMatrix<double, Line, Rows> a(groups, 8, 9);
  const sw::ShardedMatrix<double, Line, Rows> b(groups, 8, 6);
  std::optional<sw::ShardedMatrix<double, Line, Rows>> taken;
  if (on_last()) taken.emplace(std::move(a));
  const auto at = sw::transposed(a);  // NOLINT(bugprone-use-after-move): the point
  EXPECT_EQ(at.valid(), !on_last());
  const auto b_again = sw::permuted<0, 1>(b);
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)sw::matmul(at, b_again); },
      "shardwise::matmul: A was moved from (it no longer holds a block); use the matrix it was moved into" +
          on_last_rank());
}

TEST(OneRankOnly, AdjointOfAComplexMatrixMovedFrom) {
  // A complex adjoint is an owning matrix made locally: of an unusable matrix an unusable one.
  using Complex = sw::ShardedMatrix<std::complex<double>, Line, Rows>;
  const auto groups = line_groups();
  Complex a(groups, 8, 9);
  const Complex b(groups, 8, 6);
  std::optional<Complex> taken;
  if (on_last()) taken.emplace(std::move(a));
  const auto ah = sw::adjoint(a);  // NOLINT(bugprone-use-after-move): the point
  EXPECT_EQ(ah.valid(), !on_last());
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)sw::matmul(ah, b); },
      "shardwise::matmul: A was moved from (it no longer holds a block); use the matrix it was moved into" +
          on_last_rank());
  // Released on one rank: the same, with release()'s words.
  Complex c(groups, 8, 9);
  if (on_last()) static_cast<void>(std::move(c).release());
  const auto ch = sw::adjoint(c);
  expect_same_error_on_every_rank<std::logic_error>(MPI_COMM_WORLD, [&] { (void)sw::matmul(ch, b); },
                                                    "shardwise::matmul: A was released" );
}

TEST(OneRankOnly, NormDotAndAxpyOfAVectorMovedFrom) {
  const auto groups = line_groups();
  Vec x(groups, {9});
  Vec y(groups, {9});
  std::optional<Vec> taken;
  if (on_last()) taken.emplace(std::move(x));
  const std::string moved = " was moved from (it no longer holds a block)";
  // NOLINTBEGIN(bugprone-use-after-move): the point of the test
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)sw::norm(x); }, "shardwise::norm: x" + moved);
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)sw::dot(x, y); }, "shardwise::dot: x" + moved);
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { sw::axpy(2.0, x, y); }, "shardwise::axpy: x" + moved);
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { sw::elementwise_into(y, [](double v) { return 2 * v; }, x); },
      "shardwise::elementwise: the first array" + moved);
  // NOLINTEND(bugprone-use-after-move)
}

// ---- an operand bound to another ProcessGroupMesh on one rank only -----------------------------

TEST(OneRankOnly, AnOperandOnAnotherProcessGroupMesh) {
  const auto groups = line_groups();
  const auto other = line_groups();  // every rank makes it; only the last binds B to it
  const sw::ShardedMatrix<double, Line, Cols> a(groups, 9, 8);
  const sw::ShardedMatrix<double, Line, Rows> b(on_last() ? other : groups, 8, 6);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::matmul(a, b); },
      "shardwise::matmul: the operands are bound to different ProcessGroupMesh objects; build both from the same one" +
          on_last_rank());
  const Tensor3 x(groups, {9, 3, 4});
  const Tensor2 w(on_last() ? other : groups, {4, 5});
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::einsum<"bsm,mh->bsh">(x, w); },
      "shardwise::einsum: the operands are bound to different ProcessGroupMesh objects; build both from the same "
      "one" + on_last_rank());
}

// ---- vectors of another length on one rank only ------------------------------------------------

TEST(OneRankOnly, DotAxpyAndElementwiseOfAnotherLength) {
  const auto groups = line_groups();
  const Vec x(groups, {9});
  Vec y(groups, {on_last() ? 10 : 9});
  const std::string lengths = "length of y: 9 on " + all_but_last() + ", 10 on rank " + std::to_string(last());
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::dot(x, y); },
      "shardwise::dot: the lengths of x and y differ across ranks (every rank must pass the same): " + lengths);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { sw::axpy(2.0, x, y); },
      "shardwise::axpy: the lengths and types of x and y differ across ranks (every rank must pass the same): " +
          lengths);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { sw::elementwise_into(y, [](double v) { return 2 * v; }, x); },
      "shardwise::elementwise: the arrays have different extents (the first is [9], the result [10])" +
          on_last_rank());
  // The same lengths everywhere: axpy runs, each rank on its own block.
  Vec z = Vec::generate(groups, {9}, [](std::int64_t i) { return static_cast<double>(i); });
  const Vec ones = Vec::generate(groups, {9}, [](std::int64_t) { return 1.0; });
  sw::axpy(2.0, ones, z);
  const auto whole = z.to_global();
  for (int i = 0; i < 9; ++i) EXPECT_EQ(whole(i), i + 2.0);
}

// ---- a call of other types on one rank only: two plans would run -------------------------------

TEST(OneRankOnly, AnOutputOfAnotherSharding) {
  const auto groups = line_groups();
  const sw::ShardedMatrix<double, Line, Cols> a(groups, 9, 8);
  const sw::ShardedMatrix<double, Line, Rows> b(groups, 8, 6);
  sw::ShardedMatrix<double, Line, Whole> c_whole(groups, 9, 6);
  sw::ShardedMatrix<double, Line, Rows> c_rows(groups, 9, 6);
  const std::string types = "the call's types (a fingerprint of the scalar, mesh, shardings, storage orders and "
                            "variant: every rank must call with the same types): ";
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD,
      [&] {
        if (on_last()) sw::gemm(1.0, a, b, 0.0, c_rows);
        else sw::gemm(1.0, a, b, 0.0, c_whole);
      },
      "shardwise::gemm: the shapes of A, B and C differ across ranks (every rank must pass the same): " + types);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD,
      [&] {
        if (on_last()) (void)sw::matmul<Rows>(a, b);
        else (void)sw::matmul<Whole>(a, b);
      },
      "shardwise::matmul: the shapes of A and B differ across ranks (every rank must pass the same): " + types);
  const sw::ShardedMatrix<double, Line, Rows, Eigen::ColMajor> b_in_columns(groups, 8, 6);  // another storage order
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD,
      [&] {
        if (on_last()) (void)sw::matmul(a, b_in_columns);
        else (void)sw::matmul(a, b);
      },
      types);
}

/// A memory budget of another shape on one rank: the budgets' shapes are agreed with the operands'.
template <typename M>
void expect_budget_shapes_agreed() {
  static constexpr sw::MatmulChoice choice = sw::plan_matmul(M{}, {{.m = 12, .k = 14, .n = 10}, 8, 4096});
  using Planned = sw::planned_matmul<M, choice>;
  constexpr sw::MatmulShape shape{.m = 12, .k = 14, .n = 10}, other{.m = 13, .k = 14, .n = 10};
  sw::ProcessGroupMesh<M> groups(MPI_COMM_WORLD);
  const sw::ShardedMatrix<double, M, typename Planned::a_sharding> a(groups, 12, 14);
  const sw::ShardedMatrix<double, M, typename Planned::b_sharding> b(groups, 14, 10);
  using C = typename Planned::c_sharding;
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD,
      [&] {
        if (on_last()) (void)sw::matmul<C>(a, b, typename Planned::variant{}, sw::memory_budget<other, 1 << 20>);
        else (void)sw::matmul<C>(a, b, typename Planned::variant{}, sw::memory_budget<shape, 1 << 20>);
      },
      "the memory budget's m: 12 on " + all_but_last() + ", 13 on rank " + std::to_string(last()));
}

TEST(OneRankOnly, AMemoryBudgetOfAnotherShape) {
  if (world_size() == 2) return expect_budget_shapes_agreed<sw::Mesh<sw::Axis<"x", 2>>>();
  if (world_size() == 3) return expect_budget_shapes_agreed<sw::Mesh<sw::Axis<"x", 3>>>();
  if (world_size() == 4) return expect_budget_shapes_agreed<sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>>();
  GTEST_SKIP() << "the planned meshes are for 2, 3 and 4 ranks";
}

// ---- the caller's own buffers -----------------------------------------------------------------

using ColA = sw::ShardedMatrix<double, Line, Rows, Eigen::ColMajor>;

TEST(CallersBuffers, LocalExtentsOfSaysWhichBlockEachRankHolds) {
  const auto groups = line_groups();
  const int p = world_size(), r = world_rank();
  const std::int64_t m = 2 * p + 1;
  const auto held = sw::local_extents_of<ColA>(groups, {m, 4});
  const auto offsets = sw::local_offsets_of<ColA>(groups, {m, 4});
  EXPECT_EQ(held[0], sw::detail::block_size(m, p, r));
  EXPECT_EQ(held[1], 4);
  EXPECT_EQ(offsets[0], sw::detail::block_begin(m, p, r));
  EXPECT_EQ(offsets[1], 0);
  // The owning array holds the same block; so does a block-cyclic one.
  const ColA owning(groups, m, 4);
  EXPECT_EQ(owning.local_extents(), held);
  using Cyclic = sw::ShardedMatrix<double, Line, sw::TensorSharding<sw::BlockCyclic<"p", 2>, sw::Replicated>,
                                   Eigen::ColMajor>;
  const Cyclic cyclic(groups, 11, 3);
  EXPECT_EQ(sw::local_extents_of<Cyclic>(groups, {11, 3}), cyclic.local_extents());
  EXPECT_EQ(sw::local_offsets_of<Cyclic>(groups, {11, 3}), cyclic.offsets());
}

TEST(CallersBuffers, AnotherPartitionRuleIsRefusedOnEveryRank) {
  // PETSc and MPI codes give the first ranks the extra rows; Split spreads them over the later
  // ones. m = 2p + 1 rows: PETSc's rank 0 holds 3, the sharding's 2.
  const auto groups = line_groups();
  const int p = world_size(), r = world_rank();
  const std::int64_t m = 2 * p + 1, k = 4;
  const std::int64_t petsc_rows = m / p + (r < m % p ? 1 : 0);
  std::vector<double> buffer(static_cast<std::size_t>(petsc_rows * k), 1.0);
  const std::string expected = "block is 3 x 4 but this rank's block of a " + std::to_string(m) +
                               " x 4 matrix is 2 x 4 (Split<...> gives part i of n elements over p parts the "
                               "elements from floor(i n / p) on, so the extra elements are spread over the later "
                               "parts (10 over 4: 2, 3, 2, 3); SplitFirstLarger<...> gives them to the first parts "
                               "(3, 3, 2, 2), as PETSc does;";
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD,
      [&] { (void)sw::view<ColA>(groups, {m, k}, buffer.data(), {1, petsc_rows}, {petsc_rows, k}); },
      "shardwise::view: the " + expected);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::view<ColA>(groups, {m, k}, buffer.data(), {1, petsc_rows}, {petsc_rows, k}); },
      " (on rank 0)");
  Eigen::Map<Eigen::MatrixXd> map(buffer.data(), petsc_rows, k);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::view<ColA>(groups, {m, k}, map); }, "shardwise::view: the Eigen " + expected);
}

TEST(CallersBuffers, APetscLayoutIsWrappedAsItIsWithSplitFirstLarger) {
  // The same PETSc-style blocks, declared SplitFirstLarger: docs/arrays.md's block, verbatim
  // between the markers, wraps them with no copy and gemm writes into the caller's C (padded:
  // LDC = rows + 1); C equals serial Eigen and the padding is untouched.
  using Line = sw::Mesh<sw::Axis<"x", sw::dynamic_extent>>;
  const sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  const int p = world_size(), r = world_rank();
  const std::int64_t m = 3 * p + 2, k = 5, n = 4;
  const std::int64_t my_rows = m / p + (r < m % p ? 1 : 0), first = r * (m / p) + std::min<std::int64_t>(r, m % p);
  const std::int64_t lda = my_rows, ldc = my_rows + 1;
  Eigen::MatrixXd a_global(m, k), b_global(k, n);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < k; ++j) a_global(i, j) = 1.0 + static_cast<double>((3 * i + 7 * j) % 11) / 4;
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < n; ++j) b_global(i, j) = static_cast<double>((5 * i + j) % 7) - 3;
  // The caller's own arrays: its rows of A and of C (one sentinel row of padding), B whole.
  std::vector<double> a_rows(static_cast<std::size_t>(lda * k)), c_rows(static_cast<std::size_t>(ldc * n), -99.0);
  for (std::int64_t j = 0; j < k; ++j)
    for (std::int64_t i = 0; i < my_rows; ++i) a_rows[static_cast<std::size_t>(i + j * lda)] = a_global(first + i, j);
  const auto b = sw::ShardedMatrix<double, Line, Whole, Eigen::ColMajor>::distribute(groups, b_global);
  // ---- begin README block ----
  using Rows = sw::TensorSharding<sw::SplitFirstLarger<"x">, sw::Replicated>;   // rank r: m / p + (r < m % p) rows
  using A_t = sw::ShardedMatrix<double, Line, Rows, Eigen::ColMajor>;
  auto a = sw::view<A_t>(groups, {m, k}, a_rows.data(), {1, lda}, {my_rows, k});  // the caller's rows, no copy
  sw::gemm(1.0, a, b, 0.0, sw::view<A_t>(groups, {m, n}, c_rows.data(), {1, ldc}, {my_rows, n}));
  // ---- end README block ----
  EXPECT_EQ(a.data(), a_rows.data());
  EXPECT_EQ(sw::local_extents_of<A_t>(groups, {m, k}), (A_t::extents_type{my_rows, k}));
  EXPECT_EQ(sw::local_offsets_of<A_t>(groups, {m, k})[0], first);
  const Eigen::MatrixXd want = a_global * b_global;
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t i = 0; i < my_rows; ++i)
      EXPECT_NEAR(c_rows[static_cast<std::size_t>(i + j * ldc)], want(first + i, j), 1e-12) << i << ", " << j;
    EXPECT_EQ(c_rows[static_cast<std::size_t>(my_rows + j * ldc)], -99.0) << "the padding of column " << j;
  }
  // matmul keeps the convention: C's rows are the caller's rows.
  const auto c = sw::matmul(a, b);
  static_assert(std::is_same_v<decltype(c)::sharding, Rows>);
  EXPECT_EQ(c.local_rows(), my_rows);
  EXPECT_LE((c.to_global() - want).cwiseAbs().maxCoeff(), 1e-12);
}

TEST(CallersBuffers, ALeadingDimensionBelowTheRowsOnOneRank) {
  const auto groups = line_groups();
  const std::int64_t m = 3 * world_size(), k = 4;
  const auto held = sw::local_extents_of<ColA>(groups, {m, k});  // 3 x 4 on every rank
  const std::int64_t lld = on_last() ? held[0] - 1 : held[0];
  std::vector<double> buffer(static_cast<std::size_t>(held[0] * k), 0.0);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::view<ColA>(groups, {m, k}, buffer.data(), {1, lld}, held); },
      "shardwise::view: the strides [1, 2] make elements of this rank's block [3, 4] share an address: dimension 1's "
      "stride 2 is not above 2, the offset the dimensions of smaller stride reach; give a stride (a leading "
      "dimension) of at least 3" + on_last_rank());
  // Rows that overlap the other way (a row stride below the columns of a row-major block).
  using RowC = sw::ShardedMatrix<double, Line, Rows, Eigen::RowMajor>;
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::view<RowC>(groups, {m, k}, buffer.data(), {on_last() ? 3 : 4, 1}, held); },
      "give a stride (a leading dimension) of at least 4" + on_last_rank());
}

TEST(CallersBuffers, AWritableStrideZeroIsRefusedAReadOnlyOneIsABroadcast) {
  const auto groups = line_groups();
  const int p = world_size();
  const std::int64_t m = 3 * p, k = 4, n = 5;
  const auto held = sw::local_extents_of<ColA>(groups, {m, k});
  std::vector<double> out(static_cast<std::size_t>(held[0] * n), 0.0);
  using C_t = sw::ShardedMatrix<double, Line, Rows, Eigen::ColMajor>;
  const sw::ShardedMatrix<double, Line, Rows, Eigen::ColMajor>::extents_type c_held{held[0], n};
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD,
      [&] { (void)sw::view<C_t>(groups, {m, n}, out.data(), {on_last() ? 0 : 1, held[0]}, c_held); },
      "shardwise::view: dimension 0 has stride 0 but this rank's block has 3 elements along it, which would all be "
      "written at one address; give a stride of at least 1 (a read-only view may repeat an element)" + on_last_rank());
  // A read-only view may repeat a row: every row of A is (1, 2, 3, 4).
  const std::vector<double> row{1, 2, 3, 4};
  const auto a = sw::view<ColA>(groups, {m, k}, row.data(), {0, 1}, held);
  const Eigen::MatrixXd b_global = Eigen::MatrixXd::Constant(k, n, 0.5);
  const auto b = sw::ShardedMatrix<double, Line, Whole>::distribute(groups, b_global);
  const Eigen::MatrixXd c = sw::matmul(a, b).to_global();
  Eigen::MatrixXd a_global(m, k);
  for (std::int64_t i = 0; i < m; ++i) a_global.row(i) << 1, 2, 3, 4;
  EXPECT_LE((c - a_global * b_global).cwiseAbs().maxCoeff(), 1e-13);
}

TEST(CallersBuffers, CPartlyOverlappingAIsComputedThroughATemporary) {
  // One buffer: A (replicated, m x k, column-major, ld = m) at its start, C one column later.
  const auto groups = line_groups();
  const std::int64_t m = 6, k = 4, n = 4;
  std::vector<double> buffer(static_cast<std::size_t>(m * (k + n)));
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = 0.25 * static_cast<double>(i % 7) - 0.5;
  const Eigen::MatrixXd a_before = Eigen::Map<Eigen::MatrixXd>(buffer.data(), m, k);
  const Eigen::MatrixXd b_global = Eigen::MatrixXd::Identity(k, n) + Eigen::MatrixXd::Constant(k, n, 0.125);
  const Eigen::MatrixXd c_before = Eigen::Map<Eigen::MatrixXd>(buffer.data() + m, m, n);
  using W = sw::ShardedMatrix<double, Line, Whole, Eigen::ColMajor>;
  const auto a = sw::view<W>(groups, {m, k}, static_cast<const double*>(buffer.data()), {1, m}, {m, k});
  const auto c = sw::view<W>(groups, {m, n}, buffer.data() + m, {1, m}, {m, n});
  const auto b = sw::ShardedMatrix<double, Line, Whole>::distribute(groups, b_global);
  sw::gemm(2.0, a, b, 0.5, c);
  const Eigen::MatrixXd want = 2.0 * a_before * b_global + 0.5 * c_before;
  const Eigen::MatrixXd got = Eigen::Map<Eigen::MatrixXd>(buffer.data() + m, m, n);
  EXPECT_LE((got - want).cwiseAbs().maxCoeff(), 1e-13);
  // And matmul_into, C one column after A again.
  const Eigen::MatrixXd a_now = Eigen::Map<Eigen::MatrixXd>(buffer.data(), m, k);
  sw::matmul_into(sw::view<W>(groups, {m, n}, buffer.data() + m, {1, m}, {m, n}), a, b);
  const Eigen::MatrixXd got_into = Eigen::Map<Eigen::MatrixXd>(buffer.data() + m, m, n);
  EXPECT_LE((got_into - a_now * b_global).cwiseAbs().maxCoeff(), 1e-13);
}

// ---- NaN in, NaN out ----------------------------------------------------------------------------

TEST(NaN, NormAndDotPropagateIt) {
  const auto groups = line_groups();
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::int64_t n = 2 * world_size() + 1;
  const Vec first_nan = Vec::generate(groups, {n}, [&](std::int64_t i) { return i == 0 ? nan : 0.0; });
  const Vec inf_then_nan =
      Vec::generate(groups, {n}, [&](std::int64_t i) { return i == 0 ? inf : (i == n - 1 ? nan : 1.0); });
  const Vec inf_only = Vec::generate(groups, {n}, [&](std::int64_t i) { return i == n - 1 ? -inf : 1.0; });
  const Vec ones = Vec::generate(groups, {n}, [](std::int64_t) { return 1.0; });
  EXPECT_TRUE(std::isnan(sw::norm(first_nan)));
  EXPECT_TRUE(std::isnan(sw::norm(inf_then_nan)));
  EXPECT_EQ(sw::norm(inf_only), inf);
  EXPECT_TRUE(std::isnan(sw::dot(first_nan, ones)));
  EXPECT_TRUE(std::isnan(sw::dot(ones, inf_then_nan)));
  EXPECT_DOUBLE_EQ(sw::norm(ones), std::sqrt(static_cast<double>(n)));
}

}  // namespace
