// Run-time mistakes under mpiexec (2, 3 and 4 ranks, see tests/meson.build): each must throw
// the same exception, with the same text, on every rank, and no rank may hang (the tests'
// timeout fails a hang). The checks are collective (mpi_errors.hpp). Errors that are purely
// local, such as a bad mesh extent, are here too: every rank must still say the same thing.
#include <gtest/gtest.h>
#include <mpi.h>

#include <Eigen/Core>
#include <climits>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "mpi_errors.hpp"
#include "mpi_support.hpp"
#include "shardwise/comm/mpi.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/nn/pipeline.hpp"
#include "shardwise/parallel_context.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/matmul.hpp"
#include "shardwise/nn/feed_forward.hpp"
#include "shardwise/reshard.hpp"
#include "shardwise/sharded_matrix.hpp"
#include "shardwise/plan/sharding_planner.hpp"
#include "shardwise/tensor.hpp"

namespace {

namespace sw = shardwise;
using sw::testing::expect_same_error_on_every_rank;
using sw::testing::RankOutcome;
using sw::testing::world_rank;
using sw::testing::world_size;

using Line = sw::Mesh<sw::Axis<"p", sw::dynamic_extent>>;
using Elastic = sw::Mesh<sw::Axis<"dp", sw::dynamic_extent>, sw::Axis<"tp", 2>>;

// ---- the helper's verdict, on made-up outcomes (no communication) ----------------------------

const RankOutcome bad_root{RankOutcome::threw_expected, "shardwise::f: bad root"};

TEST(SameErrorVerdict, AcceptsOneTextEverywhere) {
  const std::vector<RankOutcome> outcomes(3, bad_root);
  EXPECT_EQ(sw::testing::same_error_verdict(outcomes, "bad root"), "");
}

TEST(SameErrorVerdict, RejectsDifferentTextsAndNamesEachRank) {
  const std::vector<RankOutcome> outcomes{bad_root, {RankOutcome::threw_expected, "shardwise::g: other"}, bad_root};
  EXPECT_EQ(sw::testing::same_error_verdict(outcomes, "shardwise::"),
            "not the same error on every rank: the ranks' texts differ\n"
            "  rank 0: threw \"shardwise::f: bad root\"\n"
            "  rank 1: threw \"shardwise::g: other\"\n"
            "  rank 2: threw \"shardwise::f: bad root\"");
}

TEST(SameErrorVerdict, RejectsARankThatDidNotThrow) {
  const std::vector<RankOutcome> outcomes{bad_root, {}};
  EXPECT_EQ(sw::testing::same_error_verdict(outcomes, "bad root"),
            "not the same error on every rank: not every rank threw\n"
            "  rank 0: threw \"shardwise::f: bad root\"\n"
            "  rank 1: returned without throwing");
}

TEST(SameErrorVerdict, RejectsAnotherExceptionType) {
  const std::vector<RankOutcome> outcomes{bad_root, {RankOutcome::threw_other, bad_root.what}};
  EXPECT_NE(sw::testing::same_error_verdict(outcomes, "bad root"), "");
}

TEST(SameErrorVerdict, RejectsATextWithoutTheExpectedPart) {
  const std::vector<RankOutcome> outcomes(2, bad_root);
  EXPECT_EQ(sw::testing::same_error_verdict(outcomes, "good root"),
            "not the same error on every rank: not every rank's text contains \"good root\"\n"
            "  rank 0: threw \"shardwise::f: bad root\"\n"
            "  rank 1: threw \"shardwise::f: bad root\"");
}

// ---- the helper itself, collectively: its verdict must catch what it is meant to catch ---------

TEST(SameErrorOnEveryRank, CatchesRanksThatDisagree) {
  const int rank = sw::testing::world_rank();
  const auto result = sw::testing::same_error_on_every_rank<std::runtime_error>(
      MPI_COMM_WORLD, [&] { throw std::runtime_error("rank " + std::to_string(rank) + " failed"); }, "failed");
  EXPECT_FALSE(result);  // the same on every rank: every rank gathered every text
  EXPECT_NE(std::string(result.message()).find("rank 1: threw \"rank 1 failed\""), std::string::npos)
      << result.message();
}

TEST(SameErrorOnEveryRank, CatchesARankThatDoesNotThrow) {
  const int rank = sw::testing::world_rank();
  const auto result = sw::testing::same_error_on_every_rank<std::runtime_error>(
      MPI_COMM_WORLD, [&] { if (rank != 0) throw std::runtime_error("only some ranks"); }, "only some ranks");
  EXPECT_FALSE(result);
}

TEST(SameErrorOnEveryRank, AcceptsTheSameErrorEverywhere) {
  EXPECT_TRUE(sw::testing::same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [] { throw std::logic_error("the same"); }, "the same"));
}

