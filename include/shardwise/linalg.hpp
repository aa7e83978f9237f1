// shardwise/linalg.hpp: the vector operations of a numerical code, on sharded tensors.
//
//   const double rr = sw::dot(r, r);      // einsum "i,i->": a local dot, an AllReduce of one scalar
//   auto q = sw::matvec(A, p);            // einsum "ij,j->i", planned like any contraction
//   sw::axpy(alpha, p, x);                // x += alpha p, each rank on its own block
//   sw::scale(beta, p);                   // p *= beta
//   const double n = sw::norm(r);         // the 2-norm, scaled against overflow
//   auto z = sw::elementwise([](double a, double b) { return a * b; }, x, y);   // any f, no communication
//
// Vectors are rank-1 ShardedTensors. What contracts goes through the one planner as an einsum
// spec, so every byte it moves is a named step of its plan (dot_plan, matvec_plan give the
// cost model); what is element-wise works on the local blocks and sends nothing, which is why
// it needs both operands sharded alike (a compile error names the reshard that fixes it).
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>

#include "shardwise/comm/types.hpp"
#include "shardwise/einsum.hpp"
#include "shardwise/plan/describe.hpp"
#include "shardwise/plan/einsum_plan.hpp"
#include "shardwise/sharded_tensor.hpp"
#include "shardwise/sharding.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise {

/// The plan of dot(x, y) for vectors sharded as ShX and ShY: "i,i->", the scalar replicated.
template <MeshType M, typename ShX, typename ShY>
using dot_plan = einsum_plan<"i,i->", M, ShX, ShY, TensorSharding<>>;

/// The plan of matvec(A, x): "ij,j->i", with the natural output or the one requested (ShY).
template <MeshType M, typename ShA, typename ShX, typename ShY = NaturalOutput>
using matvec_plan = einsum_plan<"ij,j->i", M, ShA, ShX, ShY>;

/// The plan of norm(x) for a vector sharded as Sh: an AllReduce (max) of one real over the axes
/// that split x (the scale), then dot_plan's schedule on the scaled vector.
template <MeshType M, typename Sh>
struct norm_plan {
  /// The dot product of the scaled vector with itself.
  using dot = dot_plan<M, Sh, Sh>;
  /// The mesh axes that split x: the scale's AllReduce runs over them.
  static constexpr detail::axis_list split_axes = detail::resolve_sharding<M, Sh>().dims[0];

  /// "AllReduce (max) of one real over x, then <dot_plan's description>".
  static std::string describe() {
    return (split_axes.empty() ? std::string()
                               : "AllReduce (max) of the scale over " + detail::axes_text_of(split_axes, M::names) +
                                     ", then ") +
           dot::describe();
  }
  /// Bytes and messages the rank at `coordinate` sends for a vector of extents {{'i', n}}, with
  /// elements of `scalar_bytes` whose magnitudes take `real_bytes` (half of a complex scalar's),
  /// for a nonzero finite x (norm returns early, sending only the scale, otherwise).
  static constexpr Traffic traffic(const M& mesh, const typename M::coordinate_type& coordinate,
                                   const IndexExtents& extents, std::int64_t scalar_bytes,
                                   std::int64_t real_bytes) {
    const detail::block_geometry geo(mesh, coordinate);
    return detail::ring_all_reduce_traffic(1, geo.group_size(split_axes), geo.group_rank(split_axes), real_bytes) +
           dot::traffic(mesh, coordinate, extents, scalar_bytes);
  }
  /// The same for real scalars (the magnitude as wide as the scalar).
  static constexpr Traffic traffic(const M& mesh, const typename M::coordinate_type& coordinate,
                                   const IndexExtents& extents, std::int64_t scalar_bytes) {
    return traffic(mesh, coordinate, extents, scalar_bytes, scalar_bytes);
  }
};

namespace detail {

template <typename Sh>
inline constexpr bool is_vector_sharding_v = is_tensor_sharding_v<Sh> && Sh::rank == 1;

/// Throws the same error on every rank when two vectors have different lengths (local check:
/// every rank holds the same extents, agreed when the vectors were made).
template <typename X, typename Y>
void check_same_length(const char* operation, const X& x, const Y& y) {
  x.check_valid(operation, "x");
  y.check_valid(operation, "y");
  if (x.extent(0) != y.extent(0))
    fail({operation, ": x has ", x.extent(0), " elements but y has ", y.extent(0)});
}

}  // namespace detail

