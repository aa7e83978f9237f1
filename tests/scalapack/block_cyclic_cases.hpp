// Block-cyclic arrays (BlockCyclic<axis, NB, First>, ScaLAPACK's layout) on a rows x columns
// mesh, for the virtual-cluster and the mpiexec tests: every rank's block has NUMROC's extents;
// distribute, generate and a view of a padded local array (LLD > local rows) give back the
// global matrix; reshard to blocks and to another block size and back is exact, with the bytes
// counted equal to reshard_traffic's model; and matmul of block-cyclic operands (standard and
// SUMMA block plans, real and complex) equals serial Eigen with the bytes of
// block_cyclic_matmul_plan. NB from 1 to 64, first blocks off the first coordinate, uneven
// extents. The same for SplitFirstLarger (PETSc's remainder convention), with gemm into a view
// of the caller's padded buffer. The caller sets CheckLevel::local (counts are the plans' own).
#pragma once

#include <complex>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "shardwise/comm/counting.hpp"
#include "shardwise/shardwise.hpp"

namespace shardwise::testing {

using RowsCols = Mesh<Axis<"r", dynamic_extent>, Axis<"c", dynamic_extent>>;

template <typename Scalar>
Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> cyclic_random(std::int64_t rows, std::int64_t cols,
                                                                    std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> m(rows, cols);
  for (Eigen::Index j = 0; j < m.cols(); ++j)
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
      if constexpr (detail::is_complex_v<Scalar>) m(i, j) = Scalar(u(engine), u(engine));
      else m(i, j) = static_cast<Scalar>(u(engine));
    }
  return m;
}

using Failure = std::function<void(const std::string&)>;

/// Layouts, round trips and reshards of one block-cyclic sharding.
template <std::int64_t RowBlock, int RowFirst, std::int64_t ColBlock, int ColFirst, typename Scalar = double>
void check_block_cyclic_matrix(ProcessGroupMesh<RowsCols>& groups, const CommCounters& counters, const Failure& fail,
                               std::int64_t m, std::int64_t n) {
  using Cyclic = TensorSharding<BlockCyclic<"r", RowBlock, RowFirst>, BlockCyclic<"c", ColBlock, ColFirst>>;
  using Other = TensorSharding<BlockCyclic<"r", ColBlock + 1>, BlockCyclic<"c", RowBlock + 2>>;
  using Blocks = TensorSharding<Split<"r">, Split<"c">>;
  using A_t = ShardedMatrix<Scalar, RowsCols, Cyclic, Eigen::ColMajor>;
  const std::string name = Cyclic::to_string() + " " + std::to_string(m) + " x " + std::to_string(n) + ": ";
  // A first block beyond a short axis is a compile-time constant here: skip such meshes.
  if (RowFirst >= groups.mesh().extent(0) || ColFirst >= groups.mesh().extent(1)) return;
  const auto global = cyclic_random<Scalar>(m, n, static_cast<std::uint64_t>(m * 131 + n));

  const auto a = A_t::distribute(groups, global);
  const BlockCyclicDim rows{m, RowBlock, RowFirst, groups.mesh().extent(0)};
  const BlockCyclicDim cols{n, ColBlock, ColFirst, groups.mesh().extent(1)};
  const auto& at = groups.coordinate();
  if (a.local_rows() != rows.local_extent(at[0]) || a.local_cols() != cols.local_extent(at[1]))
    fail(name + "the block is not NUMROC's");
  if (a.local_rows() > 0 && a.local_cols() > 0 &&
      (a.local()(0, 0) != global(rows.global_index(0, at[0]), cols.global_index(0, at[1])) ||
       a.row_offset() != rows.global_index(0, at[0])))
    fail(name + "local (0, 0) is not the global element INDXL2G says");
  if (a.to_global() != global) fail(name + "distribute then to_global is not the matrix");
  const auto g = A_t::generate(groups, {m, n}, [&](std::int64_t i, std::int64_t j) { return global(i, j); });
  if (g.to_global() != global) fail(name + "generate is not the matrix");

  // A view of a padded copy of the local array (LLD = local rows + 2), as ScaLAPACK holds it.
  const std::int64_t lld = a.local_rows() + 2;
  std::vector<Scalar> local(static_cast<std::size_t>(std::max<std::int64_t>(1, lld * a.local_cols())));
  for (std::int64_t j = 0; j < a.local_cols(); ++j)
    for (std::int64_t i = 0; i < a.local_rows(); ++i) local[static_cast<std::size_t>(i + j * lld)] = a.local()(i, j);
  const auto v = view<A_t>(groups, {m, n}, local.data(), {1, lld}, {a.local_rows(), a.local_cols()});
  if (v.data() != local.data() || v.to_global() != global) fail(name + "a view of the local array");

  // To blocks and back, to another block size and back: exact, the bytes the model says.
  Traffic before = counters.total();
  const auto blocks = reshard<Blocks>(v);
  Traffic counted = counters.total() - before;
  if (!(counted == reshard_traffic<Blocks>(v)))
    fail(name + "to blocks: " + std::to_string(counted.bytes) + " B counted, " +
         std::to_string(reshard_traffic<Blocks>(v).bytes) + " B modeled");
  if (blocks.to_global() != global) fail(name + "resharded to blocks");
  before = counters.total();
  const auto other = reshard<Other>(blocks);
  counted = counters.total() - before;
  if (!(counted == reshard_traffic<Other>(blocks))) fail(name + "blocks to another block size: bytes differ from the model");
  before = counters.total();
  const auto back = reshard<Cyclic>(other);
  counted = counters.total() - before;
  if (!(counted == reshard_traffic<Cyclic>(other))) fail(name + "between block sizes: bytes differ from the model");
  if (back.to_global() != global) fail(name + "resharded to another block size and back");
}