// ---- Mesh: extents and rank counts (local checks, the same text everywhere) -------------------

TEST(MeshErrors, TooManyRanks) {
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [] { (void)Elastic{1 << 30}; },
      "shardwise::Mesh: the mesh would have 2147483648 ranks (dp=1073741824 x tp=2), more than an int holds "
      "(2147483647); make the extents smaller");
}

TEST(MeshErrors, ExtentAboveAnInt) {
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [] { (void)Elastic{2147483648L}; },
      "shardwise::Mesh: axis \"dp\": extent 2147483648 does not fit in an int");
}

TEST(MeshErrors, ExtentBelowOne) {
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [] { (void)Elastic{0}; }, "shardwise::Mesh: axis \"dp\": an extent must be at least 1, got 0");
}

// ---- ProcessGroupMesh: a mesh whose size is not the communicator's ---------------------------

TEST(ProcessGroupMeshErrors, MeshSizeIsNotTheWorldSize) {
  const int p = world_size();
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{p + 1}); },
      "shardwise::ProcessGroupMesh: the mesh has " + std::to_string(p + 1) + " ranks (p=" + std::to_string(p + 1) +
          ") but the communicator has " + std::to_string(p));
}

// ---- ShardedMatrix::scatter: a root that is not a rank --------------------------------------

using Rows = sw::TensorSharding<sw::Split<"p">, sw::Replicated>;

TEST(ShardedMatrixErrors, ScatterRootOutOfRange) {
  const int p = world_size();
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{p});
  const Eigen::MatrixXd global = Eigen::MatrixXd::Ones(6, 3);
  for (const int root : {p, -1})
    expect_same_error_on_every_rank<std::invalid_argument>(
        MPI_COMM_WORLD, [&] { (void)sw::ShardedMatrix<double, Line, Rows>::scatter(groups, global, root); },
        "shardwise::ShardedMatrix::scatter: root " + std::to_string(root) +
            " is not a rank of the mesh; give a rank from 0 to " + std::to_string(p - 1));
}

// ---- PipelineEngine::run: a negative number of rows ------------------------------------------

struct Identity {
  using scalar_type = double;
  using Matrix = sw::PipelineMatrix<double>;
  [[nodiscard]] std::int64_t input_width() const { return 4; }
  [[nodiscard]] std::int64_t output_width() const { return 4; }
  void forward(int, const Matrix& in, Matrix& out) { out = in; }
  void backward(int, const Matrix& grad_out, Matrix* grad_in) {
    if (grad_in != nullptr) *grad_in = grad_out;
  }
};

// Every stage must reject the count, first and last stages included, with one text (the first
// and the last stage used to report their inputs' or targets' shape instead: "-4 x 4").
template <int Stages>
void expect_negative_rows_rejected() {
  using Stack = sw::Mesh<sw::Axis<"dp", sw::dynamic_extent>, sw::Axis<"pp", Stages>>;
  sw::ProcessGroupMesh<Stack> groups(MPI_COMM_WORLD, Stack{world_size() / Stages});
  Identity stage;
  sw::PipelineEngine<sw::Pipeline<Stages, 2, sw::schedule::OneFOneB>, Identity> engine(groups.group_along({"pp"}),
                                                                                         stage);
  const sw::PipelineMatrix<double> empty(0, 4);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)engine.run(-4, empty, empty, [](int) { return 1.0; }, [](int) {}); },
      "shardwise::PipelineEngine::run: rows is -4; a batch has 0 or more rows");
}

TEST(PipelineErrors, NegativeRowsOneStage) { expect_negative_rows_rejected<1>(); }

TEST(PipelineErrors, NegativeRowsTwoStages) {
  if (world_size() % 2 != 0) GTEST_SKIP() << "two stages need an even number of ranks";
  expect_negative_rows_rejected<2>();
}

// ---- ParallelContext: an axis named twice in one mode --------------------------------------

TEST(ParallelContextErrors, AxisNamedTwiceInAMode) {
  using Grid = sw::Mesh<sw::Axis<"dp", sw::dynamic_extent>, sw::Axis<"tp", 1>>;
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD,
      [] {
        sw::ParallelContext<Grid> context(sw::ProcessGroupMesh<Grid>(MPI_COMM_WORLD, Grid{world_size()}),
                                          {{sw::ParallelMode::tensor, {"tp", "tp"}}});
      },
      "shardwise::ParallelContext: mode tensor is bound to axis \"tp\" twice; name each axis once");
}

// ---- one rank's shape differs: every operation agrees first ----------------------------------