/// x^H y (for real scalars x^T y; complex x is conjugated, as BLAS dotc): the same scalar on
/// every rank. Collective: dot_plan's schedule (a local dot, then an AllReduce of one scalar over
/// the axes that split the vectors; a vector that is replicated where the other is split is
/// sliced, not gathered).
template <typename Scalar, MeshType M, typename ShX, typename ShY>
Scalar dot(const ShardedTensor<Scalar, M, ShX>& x, const ShardedTensor<Scalar, M, ShY>& y) {
  static_assert(detail::is_vector_sharding_v<ShX> && detail::is_vector_sharding_v<ShY>,
                "shardwise::dot: x and y must be vectors (ShardedTensor with a TensorSharding of one dimension); "
                "for matrices use sw::einsum<\"ij,ij->\">");
  detail::check_same_length("shardwise::dot", x, y);
  if constexpr (detail::is_complex_v<Scalar>) {
    ShardedTensor<Scalar, M, ShX> conjugated(x.groups(), x.extents(), detail::uninitialized);
    const Scalar* from = x.local().data();
    Scalar* to = conjugated.local().data();
    for (Eigen::Index i = 0; i < x.local().size(); ++i) to[i] = std::conj(from[i]);
    return einsum<"i,i->", TensorSharding<>>(conjugated, y).local()();
  } else {
    return einsum<"i,i->", TensorSharding<>>(x, y).local()();
  }
}

/// y = A x for a matrix A (a rank-2 ShardedTensor) and a vector x: einsum<"ij,j->i">, whose plan
/// (matvec_plan) decides what moves; the result's sharding is the natural one, or ShY when given
/// (sw::matvec<TensorSharding<Split<"p">>>(A, x): a pending sum is then reduce-scattered into it).
template <typename ShY = NaturalOutput, typename Scalar, MeshType M, typename ShA, typename ShX>
auto matvec(const ShardedTensor<Scalar, M, ShA>& a, const ShardedTensor<Scalar, M, ShX>& x) {
  static_assert(detail::is_tensor_sharding_v<ShA> && ShA::rank == 2,
                "shardwise::matvec: A must be a matrix (ShardedTensor with a TensorSharding of two dimensions)");
  static_assert(detail::is_vector_sharding_v<ShX>,
                "shardwise::matvec: x must be a vector (ShardedTensor with a TensorSharding of one dimension)");
  return einsum<"ij,j->i", ShY>(a, x);
}

/// y += alpha x, each rank on its own block: no communication, so x and y must be sharded
/// alike (checked at compile time).
template <typename Scalar, MeshType M, typename ShX, typename ShY>
void axpy(std::type_identity_t<Scalar> alpha, const ShardedTensor<Scalar, M, ShX>& x, ShardedTensor<Scalar, M, ShY>& y) {
  static_assert(std::is_same_v<ShX, ShY>,
                "shardwise::axpy: x and y must have the same sharding, since each rank adds its own block; "
                "reshard one first, e.g. sw::axpy(alpha, sw::reshard<decltype(y)::sharding>(x), y)");
  static_assert(detail::is_vector_sharding_v<ShX>, "shardwise::axpy: x and y must be vectors (rank-1 ShardedTensor)");
  detail::check_same_length("shardwise::axpy", x, y);
  const Scalar* from = x.local().data();
  Scalar* to = y.local().data();
  for (Eigen::Index i = 0; i < y.local().size(); ++i) to[i] += alpha * from[i];
}

/// x *= alpha, each rank on its own block (no communication).
template <typename Scalar, MeshType M, typename Sh>
void scale(std::type_identity_t<Scalar> alpha, ShardedTensor<Scalar, M, Sh>& x) {
  x.check_valid("shardwise::scale", "x");
  Scalar* data = x.local().data();
  for (Eigen::Index i = 0; i < x.local().size(); ++i) data[i] *= alpha;
}

namespace detail {

/// The static checks of an element-wise operation on X and the arrays `Rest` (ShardedTensors).
template <typename X, typename... Rest>
constexpr void check_elementwise_operands() {
  static_assert((is_sharded_tensor_v<Rest> && ...),
                "shardwise::elementwise: every array must be a shardwise::ShardedTensor (a vector, matrix or "
                "tensor of the library); wrap an Eigen object with ShardedTensor<...>::distribute first");
  static_assert((std::is_same_v<typename Rest::mesh_type, typename X::mesh_type> && ...),
                "shardwise::elementwise: the arrays must live on the same Mesh type");
  static_assert((std::is_same_v<typename Rest::sharding, typename X::sharding> && ...),
                "shardwise::elementwise: the arrays must have the same sharding, since each rank works on its own "
                "block; reshard one first, e.g. sw::reshard<typename decltype(x)::sharding>(y)");
  static_assert(!X::sharding::is_partial,
                "shardwise::elementwise: the arrays are Partial (pending sums), and a function of the parts is not "
                "the function of the sum; call reduce() on them first");
}

}  // namespace detail

