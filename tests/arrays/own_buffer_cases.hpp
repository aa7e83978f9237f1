// A numerical code's own buffers as arrays, with nothing distributed: each rank fills its block
// of A (m x k, rows split, column-major with a leading dimension, or contiguous) and of B (k x n,
// replicated, a row-major Eigen::Map) from a formula of the global indices, wraps them with
// sw::view, and runs matmul, matmul_into a view of its own C buffer, einsum, and the transposed
// products matmul(transposed(A), C) and einsum<"ki,kj->ij">(A, C). Checked: every result against
// serial Eigen, the traffic against the plans' model, that each view's data is the caller's
// buffer (no copy), that the executor's workspace stays empty for the plans that gather nothing
// (the GEMM reads the views in place), and, where allocations are counted (not under ASan), that
// a repeated call allocates nothing but its owning result, and matmul_into nothing at all.
// Include allocation_counter.hpp once in the test program first.
#pragma once

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "allocation_counter.hpp"
#include "products/matmul_cases.hpp"
#include "shardwise/tensor.hpp"

namespace shardwise::testing {

/// A(i, j) and B(i, j), known to every rank without communication.
inline double own_a(std::int64_t i, std::int64_t j) { return std::sin(0.37 * static_cast<double>(i) + 0.11 * static_cast<double>(j)); }
inline double own_b(std::int64_t i, std::int64_t j) { return std::cos(0.23 * static_cast<double>(i) - 0.19 * static_cast<double>(j)); }

struct OwnBufferResult {
  double error = 0;        ///< worst relative error of every product against serial Eigen
  bool traffic_ok = true;  ///< every product's counted bytes == its model
  bool in_place = true;    ///< every view's data() is the caller's buffer
  bool no_workspace = true;  ///< the local plans left the workspace empty
  bool allocations_ok = true;  ///< repeated calls allocate only their owning result (when counted)
  std::string detail;
};

/// One rank's run; `pad` is added to A's leading dimension (0: contiguous). The caller sets
/// CheckLevel::local, so that counted bytes are the plans' own and local plans communicate nothing.
template <MeshType M>
OwnBufferResult run_own_buffers(ProcessGroupMesh<M>& groups, const CommCounters* counters, std::int64_t m,
                                std::int64_t k, std::int64_t n, std::int64_t pad) {
  using RowsSplit = TensorSharding<Split<M::template axis_type<0>::fixed_name>, Replicated>;
  using Whole = TensorSharding<Replicated, Replicated>;
  using A_t = ShardedMatrix<double, M, RowsSplit, Eigen::ColMajor>;
  using B_t = ShardedMatrix<double, M, Whole, Eigen::RowMajor>;
  using C_t = ShardedMatrix<double, M, RowsSplit, Eigen::ColMajor>;
  OwnBufferResult r;
  std::ostringstream why;
  auto traffic_now = [&] { return counters ? counters->total() : Traffic{}; };

  // This rank's rows of A, as the application's own partition says (here the library's rule).
  const detail::block_geometry& geo = groups.geometry();
  const std::int64_t rows = geo.extent(m, A_t::axes.dim(0)), first = geo.offset(m, A_t::axes.dim(0));
  const std::int64_t lld = rows + pad;
  std::vector<double> a_buffer(static_cast<std::size_t>(std::max<std::int64_t>(lld * k, 1)), 1e300);
  for (std::int64_t j = 0; j < k; ++j)
    for (std::int64_t i = 0; i < rows; ++i) a_buffer[static_cast<std::size_t>(i + j * lld)] = own_a(first + i, j);
  std::vector<double> b_buffer(static_cast<std::size_t>(k * n));
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < n; ++j) b_buffer[static_cast<std::size_t>(i * n + j)] = own_b(i, j);
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> b_map(b_buffer.data(), k, n);
  std::vector<double> c_buffer(static_cast<std::size_t>(std::max<std::int64_t>(rows * n, 1)));

  const auto a = view<A_t>(groups, {m, k}, static_cast<const double*>(a_buffer.data()), {1, lld}, {rows, k});
  const auto b = view<B_t>(groups, {k, n}, b_map);
  const auto c_view = view<C_t>(groups, {m, n}, c_buffer.data(), {1, rows}, {rows, n});
  const auto at = transposed(a);
  r.in_place = a.data() == a_buffer.data() && b.data() == b_buffer.data() && c_view.data() == c_buffer.data() &&
               at.data() == a_buffer.data();