using Whole = sw::TensorSharding<sw::Replicated, sw::Replicated>;
using Cols = sw::TensorSharding<sw::Replicated, sw::Split<"p">>;
/// 9 rows everywhere but on rank 1 (10): a mistake made on one rank only.
std::int64_t rows_off_on_rank_one() { return world_rank() == 1 ? 10 : 9; }

TEST(OneRankDiffers, ToGlobal) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  const sw::ShardedMatrix<double, Line, Rows> a(groups, rows_off_on_rank_one(), 6);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)a.to_global(); },
      "shardwise::ShardedMatrix::to_global: the global shapes differ across ranks");
}

TEST(OneRankDiffers, ReshardAndReduce) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  const sw::ShardedMatrix<double, Line, Rows> a(groups, rows_off_on_rank_one(), 6);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::reshard<Whole>(a); }, "shardwise::reshard: the global shapes differ across ranks");
  using Pending = sw::TensorSharding<sw::Replicated, sw::Replicated, sw::Partial<"p">>;
  const sw::ShardedMatrix<double, Line, Pending> partial(groups, rows_off_on_rank_one(), 6);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::reduce(partial); }, "shardwise::reshard: the global shapes differ across ranks");
}

TEST(OneRankDiffers, MatmulIntoAnOutputOfAnotherShape) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  const sw::ShardedMatrix<double, Line, Cols> a(groups, 9, 8);
  const sw::ShardedMatrix<double, Line, Rows> b(groups, 8, 6);
  sw::ShardedMatrix<double, Line, Whole> c(groups, rows_off_on_rank_one(), 6);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { sw::matmul_into(c, a, b); },
      "shardwise::matmul_into: the shapes of A, B and C differ across ranks");
}

TEST(OneRankDiffers, FromLocalWithAWrongBlock) {
  const int p = world_size();
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{p});
  using Block = sw::ShardedMatrix<double, Line, Rows>::local_matrix;
  const std::int64_t mine = sw::detail::block_size(12, p, world_rank());
  const Block block = Block::Zero(world_rank() == 1 ? mine + 1 : mine, 5);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::ShardedMatrix<double, Line, Rows>::from_local(groups, 12, 5, block); },
      "shardwise::ShardedMatrix::from_local: the block is " + std::to_string(mine + 1) + " x 5 but this rank's block of "
          "a 12 x 5 matrix is " + std::to_string(mine) + " x 5 (on rank 1)");
}

template <typename ShX>
void expect_ffn_batch_mismatch_caught() {
  using Layer = sw::FeedForward<double, Line, ShX, sw::TensorSharding<sw::Replicated, sw::Split<"p">>,
                                sw::TensorSharding<sw::Split<"p">, sw::Replicated>>;
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  Layer layer(groups, 4, 8);
  typename Layer::Cache cache;
  const std::int64_t batch = world_rank() == 1 ? 3 : 2;
  const typename Layer::input_type x(groups, batch, 4, 4);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)layer.forward(x, cache); },
      "shardwise::FeedForward::forward: the shapes of X and Y differ across ranks");
  // A forward that every rank agrees on, then a backward whose dY differs on rank 1.
  const typename Layer::input_type good(groups, 2, 4, 4);
  (void)layer.forward(good, cache);
  const typename Layer::output_type dy(groups, batch, 4, 4);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)layer.backward(dy, cache); }, "shardwise::FeedForward::backward: ");
}

TEST(OneRankDiffers, FeedForwardBatchMegatronTP) {
  expect_ffn_batch_mismatch_caught<sw::TensorSharding<sw::Replicated, sw::Replicated, sw::Replicated>>();
}
TEST(OneRankDiffers, FeedForwardBatchMegatronSP) {
  expect_ffn_batch_mismatch_caught<sw::TensorSharding<sw::Replicated, sw::Split<"p">, sw::Replicated>>();
}

TEST(OneRankDiffers, PipelineRows) {
  if (world_size() % 2 != 0) GTEST_SKIP() << "two stages need an even number of ranks";
  using Stack = sw::Mesh<sw::Axis<"dp", sw::dynamic_extent>, sw::Axis<"pp", 2>>;
  sw::ProcessGroupMesh<Stack> groups(MPI_COMM_WORLD, Stack{world_size() / 2});
  Identity stage;
  sw::PipelineEngine<sw::Pipeline<2, 2, sw::schedule::OneFOneB>, Identity> engine(groups.group_along({"pp"}), stage);
  // Rows differ on the second stage of every replica (each replica runs its own pipeline).
  const std::int64_t rows = groups.coordinate()[1] == 1 ? 5 : 4;
  const sw::PipelineMatrix<double> data = sw::PipelineMatrix<double>::Zero(rows, 4);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)engine.run(rows, data, data, [](int) { return 1.0; }, [](int) {}); },
      "shardwise::PipelineEngine::run: the batch's rows differ across ranks");
}

