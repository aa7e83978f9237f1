// Views on the virtual cluster: matmul on views of each rank's own buffer (with a leading
// dimension, through an Eigen::Map) and on transposed views, for every policy family, on 1 to
// 4 ranks and uneven shapes (tests/arrays/view_cases.hpp); and the checks made when a view is made.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include "allocation_counter.hpp"
#include "local_checks.hpp"
#include "own_buffer_cases.hpp"
#include "shardwise/comm/virtual_cluster.hpp"
#include "tensor_view_cases.hpp"
#include "view_cases.hpp"

namespace sw = shardwise;
using namespace sw::testing;

namespace {

template <typename M>
void run_all(const std::vector<ViewCase<M>>& cases, const M& mesh, std::initializer_list<sw::MatmulShape> shapes) {
  std::uint64_t seed = 11;
  for (const auto& c : cases)
    for (const auto& shape : shapes) {
      SCOPED_TRACE(c.name + " on " + std::to_string(mesh.size()) + " ranks, m=" + std::to_string(shape.m) +
                   " k=" + std::to_string(shape.k) + " n=" + std::to_string(shape.n));
      LocalChecks quiet;
      std::vector<ViewResult> results(static_cast<std::size_t>(mesh.size()));
      sw::run_virtual_cluster(mesh.size(), [&](sw::VirtualCommunicator& comm) {
        const int rank = comm.rank();
        auto counters = std::make_shared<sw::CommCounters>();
        sw::ProcessGroupMesh<M> groups(sw::CountingCommunicator<sw::VirtualCommunicator>(std::move(comm), counters),
                                       mesh);
        results[static_cast<std::size_t>(rank)] = c.run(groups, shape, seed, counters.get());
      });
      ++seed;
      for (std::size_t r = 0; r < results.size(); ++r) {
        const ViewResult& v = results[r];
        EXPECT_LE(v.error, v.tolerance) << "rank " << r;
        EXPECT_LE(v.transposed_error, v.tolerance) << "rank " << r;
        EXPECT_TRUE(v.traffic_ok) << "rank " << r << ":" << v.detail;
        EXPECT_TRUE(v.in_place) << "rank " << r;
        EXPECT_TRUE(v.no_copy) << "rank " << r << ":" << v.detail;
        EXPECT_TRUE(v.to_global_ok) << "rank " << r;
      }
    }
}

constexpr sw::MatmulShape even{.m = 16, .k = 24, .n = 32};
constexpr sw::MatmulShape uneven{.m = 13, .k = 19, .n = 11};

}  // namespace

TEST(ViewVirtual, LineEveryPolicy) {
  for (int p : {1, 2, 3, 4}) run_all(line_view_cases(), Line{p}, {even, uneven});
}

TEST(ViewVirtual, GridOuterFullSumma) {
  run_all(grid_view_cases(), Grid{2, 1}, {uneven});
  run_all(grid_view_cases(), Grid{2, 2}, {even, uneven});
}

TEST(ViewVirtual, EinsumOnTensorViews) {
  std::uint64_t seed = 3;
  for (int p : {1, 2, 3, 4})
    for (const auto& c : line_tensor_view_cases())
      for (const std::array<std::int64_t, 4> e : {std::array<std::int64_t, 4>{2, 5, 7, 3}, {3, 4, 8, 6}}) {
        SCOPED_TRACE(c.name + " on " + std::to_string(p) + " ranks");
        LocalChecks quiet;
        std::vector<ViewResult> results(static_cast<std::size_t>(p));
        sw::run_virtual_cluster(p, [&](sw::VirtualCommunicator& comm) {
          const int rank = comm.rank();
          auto counters = std::make_shared<sw::CommCounters>();
          sw::ProcessGroupMesh<Line> groups(sw::CountingCommunicator<sw::VirtualCommunicator>(std::move(comm), counters),
                                            Line{p});
          results[static_cast<std::size_t>(rank)] = c.run(groups, e, seed, counters.get());
        });
        ++seed;
        for (std::size_t r = 0; r < results.size(); ++r) {
          const ViewResult& v = results[r];
          EXPECT_LE(v.error, v.tolerance) << "rank " << r;
          EXPECT_LE(v.transposed_error, v.tolerance) << "rank " << r;
          EXPECT_TRUE(v.traffic_ok) << "rank " << r << ":" << v.detail;
          EXPECT_TRUE(v.in_place) << "rank " << r;
          EXPECT_TRUE(v.no_copy) << "rank " << r << ":" << v.detail;
          EXPECT_TRUE(v.to_global_ok) << "rank " << r;
        }
      }
}

