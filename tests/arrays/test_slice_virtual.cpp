// Slicing on the virtual cluster: a replicated (or less split) tensor resharded to a split one is
// a local step with zero bytes. The randomized differential test of reshard schedules with
// slices (values: every rank's block against the serial slice, counted bytes against the model),
// and the typed API (sw::reshard on ShardedTensor and ShardedMatrix, uneven extents) with the
// counted bytes == 0 == the model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "local_checks.hpp"
#include "reshard_random.hpp"
#include "shardwise/comm/counting.hpp"
#include "shardwise/comm/virtual_cluster.hpp"
#include "shardwise/tensor.hpp"
#include "virtual_counted.hpp"

namespace sw = shardwise;
using namespace sw::testing;

namespace {

using R = sw::Replicated;
template <sw::fixed_string... N> using S = sw::Split<N...>;
template <typename... D> using TS = sw::TensorSharding<D...>;

/// Runs case `c` on a virtual cluster of its mesh; every rank's outcome.
template <typename M>
std::vector<ReshardOutcome> run_on_cluster(const ReshardCase& c, const M& mesh) {
  std::vector<ReshardOutcome> outcomes(static_cast<std::size_t>(mesh.size()));
  sw::run_virtual_cluster(mesh.size(), [&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    auto counters = std::make_shared<sw::CommCounters>();
    sw::ProcessGroupMesh<M> groups(sw::CountingCommunicator<sw::VirtualCommunicator>(std::move(comm), counters), mesh);
    outcomes[static_cast<std::size_t>(rank)] = run_reshard_case(groups, c, *counters);
  });
  return outcomes;
}

std::vector<ReshardOutcome> run_on_cluster(const ReshardCase& c) {
  const auto& e = c.mesh;
  if (e.size() == 1) return run_on_cluster(c, EinsumLine{e[0]});
  if (e.size() == 2) return run_on_cluster(c, EinsumGrid{e[0], e[1]});
  return run_on_cluster(c, EinsumCube{e[0], e[1], e[2]});
}

}  // namespace

// ---- the reshard rule, at compile time ------------------------------------------------------

using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
// Replicated -> split: one slice, no communication.
static_assert(sw::reshard_plan<Grid, TS<R, R>, TS<S<"y">, R>>::schedule.size() == 1);
static_assert(sw::reshard_plan<Grid, TS<R, R>, TS<S<"y">, R>>::schedule[0].kind == sw::StepKind::slice);
// Fewer axes -> more axes, on two dimensions.
static_assert(sw::reshard_plan<Grid, TS<S<"x">, R>, TS<S<"x", "y">, R>>::schedule[0].kind == sw::StepKind::slice);
static_assert(sw::reshard_plan<Grid, TS<R, R>, TS<S<"x">, S<"y">>>::schedule.size() == 2);
// A slice next to a ReduceScatter of a pending sum: the slice first (it shrinks what is sent).
static_assert(sw::reshard_plan<Grid, TS<R, R, sw::Partial<"y">>, TS<S<"x", "y">, R>>::schedule.size() == 2);
static_assert(sw::reshard_plan<Grid, TS<R, R, sw::Partial<"y">>, TS<S<"x", "y">, R>>::schedule[0].kind ==
              sw::StepKind::slice);
static_assert(sw::reshard_plan<Grid, TS<R, R, sw::Partial<"y">>, TS<S<"x", "y">, R>>::schedule[1].kind ==
              sw::StepKind::reduce_scatter);

TEST(SliceVirtual, Describe) {
  EXPECT_EQ((sw::reshard_plan<Grid, TS<R, R>, TS<S<"y">, R>>::describe()), "slice C along m over y => [y, -]");
  EXPECT_EQ((sw::reshard_plan<Grid, TS<R, R, R>, TS<R, S<"x">, S<"y">>>::describe()),
            "slice C along j over x -> slice C along k over y => [-, x, y]");
  // Each rank's model of a slice: 0 bytes, 0 messages.
  using Plan = sw::reshard_plan<Grid, TS<R, R>, TS<S<"x">, S<"y">>>;
  for (int r = 0; r < 4; ++r) EXPECT_EQ(Plan::traffic(Grid{}, Grid{}.unravel(r), 5, 3, 8), sw::Traffic{});
}

