// Shared by the view tests (virtual cluster and mpiexec): matmul on views of each rank's own
// buffer (a leading dimension larger than the block, an Eigen::Map) and on transposed views,
// against serial Eigen, the cost model, and the same product of owning matrices: the traffic
// must be the model's, and for a plan that gathers neither A nor B the executor's workspace
// must not grow beyond the owning run's (the views' blocks are read where they lie).
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "products/matmul_cases.hpp"
#include "products/matmul_support.hpp"
#include "shardwise/shardwise.hpp"
#include "shardwise/view.hpp"

namespace shardwise::testing {

/// What one rank saw in one view case.
struct ViewResult {
  double error = 0;               ///< the product of views against serial Eigen
  double transposed_error = 0;    ///< the product of transposed views against serial Eigen
  double tolerance = 0;
  bool traffic_ok = false;        ///< views, transposed views and owning: measured == model
  bool in_place = false;          ///< the views' data pointers are the buffers' own
  bool no_copy = false;           ///< workspace of the views' product == the owning product's (when checked)
  bool to_global_ok = false;      ///< a strided view gathers to its global matrix
  std::string detail;             ///< what differed, for the message
};

/// Whether the plan gathers or slices A or B (a view is then packed into the collective's send
/// buffer, or its slice copied, as the plan names), counting the gathering alternative that a
/// slicing plan may run instead for the extents.
template <typename Plan>
constexpr bool gathers_an_input() {
  const auto copies_an_input = [](const auto& schedule) {
    for (const Step& s : schedule)
      if ((s.kind == StepKind::all_gather || s.kind == StepKind::ring_all_gather_gemm || s.kind == StepKind::slice) &&
          s.operand != Operand::C)
        return true;
    return false;
  };
  if constexpr (requires { Plan::has_alternative; })
    if (Plan::has_alternative && copies_an_input(Plan::alternative_schedule)) return true;
  return copies_an_input(Plan::schedule);
}

/// This rank's block of `global` (rows x cols at the offsets) copied into a buffer laid out as
/// the caller's own memory: column-major with leading dimension `ld` (padding filled with NaN-like
/// garbage, so reading it would show in the result).
template <typename Scalar, typename Global>
std::vector<Scalar> padded_col_major(const Global& global, std::int64_t row, std::int64_t col, std::int64_t rows,
                                     std::int64_t cols, std::int64_t ld) {
  std::vector<Scalar> buffer(static_cast<std::size_t>(ld * std::max<std::int64_t>(cols, 1)), Scalar(1e30f));
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) buffer[static_cast<std::size_t>(i + j * ld)] = global(row + i, col + j);
  return buffer;
}

/// The same, row-major with leading dimension `ld`.
template <typename Scalar, typename Global>
std::vector<Scalar> padded_row_major(const Global& global, std::int64_t row, std::int64_t col, std::int64_t rows,
                                     std::int64_t cols, std::int64_t ld) {
  std::vector<Scalar> buffer(static_cast<std::size_t>(ld * std::max<std::int64_t>(rows, 1)), Scalar(1e30f));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) buffer[static_cast<std::size_t>(i * ld + j)] = global(row + i, col + j);
  return buffer;
}