/// C = A B on block-cyclic operands, against serial Eigen, bytes = block_cyclic_matmul_plan's.
template <typename Variant, typename Scalar, std::int64_t MB, std::int64_t KB, std::int64_t NB>
void check_block_cyclic_product(ProcessGroupMesh<RowsCols>& groups, const CommCounters& counters,
                                const Failure& fail, std::int64_t m, std::int64_t k, std::int64_t n) {
  using ShA = TensorSharding<BlockCyclic<"r", MB>, BlockCyclic<"c", KB>>;
  using ShB = TensorSharding<BlockCyclic<"r", KB>, BlockCyclic<"c", NB>>;
  using Plan = block_cyclic_matmul_plan<RowsCols, ShA, ShB, NaturalOutput, Variant>;
  const auto a_global = cyclic_random<Scalar>(m, k, 7), b_global = cyclic_random<Scalar>(k, n, 8);
  const auto a = ShardedMatrix<Scalar, RowsCols, ShA, Eigen::ColMajor>::distribute(groups, a_global);
  const auto b = ShardedMatrix<Scalar, RowsCols, ShB, Eigen::ColMajor>::distribute(groups, b_global);
  const Traffic before = counters.total();
  const auto c = matmul(a, b, Variant{});
  const Traffic counted = counters.total() - before;
  static_assert(std::is_same_v<typename decltype(c)::sharding, typename Plan::output_sharding>);
  const Traffic modeled = Plan::traffic(groups.mesh(), groups.coordinate(), {.m = m, .k = k, .n = n}, sizeof(Scalar));
  const std::string name = Plan::describe() + ", " + std::to_string(m) + " x " + std::to_string(k) + " x " +
                           std::to_string(n) + ": ";
  // ScaLAPACK's aligned case in the standard variant runs in place (SUMMA over the k blocks):
  // the cases below are sized so that it sends fewer bytes than redistributing.
  const bool in_place = Plan::uses_in_place(groups.mesh(), {.m = m, .k = k, .n = n}, sizeof(Scalar));
  if (Plan::has_in_place != in_place) fail(name + "expected the in-place SUMMA, the model chose to redistribute");
  if (!(counted == modeled))
    fail(name + std::to_string(counted.bytes) + " B / " + std::to_string(counted.messages) + " messages counted, " +
         std::to_string(modeled.bytes) + " B / " + std::to_string(modeled.messages) + " modeled");
  const auto want = (a_global * b_global).eval();
  const double error = (c.to_global() - want).norm() / want.norm();
  const double tolerance = std::is_same_v<Scalar, float> ? 1e-5 : 1e-12;
  if (!(error <= tolerance)) fail(name + "error " + std::to_string(error));
}