  // The serial reference, from the formulas.
  Eigen::MatrixXd a_whole(m, k), b_whole(k, n);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < k; ++j) a_whole(i, j) = own_a(i, j);
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < n; ++j) b_whole(i, j) = own_b(i, j);
  const Eigen::MatrixXd c_want = a_whole * b_whole;
  const Eigen::MatrixXd g_want = a_whole.transpose() * c_want;
  auto note_error = [&](const Eigen::MatrixXd& got, const Eigen::MatrixXd& want, const char* what) {
    const double e = got.rows() == want.rows() && got.cols() == want.cols() ? (got - want).norm() / want.norm() : 1e300;
    if (e > 1e-12) why << " " << what << ": error " << e << ";";
    r.error = std::max(r.error, e);
  };
  auto check_traffic = [&](const Traffic& measured, const Traffic& model, const char* what) {
    if (counters && !(measured == model)) {
      r.traffic_ok = false;
      why << " " << what << ": " << measured.bytes << " B counted, " << model.bytes << " B modeled;";
    }
  };
  const IndexExtents mkn{{'i', m}, {'k', k}, {'j', n}};
  using Product = matmul_plan<M, RowsSplit, Whole>;
  const Traffic product_model = Product::traffic(groups.mesh(), groups.coordinate(), {.m = m, .k = k, .n = n}, 8);

  // C = A B: the rows of A times all of B, a local GEMM on the views where they lie.
  detail::Workspace::local().release();
  Traffic before = traffic_now();
  auto c = matmul(a, b);
  check_traffic(traffic_now() - before, product_model, "matmul(A, B)");
  if (detail::Workspace::local().bytes_held() != 0) {
    r.no_workspace = false;
    why << " matmul(A, B) used " << detail::Workspace::local().bytes_held() << " B of workspace;";
  }
  {
    CountAllocations count;
    c = matmul(a, b);
    const std::int64_t result = 8 * c.local_rows() * c.local_cols();
    if (counting_allocations && count.bytes() > result + 256) {
      r.allocations_ok = false;
      why << " matmul(A, B) allocated " << count.bytes() << " B for a result of " << result << " B;";
    }
  }
  note_error(c.to_global(), c_want, "matmul(A, B)");

  // The same into the caller's C buffer: nothing allocated at all once the call is warm.
  matmul_into(c_view, a, b);
  {
    CountAllocations count;
    matmul_into(c_view, a, b);
    if (counting_allocations && count.bytes() != 0) {
      r.allocations_ok = false;
      why << " matmul_into(C view, A, B) allocated " << count.bytes() << " B in " << count.calls() << " calls;";
    }
  }
  note_error(c_view.to_global(), c_want, "matmul_into(C view, A, B)");

  // einsum on the same views (matrices are arrays too): the same local GEMM.
  detail::Workspace::local().release();
  before = traffic_now();
  auto e = einsum<"ik,kj->ij">(a, b);
  check_traffic(traffic_now() - before, einsum_plan<"ik,kj->ij", M, RowsSplit, Whole>::traffic(
                                            groups.mesh(), groups.coordinate(), mkn, 8), "einsum(A, B)");
  if (detail::Workspace::local().bytes_held() != 0) {
    r.no_workspace = false;
    why << " einsum(A, B) used " << detail::Workspace::local().bytes_held() << " B of workspace;";
  }
  {
    CountAllocations count;
    e = einsum<"ik,kj->ij">(a, b);
    const std::int64_t result = 8 * static_cast<std::int64_t>(e.local().size());
    if (counting_allocations && count.bytes() > result + 256) {
      r.allocations_ok = false;
      why << " einsum(A, B) allocated " << count.bytes() << " B for a result of " << result << " B;";
    }
  }
  const auto e_whole = e.to_global();
  note_error(Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(e_whole.data(), m, n),
             c_want, "einsum(A, B)");

  // G = Aᵀ C: k rows of Aᵀ... contracted over the split rows of A, one AllReduce, no transpose copy.
  before = traffic_now();
  const auto g = matmul(at, c);
  check_traffic(traffic_now() - before,
                matmul_plan<M, typename std::remove_const_t<decltype(at)>::sharding, RowsSplit>::traffic(
                    groups.mesh(), groups.coordinate(), {.m = k, .k = m, .n = n}, 8),
                "matmul(transposed(A), C)");
  note_error(g.to_global(), g_want, "matmul(transposed(A), C)");
  before = traffic_now();
  const auto h = einsum<"ki,kj->ij">(a, c);
  check_traffic(traffic_now() - before,
                einsum_plan<"ki,kj->ij", M, RowsSplit, RowsSplit>::traffic(
                    groups.mesh(), groups.coordinate(), {{'k', m}, {'i', k}, {'j', n}}, 8),
                "einsum<ki,kj->ij>(A, C)");
  const auto h_whole = h.to_global();
  note_error(Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(h_whole.data(), k, n),
             g_want, "einsum<ki,kj->ij>(A, C)");
  r.detail = why.str();
  return r;
}

}  // namespace shardwise::testing