/// One case: A and B as views (A over a column-major buffer with a leading dimension, B over
/// an Eigen::Map of a row-major one), then transposed views of Aᵀ (owning) and Bᵀ (a padded
/// view), each product against the owning product of the same storage orders.
template <typename Scalar, typename ShA, typename ShB, typename V, MeshType M>
ViewResult run_view_case(ProcessGroupMesh<M>& groups, MatmulShape shape, std::uint64_t seed,
                         const CommCounters* counters) {
  using Plan = matmul_plan<M, ShA, ShB, NaturalOutput, V>;
  using ATransposed = typename detail::transposed_sharding<ShA>::type;
  using BTransposed = typename detail::transposed_sharding<ShB>::type;
  const auto a_global = random_matrix<Scalar>(shape.m, shape.k, seed);
  const auto b_global = random_matrix<Scalar>(shape.k, shape.n, seed + 1);
  using W = wide_t<Scalar>;
  const auto reference = (a_global.template cast<W>() * b_global.template cast<W>()).eval();

  ViewResult r;
  r.tolerance = tolerance<Scalar>();
  std::ostringstream why;
  auto traffic_now = [&] { return counters ? counters->total() : Traffic{}; };
  const Traffic model = Plan::traffic(groups.mesh(), groups.coordinate(), shape, sizeof(Scalar));

  // The owning product, in the storage orders the views have: A column-major, B row-major.
  using OwnA = ShardedMatrix<Scalar, M, ShA, Eigen::ColMajor>;
  using OwnB = ShardedMatrix<Scalar, M, ShB, Eigen::RowMajor>;
  const auto a_own = OwnA::distribute(groups, a_global);
  const auto b_own = OwnB::distribute(groups, b_global);
  detail::Workspace::local().release();
  Traffic before = traffic_now();
  auto c_own = matmul(a_own, b_own, V{});
  const Traffic own_traffic = traffic_now() - before;
  const std::size_t own_bytes = detail::Workspace::local().bytes_held();
  (void)c_own;

  // Views of each rank's own buffers, padded: A column-major with ld = rows + 3, B row-major
  // with ld = cols + 2, through an Eigen::Map with an outer stride.
  const std::int64_t lda = a_own.local_rows() + 3, ldb = b_own.local_cols() + 2;
  auto a_buffer = padded_col_major<Scalar>(a_global, a_own.row_offset(), a_own.col_offset(), a_own.local_rows(),
                                           a_own.local_cols(), lda);
  auto b_buffer = padded_row_major<Scalar>(b_global, b_own.row_offset(), b_own.col_offset(), b_own.local_rows(),
                                           b_own.local_cols(), ldb);
  using RowMajorMatrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<RowMajorMatrix, 0, Eigen::OuterStride<>> b_map(b_buffer.data(), b_own.local_rows(), b_own.local_cols(),
                                                            Eigen::OuterStride<>(ldb));
  const auto a_view = view<OwnA>(groups, {shape.m, shape.k}, a_buffer.data(), {1, lda}, a_own.local_extents());
  const auto b_view = view<OwnB>(groups, {shape.k, shape.n}, b_map);
  static_assert(std::is_same_v<typename std::remove_const_t<decltype(b_view)>::ownership, View>);
  r.in_place = a_view.data() == a_buffer.data() && a_view.local().data() == a_buffer.data() &&
               b_view.data() == b_buffer.data() && a_view.stride(1) == lda && b_view.stride(0) == ldb;

  detail::Workspace::local().release();
  before = traffic_now();
  auto c_view = matmul(a_view, b_view, V{});
  const Traffic view_traffic = traffic_now() - before;
  const std::size_t view_bytes = detail::Workspace::local().bytes_held();
  r.no_copy = gathers_an_input<Plan>() || view_bytes == own_bytes;
  if (!r.no_copy) why << " workspace: views " << view_bytes << " B, owning " << own_bytes << " B;";

  // Transposed views: of an owning Aᵀ (row-major, so its transpose is column-major as OwnA),
  // and of a padded column-major view of Bᵀ (its transpose is row-major as OwnB).
  const Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> at_global = a_global.transpose();
  const Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> bt_global = b_global.transpose();
  const auto at_own = ShardedMatrix<Scalar, M, ATransposed, Eigen::RowMajor>::distribute(groups, at_global);
  using OwnBt = ShardedMatrix<Scalar, M, BTransposed, Eigen::ColMajor>;
  const std::int64_t bt_rows = b_own.local_cols(), bt_cols = b_own.local_rows(), ldbt = bt_rows + 5;
  auto bt_buffer =
      padded_col_major<Scalar>(bt_global, b_own.col_offset(), b_own.row_offset(), bt_rows, bt_cols, ldbt);
  const Scalar* bt_data = bt_buffer.data();  // read-only: a ConstView
  const auto bt_view = view<OwnBt>(groups, {shape.n, shape.k}, bt_data, {1, ldbt}, {bt_rows, bt_cols});
  const auto a_t = transposed(at_own);
  const auto b_t = transposed(bt_view);
  static_assert(std::is_same_v<typename std::remove_const_t<decltype(a_t)>::sharding, ShA>);
  static_assert(std::remove_const_t<decltype(a_t)>::storage_order == Eigen::ColMajor);
  static_assert(std::is_same_v<typename std::remove_const_t<decltype(b_t)>::sharding, ShB>);
  r.in_place = r.in_place && a_t.data() == at_own.local().data() && b_t.data() == bt_data;

  detail::Workspace::local().release();
  before = traffic_now();
  auto c_t = matmul(a_t, b_t, V{});
  const Traffic transposed_traffic = traffic_now() - before;
  const std::size_t transposed_bytes = detail::Workspace::local().bytes_held();
  if (!gathers_an_input<Plan>() && transposed_bytes != own_bytes) {
    r.no_copy = false;
    why << " workspace: transposed views " << transposed_bytes << " B, owning " << own_bytes << " B;";
  }

  r.traffic_ok = !counters || (own_traffic == model && view_traffic == model && transposed_traffic == model);
  if (!r.traffic_ok)
    why << " traffic (bytes): model " << model.bytes << ", owning " << own_traffic.bytes << ", views "
        << view_traffic.bytes << ", transposed " << transposed_traffic.bytes << ";";
  r.error = relative_error(c_view.to_global(), reference);
  r.transposed_error = relative_error(c_t.to_global(), reference);
  r.to_global_ok = relative_error(a_view.to_global(), a_global) == 0.0 &&
                   relative_error(b_t.to_global(), b_global) == 0.0;
  r.detail = why.str();
  return r;
}