/// SplitFirstLarger (the first parts one larger, PETSc's convention) on both dimensions and over
/// the whole mesh: PETSc's blocks, a view of the caller's padded buffer, reshards to Split's
/// blocks and back (exact, bytes = the model), matmul against serial Eigen with the bytes of
/// block_cyclic_matmul_plan and C in the same convention, gemm (alpha, beta) into a view.
template <typename Scalar>
void check_first_larger(ProcessGroupMesh<RowsCols>& groups, const CommCounters& counters, const Failure& fail,
                        std::int64_t m, std::int64_t k, std::int64_t n) {
  using Petsc = TensorSharding<SplitFirstLarger<"r">, SplitFirstLarger<"c">>;
  using Blocks = TensorSharding<Split<"r">, Split<"c">>;
  using A_t = ShardedMatrix<Scalar, RowsCols, Petsc, Eigen::ColMajor>;
  const std::string name = Petsc::to_string() + " " + std::to_string(m) + " x " + std::to_string(k) + " x " +
                           std::to_string(n) + ": ";
  const int p = groups.mesh().extent(0), q = groups.mesh().extent(1);
  const auto& at = groups.coordinate();
  const auto a_global = cyclic_random<Scalar>(m, k, 11), b_global = cyclic_random<Scalar>(k, n, 12);
  const auto c_global = cyclic_random<Scalar>(m, n, 13);

  // PETSc's block: m / p rows, one more on the first m mod p ranks.
  const auto a = A_t::distribute(groups, a_global);
  const std::int64_t rows = m / p + (at[0] < m % p ? 1 : 0), cols = k / q + (at[1] < k % q ? 1 : 0);
  const std::int64_t first_row = at[0] * (m / p) + std::min<std::int64_t>(at[0], m % p);
  if (a.local_rows() != rows || a.local_cols() != cols || a.row_offset() != first_row)
    fail(name + "the block is not PETSc's");
  if (local_extents_of<A_t>(groups, {m, k}) != a.local_extents()) fail(name + "local_extents_of differs");
  if (a.to_global() != a_global) fail(name + "distribute then to_global is not the matrix");

  // The caller's own buffer, padded (LLD = rows + 1), wrapped as it is.
  const std::int64_t lld = rows + 1;
  std::vector<Scalar> own(static_cast<std::size_t>(std::max<std::int64_t>(1, lld * cols)), Scalar(0));
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) own[static_cast<std::size_t>(i + j * lld)] = a.local()(i, j);
  const auto v = view<A_t>(groups, {m, k}, own.data(), {1, lld}, {rows, cols});
  if (v.data() != own.data() || v.to_global() != a_global) fail(name + "a view of the caller's buffer");

  Traffic before = counters.total();
  const auto blocks = reshard<Blocks>(v);
  Traffic counted = counters.total() - before;
  if (!(counted == reshard_traffic<Blocks>(v))) fail(name + "to Split's blocks: bytes differ from the model");
  if (blocks.to_global() != a_global) fail(name + "resharded to Split's blocks");
  before = counters.total();
  const auto back = reshard<Petsc>(blocks);
  counted = counters.total() - before;
  if (!(counted == reshard_traffic<Petsc>(blocks))) fail(name + "back: bytes differ from the model");
  if (back.to_global() != a_global) fail(name + "resharded back");

  // C = A B: C keeps the operands' convention.
  using Plan = block_cyclic_matmul_plan<RowsCols, Petsc, Petsc>;
  static_assert(std::is_same_v<typename Plan::output_sharding, Petsc>);
  const auto b = ShardedMatrix<Scalar, RowsCols, Petsc, Eigen::ColMajor>::distribute(groups, b_global);
  before = counters.total();
  const auto c = matmul(v, b);
  counted = counters.total() - before;
  const Traffic modeled = Plan::traffic(groups.mesh(), at, {.m = m, .k = k, .n = n}, sizeof(Scalar));
  if (!(counted == modeled))
    fail(name + "matmul: " + std::to_string(counted.bytes) + " B counted, " + std::to_string(modeled.bytes) +
         " B modeled");
  const auto want = (a_global * b_global).eval();
  const double tolerance = std::is_same_v<Scalar, float> ? 1e-5 : 1e-12;
  if (!((c.to_global() - want).norm() <= tolerance * want.norm())) fail(name + "matmul differs from Eigen");

  // gemm into the caller's padded C, rows split first-larger over the whole mesh (a 1-D code's
  // layout), A's rows the same, B whole: alpha, beta, the padding untouched.
  using Rows = TensorSharding<SplitFirstLarger<"r", "c">, Replicated>;
  using Whole = TensorSharding<Replicated, Replicated>;
  using C_t = ShardedMatrix<Scalar, RowsCols, Rows, Eigen::ColMajor>;
  const int part = at[0] * q + at[1], parts = p * q;
  const std::int64_t c_rows = m / parts + (part < m % parts ? 1 : 0);
  const std::int64_t c_first = part * (m / parts) + std::min<std::int64_t>(part, m % parts);
  const Scalar sentinel(-7), alpha(2), beta(-0.5);
  std::vector<Scalar> c_own(static_cast<std::size_t>((c_rows + 1) * n), sentinel);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < c_rows; ++i) c_own[static_cast<std::size_t>(i + j * (c_rows + 1))] = c_global(c_first + i, j);
  const auto a_rows = ShardedMatrix<Scalar, RowsCols, Rows, Eigen::ColMajor>::distribute(groups, a_global);
  const auto b_whole = ShardedMatrix<Scalar, RowsCols, Whole, Eigen::ColMajor>::distribute(groups, b_global);
  gemm(alpha, a_rows, b_whole, beta, view<C_t>(groups, {m, n}, c_own.data(), {1, c_rows + 1}, {c_rows, n}));
  const auto gemm_want = (alpha * want + beta * c_global).eval();
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t i = 0; i < c_rows; ++i)
      if (!(std::abs(c_own[static_cast<std::size_t>(i + j * (c_rows + 1))] - gemm_want(c_first + i, j)) <=
            tolerance * (1 + std::abs(gemm_want(c_first + i, j)))))
        return fail(name + "gemm into the caller's rows differs from Eigen");
    if (c_own[static_cast<std::size_t>(c_rows + j * (c_rows + 1))] != sentinel) return fail(name + "gemm wrote the padding");
  }
}

