// Vectors and 0-D results on the virtual cluster: einsum "i,i->" (a replicated scalar, its
// reduction a named AllReduce), and shardwise/linalg.hpp's dot, norm, axpy, scale and matvec,
// each against the serial result, with counted bytes == the plans' model (uneven extents).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "shardwise/tensor.hpp"
#include "virtual_counted.hpp"

namespace sw = shardwise;
using namespace sw::testing;

namespace {

using R = sw::Replicated;
template <sw::fixed_string... N> using S = sw::Split<N...>;
template <typename... D> using TS = sw::TensorSharding<D...>;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using Scalar0 = TS<>;

/// Runs `body(groups, counters, fail)` on every rank of a 2 x 2 virtual cluster with counting,
/// and expects no rank to report a failure.
template <typename F>
void on_grid(F&& body) {
  const std::vector<std::string> failures = run_counted_on_cluster(Grid{}, body);
  for (std::size_t r = 0; r < failures.size(); ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

template <typename Scalar>
Eigen::Tensor<Scalar, 1, Eigen::RowMajor> vector_of(Eigen::Index n, double phase) {
  Eigen::Tensor<Scalar, 1, Eigen::RowMajor> v(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double t = phase + 0.37 * static_cast<double>(i);
    if constexpr (sw::detail::is_complex_v<Scalar>) v(i) = Scalar(std::sin(t), std::cos(2 * t));
    else v(i) = std::sin(t);
  }
  return v;
}

}  // namespace

// ---- a 0-D output: replicated, its reduction a named step -------------------------------------

using DotSplit = sw::einsum_plan<"i,i->", Grid, TS<S<"x", "y">>, TS<S<"x", "y">>>;
static_assert(std::is_same_v<DotSplit::output_sharding, Scalar0>);
static_assert(DotSplit::schedule.size() == 2);
static_assert(DotSplit::schedule[1].kind == sw::StepKind::all_reduce);
// One vector split, the other replicated: the replicated one is sliced (no gather).
using DotMixed = sw::dot_plan<Grid, TS<S<"x">>, TS<R>>;
static_assert(DotMixed::schedule[0] == sw::Step{sw::StepKind::slice, sw::Operand::B, 0, {0}, {}});
static_assert(std::is_same_v<sw::matvec_plan<Grid, TS<S<"x">, S<"y">>, TS<R>>::output_sharding, TS<S<"x">>>);

TEST(LinalgVirtual, ScalarOutputDescribeAndModel) {
  EXPECT_EQ(DotSplit::describe(), "MatchedInner: local GEMM -> AllReduce C over (x,y) => C[]");
  EXPECT_EQ(DotMixed::describe(), "UnmatchedInner: slice B along i over x -> local GEMM -> AllReduce C over x => C[]");
  // An AllReduce of one double over 4 ranks: 2 (P - 1) / P * 8 bytes, as the ring counts it.
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(DotSplit::traffic(Grid{}, Grid{}.unravel(r), {{'i', 11}}, 8),
              sw::detail::ring_all_reduce_traffic(1, 4, r, 8));
}

TEST(LinalgVirtual, EinsumScalarOutput) {
  const auto xg = vector_of<double>(11, 0.3), yg = vector_of<double>(11, 1.1);
  double want = 0;
  for (Eigen::Index i = 0; i < 11; ++i) want += xg(i) * yg(i);
  on_grid([&](sw::ProcessGroupMesh<Grid>& groups, const sw::CommCounters& counters, auto fail) {
    const auto x = sw::ShardedTensor<double, Grid, TS<S<"x", "y">>>::distribute(groups, xg);
    const auto y = sw::ShardedTensor<double, Grid, TS<S<"x", "y">>>::distribute(groups, yg);
    const sw::Traffic before = counters.total();
    const auto s = sw::einsum<"i,i->">(x, y);
    const sw::Traffic sent = counters.total() - before;
    static_assert(std::is_same_v<decltype(s)::sharding, Scalar0>);
    if (std::abs(s.local()() - want) > 1e-14) fail("einsum i,i-> differs from the serial dot");
    if (sent != DotSplit::traffic(Grid{}, groups.coordinate(), {{'i', 11}}, 8)) fail("counted != modeled");
    if (std::abs(s.to_global()() - want) > 1e-14) fail("to_global() of a 0-D tensor");
    // A 0-D tensor distributed from a scalar and gathered back.
    Eigen::Tensor<double, 0, Eigen::RowMajor> one;
    one() = 2.5;
    if (sw::ShardedTensor<double, Grid, Scalar0>::distribute(groups, one).to_global()() != 2.5) fail("0-D distribute");
  });
}

TEST(LinalgVirtual, DotNormAxpyScaleMatvec) {
  constexpr Eigen::Index n = 13;  // uneven over 2 and over 4
  const auto xg = vector_of<double>(n, 0.2), yg = vector_of<double>(n, 0.9);
  Eigen::Tensor<double, 2, Eigen::RowMajor> ag(n, n);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < n; ++j) ag(i, j) = 1.0 / (1.0 + static_cast<double>(i + 2 * j));
  double dot = 0, norm = 0;
  for (Eigen::Index i = 0; i < n; ++i) dot += xg(i) * yg(i), norm += xg(i) * xg(i);
  norm = std::sqrt(norm);
  on_grid([&](sw::ProcessGroupMesh<Grid>& groups, const sw::CommCounters& counters, auto fail) {
    using V = TS<S<"x">>;
    const auto x = sw::ShardedTensor<double, Grid, V>::distribute(groups, xg);
    const auto x_whole = sw::ShardedTensor<double, Grid, TS<R>>::distribute(groups, xg);
    auto y = sw::ShardedTensor<double, Grid, V>::distribute(groups, yg);
    const auto at = groups.coordinate();

    sw::Traffic before = counters.total();
    if (std::abs(sw::dot(x, y) - dot) > 1e-14) fail("dot");
    if (counters.total() - before != sw::dot_plan<Grid, V, V>::traffic(Grid{}, at, {{'i', n}}, 8)) fail("dot bytes");
    before = counters.total();
    if (std::abs(sw::dot(x, x_whole) - norm * norm) > 1e-13) fail("dot of a split and a replicated vector");
    if (counters.total() - before != sw::dot_plan<Grid, V, TS<R>>::traffic(Grid{}, at, {{'i', n}}, 8))
      fail("dot bytes, split and replicated");
    before = counters.total();
    if (std::abs(sw::norm(x) - norm) > 1e-14) fail("norm");
    if (counters.total() - before != sw::norm_plan<Grid, V>::traffic(Grid{}, at, {{'i', n}}, 8)) fail("norm bytes");
    before = counters.total();
    if (std::abs(sw::norm(x_whole) - norm) > 1e-14) fail("norm of a replicated vector");
    if (counters.total() != before) fail("the norm of a replicated vector sends nothing");

    sw::axpy(-2.0, x, y);  // y = y - 2 x
    sw::scale(0.5, y);     // y = y / 2 - x
    const auto yl = y.to_global();
    for (Eigen::Index i = 0; i < n; ++i)
      if (std::abs(yl(i) - (yg(i) / 2 - xg(i))) > 1e-15) return fail("axpy and scale");

    const auto a = sw::ShardedTensor<double, Grid, TS<S<"x">, S<"y">>>::distribute(groups, ag);
    before = counters.total();
    const auto ax = sw::matvec(a, x_whole);  // x sliced to [y], AllReduce over y
    if (counters.total() - before !=
        sw::matvec_plan<Grid, TS<S<"x">, S<"y">>, TS<R>>::traffic(Grid{}, at, {{'i', n}, {'j', n}}, 8))
      fail("matvec bytes");
    const auto axl = ax.to_global();
    // A by columns over (x,y) and x split like them, y requested split like x too: the pending
    // sum is reduce-scattered into it, and nothing else moves.
    using ByRanks = TS<S<"x", "y">>;
    const auto a_columns = sw::ShardedTensor<double, Grid, TS<R, S<"x", "y">>>::distribute(groups, ag);
    const auto x_split = sw::ShardedTensor<double, Grid, ByRanks>::distribute(groups, xg);
    before = counters.total();
    const sw::ShardedTensor<double, Grid, ByRanks> ax_split = sw::matvec<ByRanks>(a_columns, x_split);
    using Requested = sw::matvec_plan<Grid, TS<R, S<"x", "y">>, ByRanks, ByRanks>;
    static_assert(Requested::schedule.back().kind == sw::StepKind::reduce_scatter);
    if (counters.total() - before != Requested::traffic(Grid{}, at, {{'i', n}, {'j', n}}, 8))
      fail("matvec bytes, requested output");
    const auto axl_split = ax_split.to_global();
    for (Eigen::Index i = 0; i < n; ++i) {
      double want = 0;
      for (Eigen::Index j = 0; j < n; ++j) want += ag(i, j) * xg(j);
      if (std::abs(axl(i) - want) > 1e-14) return fail("matvec");
      if (std::abs(axl_split(i) - want) > 1e-14) return fail("matvec, requested output");
    }
  });
}

// ---- generate: each rank computes its own block from global indices --------------------------
TEST(LinalgVirtual, GenerateFillsEachBlockFromGlobalIndices) {
  constexpr std::int64_t rows = 7, cols = 5;  // uneven over 2
  const auto entry = [](std::int64_t i, std::int64_t j) { return static_cast<double>(100 * i + j); };
  on_grid([&](sw::ProcessGroupMesh<Grid>& groups, const sw::CommCounters& counters, auto fail) {
    const sw::Traffic before = counters.total();
    const auto a = sw::ShardedTensor<double, Grid, TS<S<"y">, S<"x">>>::generate(groups, {rows, cols}, entry);
    const auto p = sw::ShardedTensor<double, Grid, TS<S<"x">, R, sw::Partial<"y">>>::generate(groups, {rows, cols}, entry);
    const auto v = sw::ShardedTensor<std::complex<double>, Grid, TS<S<"x", "y">>>::generate(
        groups, {rows}, [](std::int64_t i) { return std::complex<double>(static_cast<double>(i), -1.0); });
    const auto s = sw::ShardedTensor<double, Grid, Scalar0>::generate(groups, {}, [] { return 2.5; });
    if (counters.total() != before) fail("generate sent bytes");
    const auto al = a.to_global(), pl = sw::reduce(p).to_global();
    const auto vl = v.to_global();
    for (std::int64_t i = 0; i < rows; ++i) {
      if (vl(i) != std::complex<double>(static_cast<double>(i), -1.0)) return fail("generate, complex vector");
      for (std::int64_t j = 0; j < cols; ++j) {
        if (al(i, j) != entry(i, j)) return fail("generate, 2-D blocks");
        if (pl(i, j) != entry(i, j)) return fail("generate, Partial: one share holds the value");
      }
    }
    if (s.local()() != 2.5) fail("generate, 0-D");
  });
}

// ---- element-wise: any function of arrays sharded alike, on each rank's own block ----------------
TEST(LinalgVirtual, ElementwiseOnEachBlock) {
  using C = std::complex<double>;
  constexpr std::int64_t rows = 5, cols = 3;  // uneven over 2
  on_grid([&](sw::ProcessGroupMesh<Grid>& groups, const sw::CommCounters& counters, auto fail) {
    using Sh = TS<S<"y">, S<"x">>;
    const auto x = sw::ShardedTensor<double, Grid, Sh>::generate(
        groups, {rows, cols}, [](std::int64_t i, std::int64_t j) { return static_cast<double>(i - 2 * j); });
    auto y = sw::ShardedTensor<C, Grid, Sh>::generate(
        groups, {rows, cols}, [](std::int64_t i, std::int64_t j) { return C(static_cast<double>(j), 1.0 + i); });
    const sw::Traffic before = counters.total();
    // Mixed scalar types; the result's is the function's (double from |y|).
    const auto z = sw::elementwise([](double a, C b) { return a + std::abs(b); }, x, y);
    static_assert(std::is_same_v<std::remove_const_t<decltype(z)>, sw::ShardedTensor<double, Grid, Sh>>);
    sw::elementwise_into(y, [](C b, double a) { return b * a; }, y, x);  // in place
    if (counters.total() != before) fail("elementwise sent bytes");
    const auto zl = z.to_global();
    const auto yl = y.to_global();
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) {
        const double a = static_cast<double>(i - 2 * j);
        const C b(static_cast<double>(j), 1.0 + static_cast<double>(i));
        if (zl(i, j) != a + std::abs(b)) return fail("elementwise");
        if (yl(i, j) != b * a) return fail("elementwise_into, in place");
      }
    // Different extents: the same error on every rank.
    const auto w = sw::ShardedTensor<double, Grid, Sh>::generate(groups, {rows, cols + 1},
                                                                 [](std::int64_t, std::int64_t) { return 1.0; });
    try {
      (void)sw::elementwise([](double a, double b) { return a + b; }, x, w);
      fail("elementwise of arrays of different extents was accepted");
    } catch (const std::exception& e) {
      if (std::string(e.what()).find("the arrays have different extents") == std::string::npos)
        fail(std::string("unexpected message: ") + e.what());
    }
  });
}