/// A named view case, for any mesh of type M.
template <typename M>
struct ViewCase {
  std::string name;
  std::function<ViewResult(ProcessGroupMesh<M>&, MatmulShape, std::uint64_t, const CommCounters*)> run;
};

template <typename M, typename Scalar, typename ShA, typename ShB, typename V = variant::Standard>
void add_view_case(std::vector<ViewCase<M>>& cases) {
  if constexpr (valid_matmul<M, ShA, ShB, NaturalOutput, V>) {
    std::ostringstream name;
    name << "A" << ShA::to_string() << " B" << ShB::to_string() << " " << V::name << ": "
         << matmul_plan<M, ShA, ShB, NaturalOutput, V>::describe();
    cases.push_back({name.str(), [](ProcessGroupMesh<M>& g, MatmulShape s, std::uint64_t seed, const CommCounters* c) {
                       return run_view_case<Scalar, ShA, ShB, V>(g, s, seed, c);
                     }});
  }
}

/// Every policy family on a line of ranks: Unsharded, MatchedInner, UnmatchedInner (and its
/// ring), Outer (rows of A, columns of B).
inline std::vector<ViewCase<Line>> line_view_cases() {
  std::vector<ViewCase<Line>> cases;
  using X = S<"x">;
  add_view_case<Line, double, TS<R, R>, TS<R, R>>(cases);
  add_view_case<Line, double, TS<R, X>, TS<X, R>>(cases);
  add_view_case<Line, double, TS<R, X>, TS<R, R>>(cases);
  add_view_case<Line, double, TS<R, R>, TS<X, R>, variant::Ring>(cases);
  add_view_case<Line, double, TS<R, X>, TS<R, R>, variant::Ring>(cases);
  add_view_case<Line, double, TS<X, R>, TS<R, R>>(cases);
  add_view_case<Line, double, TS<R, R>, TS<R, X>>(cases);
  add_view_case<Line, std::complex<double>, TS<X, R>, TS<R, R>>(cases);
  add_view_case<Line, float, TS<R, X>, TS<X, R>>(cases);
  return cases;
}

/// Outer and Full on a grid, and SUMMA.
inline std::vector<ViewCase<Grid>> grid_view_cases() {
  std::vector<ViewCase<Grid>> cases;
  using X = S<"x">;
  using Y = S<"y">;
  add_view_case<Grid, double, TS<X, Y>, TS<Y, R>>(cases);
  add_view_case<Grid, double, TS<X, Y>, TS<X, R>>(cases);
  add_view_case<Grid, double, TS<X, Y>, TS<X, Y>>(cases);
  add_view_case<Grid, double, TS<X, Y>, TS<X, Y>, variant::Summa<4>>(cases);
  add_view_case<Grid, double, TS<X, R>, TS<R, Y>>(cases);
  return cases;
}

}  // namespace shardwise::testing