// ---- N-D tensors and einsum: the same guarantees ---------------------------------------------

using Tensor3 = sw::ShardedTensor<double, Line, sw::TensorSharding<sw::Split<"p">, sw::Replicated, sw::Replicated>>;
using Tensor2 = sw::ShardedTensor<double, Line, sw::TensorSharding<sw::Replicated, sw::Replicated>>;
using Whole3 = sw::TensorSharding<sw::Replicated, sw::Replicated, sw::Replicated>;

TEST(OneRankDiffers, EinsumOperands) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  const Tensor3 x(groups, {rows_off_on_rank_one(), 3, 4});
  const Tensor2 w(groups, {4, 5});
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::einsum<"bsm,mh->bsh">(x, w); },
      "shardwise::einsum: the extents of A and B differ across ranks");
}

TEST(EinsumErrors, ContractedExtentsDisagree) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  const Tensor3 x(groups, {9, 3, 4});
  const Tensor2 w(groups, {5, 6});
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::einsum<"bsm,mh->bsh">(x, w); },
      "shardwise::einsum: index m has extent 4 in A [9, 3, 4] but 5 in B [5, 6]");
}

TEST(OneRankDiffers, TensorToGlobalAndReshard) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  const Tensor3 x(groups, {rows_off_on_rank_one(), 3, 4});
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)x.to_global(); },
      "shardwise::ShardedTensor::to_global: the global extents differ across ranks");
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::reshard<Whole3>(x); }, "shardwise::reshard: the global extents differ across ranks");
}

TEST(OneRankDiffers, TensorDistribute) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  Tensor3::global_tensor global(rows_off_on_rank_one(), 3, 4);
  global.setZero();
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)Tensor3::distribute(groups, global); },
      "shardwise::ShardedTensor::distribute: the extents of the global tensors differ across ranks");
}

TEST(OneRankDiffers, TensorFromLocalWithAWrongBlock) {
  const int p = world_size();
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{p});
  const std::int64_t mine = sw::detail::block_size(12, p, world_rank());
  const std::int64_t given = world_rank() == 1 ? mine + 1 : mine;
  Tensor3::local_tensor block(given, 3, 4);
  block.setZero();
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)Tensor3::from_local(groups, {12, 3, 4}, block); },
      "shardwise::ShardedTensor::from_local: the block is [" + std::to_string(mine + 1) +
          ", 3, 4] but this rank's block of a [12, 3, 4] tensor is [" + std::to_string(mine) + ", 3, 4] (on rank 1)");
}

// ---- a matrix or a mesh moved from ----------------------------------------------------------

TEST(MovedFrom, AMatrixPassedToMatmul) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  sw::ShardedMatrix<double, Line, Cols> a(groups, 9, 8);
  const sw::ShardedMatrix<double, Line, Rows> b(groups, 8, 6);
  const auto taken = std::move(a);
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)sw::matmul(a, b); },  // NOLINT(bugprone-use-after-move): the point
      "shardwise::matmul: A was moved from (it no longer holds a block)");
}

TEST(MovedFrom, ATensorPassedToEinsum) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  Tensor3 x(groups, {9, 3, 4});
  const Tensor2 w(groups, {4, 5});
  const auto taken = std::move(x);
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)sw::einsum<"bsm,mh->bsh">(x, w); },  // NOLINT(bugprone-use-after-move): the point
      "shardwise::einsum: A was moved from (it no longer holds a block)");
}

TEST(MovedFrom, MatricesOutliveTheMeshHandedToAContext) {
  // Matrices share their groups: moving the mesh into a ParallelContext leaves them working.
  const int p = world_size();
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{p});
  const Eigen::MatrixXd ga = Eigen::MatrixXd::Random(7, 5), gb = Eigen::MatrixXd::Random(5, 4);
  Eigen::MatrixXd a_all = ga, b_all = gb;
  MPI_Bcast(a_all.data(), static_cast<int>(a_all.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(b_all.data(), static_cast<int>(b_all.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  const auto a = sw::ShardedMatrix<double, Line, Cols>::distribute(groups, a_all);
  const auto b = sw::ShardedMatrix<double, Line, Rows>::distribute(groups, b_all);
  sw::ParallelContext<Line> context(std::move(groups), {{sw::ParallelMode::tensor, {"p"}}});
  const Eigen::MatrixXd c = sw::matmul(a, b).to_global();
  EXPECT_LE((c - a_all * b_all).norm(), 1e-12 * (a_all * b_all).norm());
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)groups.world(); },  // NOLINT(bugprone-use-after-move): the point
      "shardwise::ProcessGroupMesh::world: this ProcessGroupMesh was moved from");
}