// ---- randomized: values through the one executor ---------------------------------------------

TEST(SliceVirtual, RandomizedReshards) {
  const char* given = std::getenv("SHARDWISE_TEST_SEED");
  const std::uint64_t seed = given ? std::strtoull(given, nullptr, 10) : 20261125;
  std::printf("reshard randomized differential test: seed %llu (set SHARDWISE_TEST_SEED to change)\n",
              static_cast<unsigned long long>(seed));
  std::mt19937_64 draw(seed);
  constexpr int wanted = 300;
  int planned = 0, drawn = 0, sliced = 0, with_collectives = 0;
  while (planned < wanted && drawn < 50 * wanted) {
    const ReshardCase c = draw_reshard_case(draw);
    ++drawn;
    if (!c.plan().error.ok()) continue;
    ++planned;
    sliced += c.slices();
    with_collectives += c.slices() && c.plan().steps.size() > 1;
    SCOPED_TRACE("case " + std::to_string(planned) + " of the run with SHARDWISE_TEST_SEED=" + std::to_string(seed) +
                 ": " + c.describe());
    const auto outcomes = run_on_cluster(c);
    for (std::size_t r = 0; r < outcomes.size(); ++r) {
      EXPECT_EQ(outcomes[r].error, 0.0) << "rank " << r;
      EXPECT_EQ(outcomes[r].measured, outcomes[r].modeled)
          << "rank " << r << ": measured " << outcomes[r].measured.bytes << " B, modeled " << outcomes[r].modeled.bytes;
    }
    if (::testing::Test::HasFailure()) return;
  }
  std::printf("%d cases planned of %d drawn; %d with a slice, %d of them next to a collective\n", planned, drawn,
              sliced, with_collectives);
  EXPECT_EQ(planned, wanted);
  EXPECT_GE(sliced, wanted / 3);
  EXPECT_GE(with_collectives, wanted / 20);
}

// ---- typed: sw::reshard on ShardedTensor and ShardedMatrix -----------------------------------