// Nothing distributed: each rank's own buffers (A with a leading dimension or contiguous, B an
// Eigen::Map, C the caller's) as views; matmul, matmul_into, einsum and the transposed products
// on them, against serial Eigen, with no copy and, where counted, no allocation but the results.
TEST(ViewVirtual, OwnBuffersNothingDistributed) {
  if (counting_allocations) {  // the counter itself sees an allocation, Eigen's included
    CountAllocations count;
    const Eigen::MatrixXd m = Eigen::MatrixXd::Zero(40, 25);
    EXPECT_GE(count.bytes(), 8 * 40 * 25);
  }
  for (int p : {1, 2, 3, 4})
    for (std::int64_t pad : {0, 3}) {
      SCOPED_TRACE(std::to_string(p) + " ranks, leading dimension padded by " + std::to_string(pad));
      std::vector<OwnBufferResult> results(static_cast<std::size_t>(p));
      LocalChecks quiet;
      sw::run_virtual_cluster(p, [&](sw::VirtualCommunicator& comm) {
        const int rank = comm.rank();
        auto counters = std::make_shared<sw::CommCounters>();
        sw::ProcessGroupMesh<Line> groups(sw::CountingCommunicator<sw::VirtualCommunicator>(std::move(comm), counters),
                                          Line{p});
        results[static_cast<std::size_t>(rank)] = run_own_buffers(groups, counters.get(), 97, 40, 23, pad);
      });
      for (std::size_t r = 0; r < results.size(); ++r) {
        const OwnBufferResult& v = results[r];
        EXPECT_LE(v.error, 1e-12) << "rank " << r << ":" << v.detail;
        EXPECT_TRUE(v.traffic_ok) << "rank " << r << ":" << v.detail;
        EXPECT_TRUE(v.in_place) << "rank " << r << ": a view's data is not the caller's buffer";
        EXPECT_TRUE(v.no_workspace) << "rank " << r << ":" << v.detail;
        EXPECT_TRUE(v.allocations_ok) << "rank " << r << ":" << v.detail;
      }
    }
}

// The README's block on views (and docs/arrays.md's), verbatim between the markers (so that it
// compiles and runs).
TEST(ViewVirtual, ReadmeBlock) {
  using Line = sw::Mesh<sw::Axis<"x", sw::dynamic_extent>>;
  const std::int64_t m = 9, k = 7, n = 5;
  const auto a_global = random_matrix<double>(m, k, 1), b_global = random_matrix<double>(k, n, 2);
  std::vector<double> errors(3, 1.0);
  sw::run_virtual_cluster(3, [&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    sw::ProcessGroupMesh<Line> groups(std::move(comm), Line{3});
    // Each rank's 3 rows of A in a padded column-major buffer (uneven blocks: tests/arrays/view_cases.hpp).
    const std::int64_t rows_here = 3, first = 3 * rank, lld = rows_here + 2;
    std::vector<double> a_local(static_cast<std::size_t>(lld * k));
    for (std::int64_t j = 0; j < k; ++j)
      for (std::int64_t i = 0; i < rows_here; ++i)
        a_local[static_cast<std::size_t>(i + j * lld)] = a_global(first + i, j);
    Eigen::MatrixXd b_copy = b_global;
    Eigen::Map<Eigen::MatrixXd> b_map(b_copy.data(), k, n);
    // ---- begin README block ----
    using A_t = sw::ShardedMatrix<double, Line, sw::TensorSharding<sw::Split<"x">, sw::Replicated>, Eigen::ColMajor>;
    using B_t = sw::ShardedMatrix<double, Line, sw::TensorSharding<sw::Replicated, sw::Replicated>>;
    const auto held = sw::local_extents_of<A_t>(groups, {m, k});         // this rank's block: held[0] rows x k
    auto a = sw::view<A_t>(groups, {m, k}, a_local.data(), {1, lld}, held);  // leading dimension lld, no copy
    auto b = sw::view<B_t>(groups, {k, n}, b_map);                      // an Eigen::Map (or Ref, Matrix)
    auto c = sw::matmul(a, b);                        // C = A B, rows over x: local, an owning result
    auto g = sw::matmul(sw::transposed(a), c);        // G = Aᵀ C: k over x, one AllReduce, no transpose copy
    auto h = sw::einsum<"ki,kj->ij">(a, c);           // the same product as an einsum (a ShardedTensor)
    // ---- end README block ----
    const Eigen::MatrixXd want_c = a_global * b_global, want_g = a_global.transpose() * want_c;
    const auto h_whole = h.to_global();
    const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> h_matrix(
        h_whole.data(), k, n);
    errors[static_cast<std::size_t>(rank)] = relative_error(c.to_global(), want_c) +
                                             relative_error(g.to_global(), want_g) + relative_error(h_matrix, want_g);
  });
  for (double e : errors) EXPECT_LE(e, 1e-12);
}