// ---- matmul_into with C aliasing A or B: computed through a temporary --------------------------

TEST(Aliasing, OutputIsAnInput) {
  const int p = world_size();
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{p});
  Eigen::MatrixXd x_all = Eigen::MatrixXd::Random(7, 7), w_all = Eigen::MatrixXd::Random(7, 7);
  MPI_Bcast(x_all.data(), 49, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(w_all.data(), 49, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  const Eigen::MatrixXd want = x_all * w_all;
  auto error = [&](const Eigen::MatrixXd& got) { return (got - want).cwiseAbs().maxCoeff(); };
  {  // C is A, rows split
    auto x = sw::ShardedMatrix<double, Line, Rows>::distribute(groups, x_all);
    const auto w = sw::ShardedMatrix<double, Line, Whole>::distribute(groups, w_all);
    sw::matmul_into(x, x, w);
    EXPECT_LE(error(x.to_global()), 1e-12);
  }
  {  // C is B, replicated: every operand whole on every rank
    const auto x = sw::ShardedMatrix<double, Line, Whole>::distribute(groups, x_all);
    auto w = sw::ShardedMatrix<double, Line, Whole>::distribute(groups, w_all);
    sw::matmul_into(w, x, w);
    EXPECT_LE(error(w.to_global()), 1e-12);
  }
  {  // C is A, columns split, the product's pending sum scattered into it
    auto x = sw::ShardedMatrix<double, Line, Cols>::distribute(groups, x_all);
    const auto w = sw::ShardedMatrix<double, Line, Rows>::distribute(groups, w_all);
    sw::matmul_into(x, x, w);
    EXPECT_LE(error(x.to_global()), 1e-12);
  }
}

// ---- messages of a disagreement: the quantity by name, its values and the ranks holding each ----

/// Every rank but rank 1, as the messages list them.
std::string ranks_but_one() {
  const int p = world_size();
  if (p == 2) return "rank 0";
  if (p == 3) return "ranks 0 and 2";
  return "ranks 0 and 2\u2013" + std::to_string(p - 1);
}

TEST(DisagreementMessages, RankListsAndValueNames) {  // no communication
  using sw::detail::rank_ranges;
  using sw::detail::value_name;
  EXPECT_EQ(rank_ranges({3}), "rank 3");
  EXPECT_EQ(rank_ranges({2, 0, 1}), "ranks 0\u20132");
  EXPECT_EQ(rank_ranges({0, 2}), "ranks 0 and 2");
  EXPECT_EQ(rank_ranges({0, 1, 2, 5, 7, 8, 9, 11, 12, 20, 30}), "ranks 0\u20132 and 5 and 7\u20139 and 4 more");
  EXPECT_EQ(value_name("rows of A|columns of A", 1), "columns of A");
  EXPECT_EQ(value_name("3*extent # of A|2*extent # of B", 2), "extent 2 of A");
  EXPECT_EQ(value_name("3*extent # of A|2*extent # of B", 4), "extent 1 of B");
  EXPECT_EQ(value_name("rows|columns", 3), "value 3");
  EXPECT_EQ(value_name({}, 0), "value 0");
}

TEST(DisagreementMessages, MatmulNamesTheDimensionTheValuesAndTheRanks) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  const sw::ShardedMatrix<double, Line, Cols> a(groups, rows_off_on_rank_one(), 8);
  const sw::ShardedMatrix<double, Line, Rows> b(groups, 8, 6);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::matmul(a, b); },
      "shardwise::matmul: the shapes of A and B differ across ranks (every rank must pass the same): rows of A: 9 on " +
          ranks_but_one() +
          ", 10 on rank 1 (an array's shape is set where each rank constructs it, with no communication; the first "
          "collective operation on it compares them)");
}

TEST(DisagreementMessages, EveryValueThatDiffersIsNamed) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  const std::int64_t inner = world_rank() == 1 ? 7 : 8;
  const sw::ShardedMatrix<double, Line, Cols> a(groups, rows_off_on_rank_one(), inner);
  const sw::ShardedMatrix<double, Line, Rows> b(groups, inner, 6);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::matmul(a, b); },
      "rows of A: 9 on " + ranks_but_one() + ", 10 on rank 1; columns of A: 8 on " + ranks_but_one() +
          ", 7 on rank 1; rows of B: 8 on " + ranks_but_one() + ", 7 on rank 1 (");
}

