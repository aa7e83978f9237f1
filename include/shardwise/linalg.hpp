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
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "shardwise/comm/consistency.hpp"
#include "shardwise/comm/types.hpp"
#include "shardwise/detail/type_fingerprint.hpp"
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

/// The plan of norm(x) for a vector sharded as Sh: an AllReduce (max) of two reals over the axes
/// that split x (the scale, and whether an element is NaN), then dot_plan's schedule on the
/// scaled vector.
template <MeshType M, typename Sh>
struct norm_plan {
  /// The dot product of the scaled vector with itself.
  using dot = dot_plan<M, Sh, Sh>;
  /// The mesh axes that split x: the scale's AllReduce runs over them.
  static constexpr detail::axis_list split_axes = detail::resolve_sharding<M, Sh>().dims[0];

  /// "AllReduce (max) of the scale and a NaN flag over x, then <dot_plan's description>".
  static std::string describe() {
    return (split_axes.empty() ? std::string()
                               : "AllReduce (max) of the scale and a NaN flag over " +
                                     detail::axes_text_of(split_axes, M::names) +
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
    return detail::ring_all_reduce_traffic(2, geo.group_size(split_axes), geo.group_rank(split_axes), real_bytes) +
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

/// The names of the values the ranks agree on in an operation on vectors x and y.
inline constexpr auto vector_agreed_names = join_names(fixed_string("length of x|length of y"), call_types_name);

/// The one agreement of an operation on vectors x and y (and nothing else: axpy): both usable,
/// on one ProcessGroupMesh, each of one length on every rank, the call of one type; then the
/// lengths must be equal. Every rank throws the same error, or none does.
template <typename Call, typename X, typename Y>
void agree_on_vectors(const char* operation, const X& x, const Y& y) {
  const OperandFacts facts[] = {x.facts("x"), y.facts("y")};
  const std::int64_t values[] = {x.extent(0), y.extent(0), type_fingerprint<Call, X, Y>};
  agree_on_operands(facts, values, {}, operation, "the lengths and types of x and y", vector_agreed_names.view(),
                    constructed_locally);
  if (x.extent(0) != y.extent(0)) fail({operation, ": x has ", x.extent(0), " elements but y has ", y.extent(0)});
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
  // One agreement (einsum's) checks both vectors on every rank, so a mistake on one rank is
  // every rank's error.
  constexpr const char* operation = "shardwise::dot";
  constexpr std::string_view names = detail::vector_agreed_names.view();
  if constexpr (detail::is_complex_v<Scalar>) {
    ShardedTensor<Scalar, M, ShX> conjugated(x.groups(), x.extents(), detail::uninitialized);
    const Scalar* from = x.local().data();
    Scalar* to = conjugated.local().data();
    if (x.valid())  // a moved-from x holds no block to read
      for (Eigen::Index i = 0; i < conjugated.local().size(); ++i) to[i] = std::conj(from[i]);
    const ShardedTensor<Scalar, M, ShX>& operand = x.valid() ? conjugated : x;  // an unusable x is reported
    return detail::run_einsum<"i,i->", TensorSharding<>, variant::Standard>(operation, operand, y, names, "x", "y",
                                                                                 "the lengths of x and y")
        .local()();
  } else {
    return detail::run_einsum<"i,i->", TensorSharding<>, variant::Standard>(operation, x, y, names, "x", "y",
                                                                                 "the lengths of x and y")
        .local()();
  }
}

/// x and y of different scalar types or meshes: the static_assert that says so, at the call.
template <typename X, typename Y>
  requires(detail::is_distributed_array_v<X> && detail::is_distributed_array_v<Y> &&
           (!std::is_same_v<typename X::scalar_type, typename Y::scalar_type> ||
            !std::is_same_v<typename X::mesh_type, typename Y::mesh_type>))
auto dot(const X&, const Y&) {
  static_assert(std::is_same_v<typename X::scalar_type, typename Y::scalar_type>,
                "shardwise::dot: x and y have different scalar types (e.g. double and float); convert one, e.g. "
                "sw::elementwise([](float v) { return double(v); }, y)");
  static_assert(std::is_same_v<typename X::mesh_type, typename Y::mesh_type>,
                "shardwise::dot: x and y are sharded over different Mesh types; build both on the same "
                "ProcessGroupMesh<Mesh<...>>");
  return typename X::scalar_type{};
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

/// y += alpha x, each rank on its own block: no data moves, so x and y must be sharded alike
/// (checked at compile time). Collective all the same: the ranks agree that x and y are usable
/// and of one length everywhere (one small all-reduce; none at CheckLevel::local), so that a
/// mistake on one rank is every rank's error.
template <typename Scalar, MeshType M, typename ShX, typename ShY>
void axpy(std::type_identity_t<Scalar> alpha, const ShardedTensor<Scalar, M, ShX>& x, ShardedTensor<Scalar, M, ShY>& y) {
  static_assert(std::is_same_v<ShX, ShY>,
                "shardwise::axpy: x and y must have the same sharding, since each rank adds its own block; "
                "reshard one first, e.g. sw::axpy(alpha, sw::reshard<decltype(y)::sharding>(x), y)");
  static_assert(detail::is_vector_sharding_v<ShX>, "shardwise::axpy: x and y must be vectors (rank-1 ShardedTensor)");
  detail::agree_on_vectors<Scalar>("shardwise::axpy", x, y);
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

/// The names of the values the ranks agree on in elementwise: the result's extents, the types.
template <std::size_t Rank>
inline constexpr auto elementwise_agreed_names =
    join_names(repeated_name<Rank, "extent # of the result">, call_types_name);

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
  // One agreement: every array usable and on one ProcessGroupMesh, the extents alike on this
  // rank (a local problem) and the result's the same on every rank; else every rank throws.
  const OperandFacts facts[] = {z.facts("the result"), x.facts("the first array"), rest.facts("an array")...};
  LocalProblem problem;
  if (z.extents() != x.extents() || ((rest.extents() != x.extents()) || ...))
    problem.set(detail::message({"the arrays have different extents (the first is ", detail::extents_text(x.extents()),
                                 ", the result ", detail::extents_text(z.extents()), ")"}));
  std::array<std::int64_t, max_tensor_rank + 1> values{};
  for (std::size_t d = 0; d < Sh::rank; ++d) values[d] = z.extent(d);
  values[Sh::rank] = detail::type_fingerprint<Result, F, ShardedTensor<Scalar, M, Sh>, Rest...>;
  agree_on_operands(facts, std::span<const std::int64_t>(values.data(), Sh::rank + 1), std::move(problem),
                    "shardwise::elementwise", "the extents of the result and the types of the call",
                    detail::elementwise_agreed_names<Sh::rank>.view(), detail::constructed_locally);
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

namespace detail {
/// The names of the values the ranks agree on in norm.
inline constexpr auto norm_agreed_names = join_names(fixed_string("length of x"), call_types_name);
}  // namespace detail

/// The 2-norm of a vector, the same on every rank (NaN when an element is NaN; otherwise Inf
/// when one is infinite). Scaled against overflow and underflow: each
/// rank's block is divided by the largest magnitude over the vector before it is squared, as
/// LAPACK's nrm2 does. Collective: norm_plan's schedule, an AllReduce (max) of one real over the
/// axes that split x, then dot_plan's on the scaled vector.
template <typename Scalar, MeshType M, typename Sh>
auto norm(const ShardedTensor<Scalar, M, Sh>& x) {
  static_assert(detail::is_vector_sharding_v<Sh>, "shardwise::norm: x must be a vector (rank-1 ShardedTensor)");
  static_assert(!Sh::is_partial, "shardwise::norm: x is Partial (a pending sum); call reduce() on it first");
  using Real = decltype(std::abs(Scalar{}));
  {
    const OperandFacts facts[] = {x.facts("x")};
    const std::int64_t values[] = {x.extent(0), detail::type_fingerprint<ShardedTensor<Scalar, M, Sh>>};
    agree_on_operands(facts, values, {}, "shardwise::norm", "the length and type of x",
                      detail::norm_agreed_names.view(), detail::constructed_locally);
  }
  const Scalar* data = x.local().data();
  const auto n = x.local().size();
  // The scale and whether any element is NaN (then the norm is NaN, as Eigen's and BLAS's):
  // one all-reduce (max) of both over the axes that split x.
  Real scale[2] = {0, 0};
  for (Eigen::Index i = 0; i < n; ++i) {
    const Real magnitude = std::abs(data[i]);
    if (std::isnan(magnitude)) scale[1] = 1;
    else scale[0] = std::max(scale[0], magnitude);
  }
  constexpr detail::axis_list split = norm_plan<M, Sh>::split_axes;
  if (!split.empty())
    x.groups().state("shardwise::norm").group_along(split).all_reduce(std::span<Real>(scale, 2), ReduceOp::max);
  const Real largest = scale[0];
  if (scale[1] != Real(0)) return std::numeric_limits<Real>::quiet_NaN();
  if (largest == Real(0) || !std::isfinite(largest)) return largest;
  ShardedTensor<Scalar, M, Sh> scaled(x.groups(), x.extents(), detail::uninitialized);
  Scalar* to = scaled.local().data();
  for (Eigen::Index i = 0; i < n; ++i) to[i] = data[i] / largest;
  return largest * std::sqrt(std::abs(dot(scaled, scaled)));
}

}  // namespace shardwise