// matmul_into a view C: straight into the caller's memory when it is contiguous, through a
// copy of C's block when it has a leading dimension; the padding is left as it was.
TEST(ViewVirtual, MatmulIntoAView) {
  using Line = sw::Mesh<sw::Axis<"x", sw::dynamic_extent>>;
  using A_t = sw::ShardedMatrix<double, Line, TS<S<"x">, R>, Eigen::ColMajor>;
  using B_t = sw::ShardedMatrix<double, Line, TS<R, R>>;
  using C_t = sw::ShardedMatrix<double, Line, TS<S<"x">, R>, Eigen::RowMajor>;
  const std::int64_t m = 11, k = 6, n = 4;
  const auto a_global = random_matrix<double>(m, k, 5), b_global = random_matrix<double>(k, n, 6);
  const Eigen::MatrixXd want = a_global * b_global;
  std::vector<int> ok(3, 0);
  sw::run_virtual_cluster(3, [&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    sw::ProcessGroupMesh<Line> groups(std::move(comm), Line{3});
    const auto a = A_t::distribute(groups, a_global);
    const auto b = B_t::distribute(groups, b_global);
    const std::int64_t rows = a.local_rows();
    bool good = true;
    for (const std::int64_t ldc : {n, n + 3}) {
      std::vector<double> c_local(static_cast<std::size_t>(rows * ldc), -7.0);
      sw::matmul_into(sw::view<C_t>(groups, {m, n}, c_local.data(), {ldc, 1}, {rows, n}), a, b);
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < ldc; ++j) {
          const double got = c_local[static_cast<std::size_t>(i * ldc + j)];
          good = good && (j < n ? std::abs(got - want(a.row_offset() + i, j)) < 1e-12 : got == -7.0);
        }
    }
    ok[static_cast<std::size_t>(rank)] = good;
  });
  for (int v : ok) EXPECT_TRUE(v);
}

// gemm(alpha, A, B, beta, C) into a view C of the caller's memory, contiguous and padded:
// alpha A B + beta C in the caller's buffer, beta = 0 over a C of NaN (not read), the padding
// left as it was.
TEST(ViewVirtual, GemmIntoAView) {
  using Line = sw::Mesh<sw::Axis<"x", sw::dynamic_extent>>;
  using A_t = sw::ShardedMatrix<double, Line, TS<S<"x">, R>, Eigen::ColMajor>;
  using B_t = sw::ShardedMatrix<double, Line, TS<R, R>>;
  using C_t = sw::ShardedMatrix<double, Line, TS<S<"x">, R>, Eigen::RowMajor>;
  const std::int64_t m = 11, k = 6, n = 4;
  const auto a_global = random_matrix<double>(m, k, 15), b_global = random_matrix<double>(k, n, 16);
  const auto c_global = random_matrix<double>(m, n, 17);
  std::vector<int> ok(3, 0);
  sw::run_virtual_cluster(3, [&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    sw::ProcessGroupMesh<Line> groups(std::move(comm), Line{3});
    const auto a = A_t::distribute(groups, a_global);
    const auto b = B_t::distribute(groups, b_global);
    const std::int64_t rows = a.local_rows();
    bool good = true;
    for (const std::int64_t ldc : {n, n + 3})
      for (const double beta : {0.0, -0.5}) {
        std::vector<double> c_local(static_cast<std::size_t>(rows * ldc), -7.0);
        for (std::int64_t i = 0; i < rows; ++i)
          for (std::int64_t j = 0; j < n; ++j)
            c_local[static_cast<std::size_t>(i * ldc + j)] =
                beta == 0.0 ? std::numeric_limits<double>::quiet_NaN() : c_global(a.row_offset() + i, j);
        sw::gemm(2.0, a, b, beta, sw::view<C_t>(groups, {m, n}, c_local.data(), {ldc, 1}, {rows, n}));
        for (std::int64_t i = 0; i < rows; ++i)
          for (std::int64_t j = 0; j < ldc; ++j) {
            const double got = c_local[static_cast<std::size_t>(i * ldc + j)];
            const std::int64_t gi = a.row_offset() + i;
            const double want =
                j < n ? 2.0 * (a_global.row(gi) * b_global.col(j)).value() + (beta == 0.0 ? 0.0 : beta * c_global(gi, j))
                      : -7.0;
            good = good && (j < n ? std::abs(got - want) < 1e-12 : got == -7.0);
          }
      }
    ok[static_cast<std::size_t>(rank)] = good;
  });
  for (int v : ok) EXPECT_TRUE(v);
}