TEST(DisagreementMessages, DistributeEinsumAndTensorsNameTheirExtents) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  const Eigen::MatrixXd global = Eigen::MatrixXd::Zero(rows_off_on_rank_one(), 5);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::ShardedMatrix<double, Line, Rows>::distribute(groups, global); },
      "shardwise::ShardedMatrix::distribute: the shapes of the global matrices differ across ranks (every rank must "
      "pass the same): rows of the global matrix: 9 on " + ranks_but_one() + ", 10 on rank 1");
  const Tensor3 x(groups, {4, 3, rows_off_on_rank_one()});
  const Tensor2 w(groups, {rows_off_on_rank_one(), 5});
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::einsum<"bsm,mh->bsh">(x, w); },
      "shardwise::einsum: the extents of A and B differ across ranks (every rank must pass the same): extent 2 of A: 9 "
      "on " + ranks_but_one() + ", 10 on rank 1; extent 0 of B: 9 on " + ranks_but_one() + ", 10 on rank 1 (");
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)x.to_global(); },
      "shardwise::ShardedTensor::to_global: the global extents differ across ranks (every rank must pass the same): "
      "extent 2: 9 on " + ranks_but_one() + ", 10 on rank 1 (an array's shape is set where each rank constructs it");
}

TEST(DisagreementMessages, FeedForwardNamesTheBatchOfX) {
  using Layer = sw::FeedForward<double, Line, sw::TensorSharding<sw::Replicated, sw::Replicated, sw::Replicated>,
                                sw::TensorSharding<sw::Replicated, sw::Split<"p">>,
                                sw::TensorSharding<sw::Split<"p">, sw::Replicated>>;
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  Layer layer(groups, 4, 8);
  typename Layer::Cache cache;
  const typename Layer::input_type x(groups, world_rank() == 1 ? 3 : 2, 4, 4);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)layer.forward(x, cache); },
      "shardwise::FeedForward::forward: the shapes of X and Y differ across ranks (every rank must pass the same): "
      "batch of X: 2 on " + ranks_but_one() + ", 3 on rank 1; batch of Y: 2 on " + ranks_but_one() + ", 3 on rank 1");
}

// ---- release(): the array is refused afterwards, as a moved-from one is -------------------------

TEST(Released, AMatrixIsRefusedUntilOneIsAssignedToIt) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  sw::ShardedMatrix<double, Line, Cols> a(groups, 9, 8);
  const sw::ShardedMatrix<double, Line, Rows> b(groups, 8, 6);
  sw::ShardedMatrix<double, Line, Whole> c(groups, 9, 6);
  auto block = std::move(a).release();
  EXPECT_TRUE(a.released());
  EXPECT_FALSE(a.valid());
  const std::string released = " was released (release() moved its block out); build a new matrix from the block "
                               "with from_local, or assign one to it";
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)sw::matmul(a, b); }, "shardwise::matmul: A" + released);
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { sw::matmul_into(c, a, b); }, "shardwise::matmul_into: A" + released);
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)a.to_global(); }, "shardwise::ShardedMatrix::to_global: the matrix" + released);
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)sw::reshard<Whole>(a); }, "shardwise::reshard: the matrix" + released);
  auto c_block = std::move(c).release();
  const sw::ShardedMatrix<double, Line, Cols> a2(groups, 9, 8);
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { sw::matmul_into(c, a2, b); }, "shardwise::matmul_into: C" + released);
  sw::ShardedMatrix<double, Line, Rows> b2(groups, 8, 6);
  auto b2_block = std::move(b2).release();
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)sw::matmul(a2, b2); }, "shardwise::matmul: B" + released);
  // From its block again: usable.
  a = sw::ShardedMatrix<double, Line, Cols>::from_local(groups, 9, 8, std::move(block));
  EXPECT_FALSE(a.released());
  EXPECT_EQ(sw::matmul(a, b).rows(), 9);
}

TEST(Released, ATensorIsRefusedByEinsumToGlobalReshardAndReduce) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  Tensor3 x(groups, {9, 3, 4});
  const Tensor2 w(groups, {4, 5});
  using Pending = sw::ShardedTensor<double, Line, sw::TensorSharding<sw::Replicated, sw::Replicated, sw::Partial<"p">>>;
  Pending partial(groups, {4, 5});
  auto block = std::move(x).release();
  auto partial_block = std::move(partial).release();
  const std::string released = " was released (release() moved its block out); build a new tensor from the block "
                               "with from_local, or assign one to it";
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)sw::einsum<"bsm,mh->bsh">(x, w); }, "shardwise::einsum: A" + released);
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)x.to_global(); }, "shardwise::ShardedTensor::to_global: the tensor" + released);
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)sw::reshard<Whole3>(x); }, "shardwise::reshard: the tensor" + released);
  expect_same_error_on_every_rank<std::logic_error>(
      MPI_COMM_WORLD, [&] { (void)sw::reduce(partial); }, "shardwise::reshard: the tensor" + released);
  x = Tensor3::from_local(groups, {9, 3, 4}, std::move(block));
  EXPECT_EQ(sw::einsum<"bsm,mh->bsh">(x, w).extent(2), 5);
}

