// Vectors and 0-D results on the virtual cluster: einsum "i,i->" (a replicated scalar, its
// reduction a named AllReduce), and shardwise/linalg.hpp's dot, norm, axpy, scale and matvec,
// each against the serial result, with counted bytes == the plans' model (uneven extents); a
// Partial kept where B is replicated (0 bytes). The bodies (linalg_bodies.hpp) also run under
// mpiexec, in test_slice_mpi.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "linalg_bodies.hpp"
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

/// Runs one of linalg_bodies.hpp's bodies on every rank of the 2 x 2 cluster.
#define SHARDWISE_ON_GRID(body)                                                                   \
  on_grid([](sw::ProcessGroupMesh<Grid>& groups, const sw::CommCounters& counters, auto fail) { \
    body(groups, counters, fail);                                                               \
  })

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

TEST(LinalgVirtual, EinsumScalarOutput) { SHARDWISE_ON_GRID(linalg::einsum_scalar_output); }

TEST(LinalgVirtual, DotNormAxpyScaleMatvec) { SHARDWISE_ON_GRID(linalg::dot_norm_axpy_scale_matvec); }

// ---- a Partial kept where B is replicated: B sliced, local GEMM, 0 bytes; reduce() gives A B ----
TEST(LinalgVirtual, PartialKeptWhereBIsReplicated) {
  SHARDWISE_ON_GRID((linalg::keep_partial_with_b_replicated<Grid, "x">));
  SHARDWISE_ON_GRID((linalg::keep_partial_with_b_replicated<Grid, "x", "y">));
}

// ---- generate: each rank computes its own block from global indices --------------------------
TEST(LinalgVirtual, GenerateFillsEachBlockFromGlobalIndices) { SHARDWISE_ON_GRID(linalg::generate_blocks); }

// ---- element-wise: any function of arrays sharded alike, on each rank's own block ----------------
TEST(LinalgVirtual, ElementwiseOnEachBlock) { SHARDWISE_ON_GRID(linalg::elementwise_on_blocks); }

TEST(LinalgVirtual, ComplexDotConjugatesTheFirstArgument) { SHARDWISE_ON_GRID(linalg::complex_dot_and_norm); }

TEST(LinalgVirtual, NormDoesNotOverflow) { SHARDWISE_ON_GRID(linalg::norm_without_overflow); }