/// z(i, ...) = f(x(i, ...), y(i, ...), ...) into an existing array z of the same sharding and
/// extents (which may be one of the arguments: each element is read before it is written), for
/// arrays of any rank and scalar types: each rank on its own block, no communication, no allocation.
template <typename Result, typename F, typename Scalar, MeshType M, typename Sh, typename... Rest>
void elementwise_into(ShardedTensor<Result, M, Sh>& z, F&& f, const ShardedTensor<Scalar, M, Sh>& x,
                      const Rest&... rest) {
  detail::check_elementwise_operands<ShardedTensor<Scalar, M, Sh>, Rest...>();
  z.check_valid("shardwise::elementwise", "the result");
  x.check_valid("shardwise::elementwise", "the first array");
  (rest.check_valid("shardwise::elementwise", "an array"), ...);
  // Extents are agreed across ranks when an array is made, so this check fails on every rank alike.
  if (z.extents() != x.extents() || ((rest.extents() != x.extents()) || ...))
    detail::fail({"shardwise::elementwise: the arrays have different extents (the first is ",
                  detail::extents_text(x.extents()), ", the result ", detail::extents_text(z.extents()), ")"});
  Result* out = z.local().data();
  const Scalar* first = x.local().data();
  for (Eigen::Index i = 0; i < z.local().size(); ++i) out[i] = static_cast<Result>(f(first[i], rest.local().data()[i]...));
}

/// The same into a new array, whose scalar type is f's result type.
template <typename F, typename Scalar, MeshType M, typename Sh, typename... Rest>
auto elementwise(F&& f, const ShardedTensor<Scalar, M, Sh>& x, const Rest&... rest) {
  detail::check_elementwise_operands<ShardedTensor<Scalar, M, Sh>, Rest...>();
  using Result = std::remove_cvref_t<std::invoke_result_t<F&, Scalar, typename Rest::scalar_type...>>;
  static_assert(detail::is_array_scalar_v<Result>,
                "shardwise::elementwise: the function must return float, double or a std::complex of one");
  ShardedTensor<Result, M, Sh> z(x.groups(), x.extents(), detail::uninitialized);
  elementwise_into(z, f, x, rest...);
  return z;
}

/// The 2-norm of a vector, the same on every rank. Scaled against overflow and underflow: each
/// rank's block is divided by the largest magnitude over the vector before it is squared, as
/// LAPACK's nrm2 does. Collective: norm_plan's schedule, an AllReduce (max) of one real over the
/// axes that split x, then dot_plan's on the scaled vector.
template <typename Scalar, MeshType M, typename Sh>
auto norm(const ShardedTensor<Scalar, M, Sh>& x) {
  static_assert(detail::is_vector_sharding_v<Sh>, "shardwise::norm: x must be a vector (rank-1 ShardedTensor)");
  static_assert(!Sh::is_partial, "shardwise::norm: x is Partial (a pending sum); call reduce() on it first");
  using Real = decltype(std::abs(Scalar{}));
  x.check_valid("shardwise::norm", "x");
  const Scalar* data = x.local().data();
  const auto n = x.local().size();
  Real largest = 0;
  for (Eigen::Index i = 0; i < n; ++i) largest = std::max(largest, static_cast<Real>(std::abs(data[i])));
  constexpr detail::axis_list split = norm_plan<M, Sh>::split_axes;
  if (!split.empty()) x.groups().state("shardwise::norm").group_along(split).all_reduce(std::span<Real>(&largest, 1), ReduceOp::max);
  if (largest == Real(0) || !std::isfinite(largest)) return largest;
  ShardedTensor<Scalar, M, Sh> scaled(x.groups(), x.extents(), detail::uninitialized);
  Scalar* to = scaled.local().data();
  for (Eigen::Index i = 0; i < n; ++i) to[i] = data[i] / largest;
  return largest * std::sqrt(std::abs(dot(scaled, scaled)));
}

}  // namespace shardwise