// ---- the newer APIs: one rank differs, operands on two group meshes ----------------------------

TEST(OneRankDiffers, TensorReduce) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  using Pending = sw::ShardedTensor<double, Line, sw::TensorSharding<sw::Replicated, sw::Replicated, sw::Partial<"p">>>;
  const Pending partial(groups, {rows_off_on_rank_one(), 5});
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::reduce(partial); },
      "shardwise::reshard: the global extents differ across ranks (every rank must pass the same): extent 0: 9 on " +
          ranks_but_one() + ", 10 on rank 1");
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::reduce<sw::TensorSharding<sw::Split<"p">, sw::Replicated>>(partial); },
      "shardwise::reshard: the global extents differ across ranks");
}

using Layered = sw::Mesh<sw::Axis<"x", sw::dynamic_extent>, sw::Axis<"y", 1>, sw::Axis<"z", 2>>;

TEST(OneRankDiffers, Summa25DAndVia) {
  if (world_size() % 2 != 0) GTEST_SKIP() << "two layers need an even number of ranks";
  sw::ProcessGroupMesh<Layered> groups(MPI_COMM_WORLD, Layered{world_size() / 2});
  using G = sw::TensorSharding<sw::Split<"x">, sw::Split<"y">>;
  const sw::ShardedMatrix<double, Layered, G> a(groups, rows_off_on_rank_one(), 8), b(groups, 8, 6);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::matmul(a, b, sw::summa_25d<"z">); },
      "shardwise::matmul: the shapes of A and B differ across ranks (every rank must pass the same): rows of A: 9 on " +
          ranks_but_one() + ", 10 on rank 1");
  // Stored once, gathered over z to the 2.5D layouts first.
  using AOnce = sw::TensorSharding<sw::Split<"x">, sw::Split<"y", "z">>;
  using BOnce = sw::TensorSharding<sw::Split<"x", "z">, sw::Split<"y">>;
  const sw::ShardedMatrix<double, Layered, AOnce> a1(groups, 9, 8);
  const sw::ShardedMatrix<double, Layered, BOnce> b1(groups, 8, rows_off_on_rank_one());
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::matmul<AOnce>(a1, b1, sw::via<G, G, sw::variant::Summa25D<"z">>); },
      "columns of B: 9 on " + ranks_but_one() + ", 10 on rank 1");
}

/// The planner's answer for a static mesh of the world's size, run with a memory budget: a shape
/// that differs on one rank, and one unlike the budget's on every rank, are the same error everywhere.
template <typename M>
void expect_budget_and_plan_errors_agreed() {
  static constexpr sw::MatmulChoice choice = sw::plan_matmul(M{}, {{.m = 12, .k = 14, .n = 10}, 8, 4096});
  using Planned = sw::planned_matmul<M, choice>;
  constexpr sw::MatmulShape shape{.m = 12, .k = 14, .n = 10};
  sw::ProcessGroupMesh<M> groups(MPI_COMM_WORLD);
  const sw::ShardedMatrix<double, M, typename Planned::a_sharding> a(groups, world_rank() == 1 ? 13 : 12, 14);
  const sw::ShardedMatrix<double, M, typename Planned::b_sharding> b(groups, 14, 10);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD,
      [&] {
        (void)sw::matmul<typename Planned::c_sharding>(a, b, typename Planned::variant{}, sw::memory_budget<shape, 4096>);
      },
      "shardwise::matmul: the shapes of A and B differ across ranks (every rank must pass the same): rows of A: 12 on " +
          ranks_but_one() + ", 13 on rank 1");
  const sw::ShardedMatrix<double, M, typename Planned::b_sharding> narrow(groups, 14, 9);
  const sw::ShardedMatrix<double, M, typename Planned::a_sharding> right(groups, 12, 14);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD,
      [&] {
        (void)sw::matmul<typename Planned::c_sharding>(right, narrow, typename Planned::variant{},
                                                       sw::memory_budget<shape, 4096>);
      },
      "shardwise::matmul: the memory budget was checked for m = 12, k = 14, n = 10 but A is 12 x 14 and B is 14 x 9");
}

TEST(OneRankDiffers, PlannedMatmulWithAMemoryBudget) {
  // A static mesh of the world's size: 2 and 3 ranks (prime) on one axis, 4 on a 2 x 2 grid.
  if (world_size() == 2) return expect_budget_and_plan_errors_agreed<sw::Mesh<sw::Axis<"x", 2>>>();
  if (world_size() == 3) return expect_budget_and_plan_errors_agreed<sw::Mesh<sw::Axis<"x", 3>>>();
  if (world_size() == 4) return expect_budget_and_plan_errors_agreed<sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>>();
  GTEST_SKIP() << "the planned meshes are for 2, 3 and 4 ranks";
}