TEST(SliceVirtual, TypedReshardOfReplicatedIsZeroBytes) {
  using Mesh = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
  using Tensor3 = Eigen::Tensor<double, 3, Eigen::RowMajor>;
  Tensor3 global(5, 7, 3);  // uneven over 2 on every dimension
  for (Eigen::Index i = 0; i < global.size(); ++i) global.data()[i] = 0.5 * static_cast<double>(i) - 3.0;
  Eigen::MatrixXd matrix(7, 5);
  for (Eigen::Index i = 0; i < matrix.rows(); ++i)
    for (Eigen::Index j = 0; j < matrix.cols(); ++j) matrix(i, j) = static_cast<double>(10 * i + j);
  const auto failures = run_counted_on_cluster(Mesh{}, [&](sw::ProcessGroupMesh<Mesh>& groups,
                                                           const sw::CommCounters& counters, auto fail) {
    const auto replicated = sw::ShardedTensor<double, Mesh, TS<R, R, R>>::distribute(groups, global);
    const auto half = sw::ShardedTensor<double, Mesh, TS<R, S<"x">, R>>::distribute(groups, global);

    const sw::Traffic before = counters.total();
    const auto split = sw::reshard<TS<S<"y">, R, S<"x">>>(replicated);  // replicated -> split
    const auto finer = sw::reshard<TS<R, S<"x", "y">, R>>(half);         // split over more axes
    if (counters.total() != before) fail("a slice sent bytes");
    const auto coordinate = groups.coordinate();
    using Slice = sw::reshard_plan<Mesh, TS<R, R, R>, TS<S<"y">, R, S<"x">>>;
    if (Slice::traffic(Mesh{}, coordinate, {5, 7, 3}, sizeof(double)) != sw::Traffic{}) fail("the model of a slice");

    // Each block is the serial slice of the global tensor.
    auto check = [&](const auto& t, const char* what) {
      const auto offsets = t.offsets();
      const auto extents = t.local_extents();
      for (Eigen::Index i = 0; i < t.local().dimension(0); ++i)
        for (Eigen::Index j = 0; j < t.local().dimension(1); ++j)
          for (Eigen::Index k = 0; k < t.local().dimension(2); ++k)
            if (t.local()(i, j, k) != global(i + offsets[0], j + offsets[1], k + offsets[2])) return fail(what);
      if (t.local().size() != extents[0] * extents[1] * extents[2]) fail(what);
    };
    check(split, "replicated -> [y, -, x]");
    check(finer, "[-, x, -] -> [-, (x,y), -]");
    // And back: gathering the slices restores the tensor.
    const Tensor3 back = split.to_global();
    for (Eigen::Index i = 0; i < global.size(); ++i)
      if (back.data()[i] != global.data()[i]) return fail("to_global() of the slices");

    // A matrix, both storage orders.
    const auto rep = sw::ShardedMatrix<double, Mesh, TS<R, R>>::distribute(groups, matrix);
    const auto colmajor = sw::ShardedMatrix<double, Mesh, TS<R, R>, Eigen::ColMajor>::distribute(groups, matrix);
    const sw::Traffic before_matrix = counters.total();
    const auto rows = sw::reshard<TS<S<"x", "y">, R>>(rep);
    const auto grid = sw::reshard<TS<S<"y">, S<"x">>, Eigen::ColMajor>(colmajor);
    const auto grid_rowmajor = sw::reshard<TS<S<"y">, S<"x">>>(colmajor);
    if (counters.total() != before_matrix) fail("a matrix slice sent bytes");
    if (rows.local() != matrix.middleRows(rows.row_offset(), rows.local_rows())) fail("matrix rows over (x,y)");
    const Eigen::MatrixXd block = matrix.block(grid.row_offset(), grid.col_offset(), grid.local_rows(), grid.local_cols());
    if (grid.local() != block) fail("matrix [y, x], column-major");
    if (grid_rowmajor.local() != block) fail("matrix [y, x], column-major to row-major");
  });
  for (std::size_t r = 0; r < failures.size(); ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

// ---- the planner slices a replicated operand instead of gathering the other -------------------

namespace {
using Rep2 = TS<R, R>;
using Grid2 = TS<S<"x">, S<"y">>;
// matmul(A[x, y], v[-, -]) on 2 x 2: v sliced to [y, -] (0 bytes), local GEMM, AllReduce over y.
using PowerStep = sw::matmul_plan<Grid, Grid2, Rep2>;
}  // namespace
static_assert(PowerStep::schedule.size() == 3);
static_assert(PowerStep::schedule[0] == sw::Step{sw::StepKind::slice, sw::Operand::B, 0, {1}, {}});
static_assert(PowerStep::schedule[1].kind == sw::StepKind::local_gemm);
static_assert(PowerStep::schedule[2].kind == sw::StepKind::all_reduce);
static_assert(std::is_same_v<PowerStep::output_sharding, TS<S<"x">, R>>);
// A batch index split in one input only, C keeping that split: the other input is sliced.
static_assert(sw::einsum_plan<"bij,bj->bi", Grid, TS<S<"x">, R, R>, TS<R, R>>::schedule[0] ==
              sw::Step{sw::StepKind::slice, sw::Operand::B, 0, {0}, {}});
// ... but not when C is requested without it (gathering C would undo the slice).
static_assert(sw::einsum_plan<"bij,bj->bi", Grid, TS<S<"x">, R, R>, TS<R, R>, TS<R, R>>::schedule[0].kind ==
              sw::StepKind::all_gather);

TEST(SliceVirtual, PlannerSlicesInsteadOfGathering) {
  EXPECT_EQ(PowerStep::describe(), "Outer: slice B along k over y -> local GEMM -> AllReduce C over y => C[x, -]");
  // The bytes: an AllReduce of this rank's C block over y (2 ranks), nothing for the slice.
  const sw::MatmulShape shape{.m = 6, .k = 5, .n = 1};
  for (int r = 0; r < 4; ++r) {
    const auto at = Grid{}.unravel(r);
    const std::int64_t rows = at[0] == 0 ? 3 : 3;  // 6 rows over x
    EXPECT_EQ(PowerStep::traffic(Grid{}, at, shape, 8).bytes, 2 * (2 - 1) * rows * 1 * 8 / 2) << "rank " << r;
  }
}

TEST(SliceVirtual, MatvecOnGridCountedEqualsModel) {
  // A (7 x 5, uneven) split over x and y times a replicated 5 x 2: counted bytes == the model,
  // the result equal to the serial product.
  Eigen::MatrixXd a(7, 5), v(5, 2);
  for (Eigen::Index i = 0; i < a.size(); ++i) a.data()[i] = std::sin(1.0 + static_cast<double>(i));
  for (Eigen::Index i = 0; i < v.size(); ++i) v.data()[i] = std::cos(2.0 + static_cast<double>(i));
  const Eigen::MatrixXd want = a * v;
  const auto failures = run_counted_on_cluster(Grid{}, [&](sw::ProcessGroupMesh<Grid>& groups,
                                                           const sw::CommCounters& counters, auto fail) {
    const auto sa = sw::ShardedMatrix<double, Grid, Grid2>::distribute(groups, a);
    const auto sv = sw::ShardedMatrix<double, Grid, Rep2>::distribute(groups, v);
    const sw::Traffic before = counters.total();
    const auto c = sw::matmul(sa, sv);
    const sw::Traffic sent = counters.total() - before;
    const sw::Traffic modeled = PowerStep::traffic(Grid{}, groups.coordinate(), {.m = 7, .k = 5, .n = 2}, sizeof(double));
    if (sent != modeled) fail("counted " + std::to_string(sent.bytes) + " B, modeled " + std::to_string(modeled.bytes));
    if (sent.bytes == 0 && c.local().size() > 0) fail("no AllReduce over y counted");
    const Eigen::MatrixXd whole = c.to_global();
    if ((whole - want).cwiseAbs().maxCoeff() > 1e-13) fail("the product differs from the serial one");
  });
  for (std::size_t r = 0; r < failures.size(); ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

// A requested output split where the natural one is replicated: a slice of C, no bytes.
static_assert(sw::valid_einsum<"bsm,mh->bsh", sw::Mesh<sw::Axis<"x", 2>>, TS<R, R, R>, TS<R, R>, TS<R, S<"x">, R>>);
static_assert(sw::einsum_plan<"bsm,mh->bsh", sw::Mesh<sw::Axis<"x", 2>>, TS<R, R, R>, TS<R, R>, TS<R, S<"x">, R>>::
                  schedule[1] == sw::Step{sw::StepKind::slice, sw::Operand::C, 1, {0}, {}});

// ---- crossed axes: one input gathered and sliced, not both gathered ---------------------------

namespace {
// v[y] against A's columns over x: v is gathered over y and sliced to x (its 2 x 2 = 4 elements per
// rank move, not A), then the product's partial sums are reduced over x.
using CrossedMatvec = sw::einsum_plan<"ij,j->i", Grid, TS<R, S<"x">>, TS<S<"y">>>;
// A batch index over x in A and y in B: B is gathered over y and sliced to x, and C keeps x.
using CrossedBatch = sw::einsum_plan<"bij,bjk->bik", Grid, TS<S<"x">, R, R>, TS<S<"y">, R, R>>;
// Two matrices: gathering one and reducing C would usually send more than gathering both, which
// stays the plan (UnmatchedInner, as designed).
using CrossedSquare = sw::matmul_plan<Grid, TS<R, S<"x">>, TS<S<"y">, R>>;
}  // namespace
static_assert(CrossedMatvec::schedule[0] == sw::Step{sw::StepKind::all_gather, sw::Operand::B, 0, {1}, {}});
static_assert(CrossedMatvec::schedule[1] == sw::Step{sw::StepKind::slice, sw::Operand::B, 0, {0}, {}});
static_assert(CrossedMatvec::has_alternative);
static_assert(std::is_same_v<CrossedBatch::output_sharding, TS<S<"x">, R, R>>);
static_assert(CrossedBatch::schedule.size() == 3);
static_assert(!CrossedSquare::has_alternative && CrossedSquare::schedule[0].kind == sw::StepKind::all_gather &&
              CrossedSquare::schedule[1].kind == sw::StepKind::all_gather);

TEST(SliceVirtual, CrossedAxesGatherOneInputAndSliceIt) {
  constexpr std::int64_t n = 9, b = 5, m = 3;  // uneven over 2
  EXPECT_FALSE(CrossedMatvec::uses_alternative(Grid{}, {{'i', n}, {'j', n}}, 8));
  // The busiest rank: 4 doubles gathered plus an AllReduce of 9, against 9 x 5 doubles of A.
  EXPECT_LT(CrossedMatvec::max_traffic(Grid{}, {{'i', n}, {'j', n}}, 8).bytes, 200);
  Eigen::Tensor<double, 2, Eigen::RowMajor> a(n, n);
  Eigen::Tensor<double, 1, Eigen::RowMajor> v(n);
  Eigen::Tensor<double, 3, Eigen::RowMajor> x(b, m, m), y(b, m, m);
  for (Eigen::Index i = 0; i < a.size(); ++i) a.data()[i] = std::sin(0.3 + static_cast<double>(i));
  for (Eigen::Index i = 0; i < v.size(); ++i) v.data()[i] = std::cos(0.7 * static_cast<double>(i));
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    x.data()[i] = std::sin(1.1 * static_cast<double>(i));
    y.data()[i] = std::cos(0.5 + static_cast<double>(i));
  }
  const auto failures = run_counted_on_cluster(Grid{}, [&](sw::ProcessGroupMesh<Grid>& groups,
                                                           const sw::CommCounters& counters, auto fail) {
    const auto at = groups.coordinate();
    const auto sa = sw::ShardedTensor<double, Grid, TS<R, S<"x">>>::distribute(groups, a);
    const auto sv = sw::ShardedTensor<double, Grid, TS<S<"y">>>::distribute(groups, v);
    sw::Traffic before = counters.total();
    const auto product = sw::einsum<"ij,j->i">(sa, sv);
    if (counters.total() - before != CrossedMatvec::traffic(Grid{}, at, {{'i', n}, {'j', n}}, 8)) fail("matvec bytes");
    const auto av = product.to_global();
    for (std::int64_t i = 0; i < n; ++i) {
      double want = 0;
      for (std::int64_t j = 0; j < n; ++j) want += a(i, j) * v(j);
      if (std::abs(av(i) - want) > 1e-13) return fail("crossed matvec");
    }

    const auto sx = sw::ShardedTensor<double, Grid, TS<S<"x">, R, R>>::distribute(groups, x);
    const auto sy = sw::ShardedTensor<double, Grid, TS<S<"y">, R, R>>::distribute(groups, y);
    before = counters.total();
    const auto xy = sw::einsum<"bij,bjk->bik">(sx, sy);
    if (counters.total() - before != CrossedBatch::traffic(Grid{}, at, {{'b', b}, {'i', m}, {'j', m}, {'k', m}}, 8))
      fail("batched bytes");
    const auto xyl = xy.to_global();
    for (std::int64_t s = 0; s < b; ++s)
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t k = 0; k < m; ++k) {
          double want = 0;
          for (std::int64_t j = 0; j < m; ++j) want += x(s, i, j) * y(s, j, k);
          if (std::abs(xyl(s, i, k) - want) > 1e-13) return fail("crossed batch");
        }
  });
  for (std::size_t r = 0; r < failures.size(); ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}