// gemm(alpha, A, B, beta, C) with A a transposed view and B a padded view: beta C enters once.
TEST(ViewVirtual, GemmOnViews) {
  using Line = sw::Mesh<sw::Axis<"x", sw::dynamic_extent>>;
  using At_t = sw::ShardedMatrix<double, Line, TS<S<"x">, R>>;  // Aᵀ, k x m: k over x
  using B_t = sw::ShardedMatrix<double, Line, TS<S<"x">, R>, Eigen::ColMajor>;
  using C_t = sw::ShardedMatrix<double, Line, TS<R, R>>;
  const std::int64_t m = 5, k = 13, n = 4;
  const auto a_global = random_matrix<double>(m, k, 7), b_global = random_matrix<double>(k, n, 8);
  const auto c_global = random_matrix<double>(m, n, 9);
  const Eigen::MatrixXd at_global = a_global.transpose();
  const Eigen::MatrixXd want = 2.0 * a_global * b_global + 0.5 * c_global;
  std::vector<double> errors(3, 1.0);
  LocalChecks quiet;
  sw::run_virtual_cluster(3, [&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    auto counters = std::make_shared<sw::CommCounters>();
    sw::ProcessGroupMesh<Line> groups(sw::CountingCommunicator<sw::VirtualCommunicator>(std::move(comm), counters),
                                      Line{3});
    const auto at = At_t::distribute(groups, at_global);
    const auto b_own = B_t::distribute(groups, b_global);
    const std::int64_t ldb = b_own.local_rows() + 4;
    auto b_buffer = padded_col_major<double>(b_global, b_own.row_offset(), 0, b_own.local_rows(), n, ldb);
    const auto b = sw::view<B_t>(groups, {k, n}, b_buffer.data(), {1, ldb}, {b_own.local_rows(), n});
    auto c = C_t::distribute(groups, c_global);
    const auto before = counters->total();
    sw::gemm(2.0, sw::transposed(at), b, 0.5, c);
    const auto moved = counters->total() - before;
    using Plan = sw::matmul_plan<Line, TS<R, S<"x">>, TS<S<"x">, R>, TS<R, R>>;
    const auto model = Plan::traffic(groups.mesh(), groups.coordinate(), {.m = m, .k = k, .n = n}, sizeof(double));
    errors[static_cast<std::size_t>(rank)] = relative_error(c.to_global(), want) + (moved == model ? 0.0 : 1.0);
  });
  for (double e : errors) EXPECT_LE(e, 1e-12);
}

// A view's block that does not fit the sharding, or a shape a rank disagrees on, is the same
// error on every rank (no hang).
TEST(ViewVirtual, BadBlocksThrowOnEveryRank) {
  using M = Line;
  using A = sw::ShardedMatrix<double, M, TS<S<"x">, R>, Eigen::ColMajor>;
  std::vector<int> threw(3, 0);
  sw::run_virtual_cluster(3, [&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    sw::ProcessGroupMesh<M> groups(std::move(comm), M{3});
    Eigen::MatrixXd block = Eigen::MatrixXd::Zero(rank == 1 ? 2 : 3, 4);  // rank 1's should be 3 x 4
    try {
      (void)sw::view<A>(groups, {9, 4}, block);
    } catch (const std::exception& e) {
      threw[static_cast<std::size_t>(rank)] += std::string(e.what()).find("the Eigen block is 2 x 4") != std::string::npos;
    }
    std::vector<double> buffer(12);
    try {
      (void)sw::view<A>(groups, {rank == 2 ? 8 : 9, 4}, buffer.data(), {1, 3}, {3, 4});
    } catch (const std::exception&) {
      threw[static_cast<std::size_t>(rank)] += 10;
    }
  });
  for (int t : threw) EXPECT_EQ(t, 11);
}