TEST(TwoGroupMeshes, MatmulAndEinsumRefuseOperandsOnDifferentOnes) {
  sw::ProcessGroupMesh<Line> first(MPI_COMM_WORLD, Line{world_size()}), second(MPI_COMM_WORLD, Line{world_size()});
  const sw::ShardedMatrix<double, Line, Cols> a(first, 9, 8);
  const sw::ShardedMatrix<double, Line, Rows> b(second, 8, 6);
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::matmul(a, b); },
      "shardwise::matmul: the operands are bound to different ProcessGroupMesh objects; build both from the same one");
  const Tensor3 x(first, {9, 3, 4});
  const Tensor2 w(second, {4, 5});
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::einsum<"bsm,mh->bsh">(x, w); },
      "shardwise::einsum: the operands are bound to different ProcessGroupMesh objects; build both from the same one");
}

// ---- a pipeline stage whose module throws: the same PipelineError on every stage, no hang ------

/// Identity, but the module of stage `failing_stage` throws in the forward (or the backward) of
/// micro-batch 1.
struct FailingStage {
  using scalar_type = double;
  using Matrix = sw::PipelineMatrix<double>;
  int stage = 0, failing_stage = 1;
  bool in_backward = false;
  [[nodiscard]] std::int64_t input_width() const { return 4; }
  [[nodiscard]] std::int64_t output_width() const { return 4; }
  void forward(int r, const Matrix& in, Matrix& out) {
    if (!in_backward && stage == failing_stage && r == 1) throw std::runtime_error("the stage module failed");
    out = in;
  }
  void backward(int r, const Matrix& grad_out, Matrix* grad_in) {
    if (in_backward && stage == failing_stage && r == 1) throw std::runtime_error("the stage module failed");
    if (grad_in != nullptr) *grad_in = grad_out;
  }
};

template <typename Schedule>
void expect_stage_failure_on_every_stage(int failing_stage, bool in_backward) {
  using Stack = sw::Mesh<sw::Axis<"dp", sw::dynamic_extent>, sw::Axis<"pp", 2>>;
  sw::ProcessGroupMesh<Stack> groups(MPI_COMM_WORLD, Stack{world_size() / 2});
  FailingStage module{groups.coordinate()[1], failing_stage, in_backward};
  sw::PipelineEngine<sw::Pipeline<2, 3, Schedule>, FailingStage> engine(groups.group_along({"pp"}), module);
  const sw::PipelineMatrix<double> data = sw::PipelineMatrix<double>::Ones(6, 4);
  const auto run = [&] { return engine.run(6, data, data, [](int) { return 1.0; }, [](int) {}); };
  const std::string pass = in_backward ? "backward" : "forward";
  expect_same_error_on_every_rank<sw::PipelineError>(
      MPI_COMM_WORLD, [&] { (void)run(); },
      "shardwise::PipelineEngine::run: stage " + std::to_string(failing_stage) + "'s " + pass +
          " of micro-batch 1 threw: the stage module failed (on rank " + std::to_string(failing_stage) +
          "); every stage stopped computing after it and finished the schedule");
  // The failing stage holds the module's own exception, nested.
  std::string nested = "none";
  try {
    (void)run();
  } catch (const sw::PipelineError& error) {
    try {
      std::rethrow_if_nested(error);
    } catch (const std::runtime_error& inner) {
      nested = inner.what();
    }
  }
  EXPECT_EQ(nested, module.stage == failing_stage ? "the stage module failed" : "none");
  // And the engine runs again once the module works.
  module.failing_stage = -1;
  EXPECT_EQ(run(), 0.0);
}

TEST(PipelineStageFails, ForwardOnTheLastStage) {
  if (world_size() % 2 != 0) GTEST_SKIP() << "two stages need an even number of ranks";
  expect_stage_failure_on_every_stage<sw::schedule::OneFOneB>(1, false);
}
TEST(PipelineStageFails, ForwardOnTheFirstStageGPipe) {
  if (world_size() % 2 != 0) GTEST_SKIP() << "two stages need an even number of ranks";
  expect_stage_failure_on_every_stage<sw::schedule::GPipe>(0, false);
}
TEST(PipelineStageFails, BackwardOnTheLastStage) {
  if (world_size() % 2 != 0) GTEST_SKIP() << "two stages need an even number of ranks";
  expect_stage_failure_on_every_stage<sw::schedule::OneFOneB>(1, true);
}

}  // namespace