/// Every case on this rank's groups (a rows x columns mesh of any extents).
inline void run_block_cyclic_cases(ProcessGroupMesh<RowsCols>& groups, const CommCounters& counters,
                                   const Failure& fail) {
  check_block_cyclic_matrix<1, 0, 1, 0>(groups, counters, fail, 7, 5);
  check_block_cyclic_matrix<2, 1, 3, 0>(groups, counters, fail, 13, 11);
  check_block_cyclic_matrix<7, 0, 2, 1>(groups, counters, fail, 23, 9);
  check_block_cyclic_matrix<64, 0, 64, 0>(groups, counters, fail, 70, 65);
  check_block_cyclic_matrix<3, 0, 2, 0, std::complex<double>>(groups, counters, fail, 10, 7);
  check_block_cyclic_product<variant::Standard, double, 3, 2, 4>(groups, counters, fail, 13, 11, 9);
  check_block_cyclic_product<variant::Summa<4>, double, 2, 5, 3>(groups, counters, fail, 17, 14, 10);
  check_block_cyclic_product<variant::Standard, std::complex<double>, 2, 2, 2>(groups, counters, fail, 9, 8, 7);
  check_block_cyclic_product<variant::Standard, float, 64, 64, 64>(groups, counters, fail, 30, 20, 10);
  check_first_larger<double>(groups, counters, fail, 13, 11, 7);
  check_first_larger<std::complex<double>>(groups, counters, fail, 7, 5, 3);
  check_first_larger<double>(groups, counters, fail, 2, 3, 4);  // fewer rows than ranks: empty blocks
}

}  // namespace shardwise::testing