TEST(LinalgVirtual, ComplexDotConjugatesTheFirstArgument) {
  using C = std::complex<double>;
  const auto xg = vector_of<C>(9, 0.4), yg = vector_of<C>(9, 1.7);
  C want = 0;
  for (Eigen::Index i = 0; i < 9; ++i) want += std::conj(xg(i)) * yg(i);
  on_grid([&](sw::ProcessGroupMesh<Grid>& groups, const sw::CommCounters& counters, auto fail) {
    using V = TS<S<"y", "x">>;
    const auto x = sw::ShardedTensor<C, Grid, V>::distribute(groups, xg);
    const auto y = sw::ShardedTensor<C, Grid, V>::distribute(groups, yg);
    if (std::abs(sw::dot(x, y) - want) > 1e-14) fail("complex dot (dotc)");
    const sw::Traffic before = counters.total();
    const double norm = sw::norm(x);
    // The scale is one double; the dot of the scaled vector a complex<double>.
    if (counters.total() - before != sw::norm_plan<Grid, V>::traffic(Grid{}, groups.coordinate(), {{'i', 9}}, 16, 8))
      fail("complex norm bytes");
    if (std::abs(norm - std::sqrt(std::abs(sw::dot(x, x)))) > 1e-14) fail("complex norm");
  });
}

TEST(LinalgVirtual, NormDoesNotOverflow) {
  Eigen::Tensor<double, 1, Eigen::RowMajor> big(6);
  big.setConstant(1e300);  // squares overflow a double; the norm, sqrt(6) * 1e300, does not
  Eigen::Tensor<double, 1, Eigen::RowMajor> tiny(6);
  tiny.setConstant(1e-300);  // squares underflow to 0
  on_grid([&](sw::ProcessGroupMesh<Grid>& groups, const sw::CommCounters&, auto fail) {
    const auto x = sw::ShardedTensor<double, Grid, TS<S<"x", "y">>>::distribute(groups, big);
    const auto t = sw::ShardedTensor<double, Grid, TS<S<"x", "y">>>::distribute(groups, tiny);
    if (std::abs(sw::norm(x) / (std::sqrt(6.0) * 1e300) - 1) > 1e-15) fail("norm of 1e300s");
    if (std::abs(sw::norm(t) / (std::sqrt(6.0) * 1e-300) - 1) > 1e-15) fail("norm of 1e-300s");
  });
}
