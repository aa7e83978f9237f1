// shardwise/nn/ffn_policy.hpp: which FeedForward kernel runs, and what it communicates.
//
// A FeedForward is Y = ReLU(X W1 + b1) W2 + b2 with activations X[b, s, m], Y[b, s, m]
// (batch, sequence, model) and weights W1[m, h], W2[h, m]. From the mesh and the
// shardings of X, W1, W2 and Y the compiler picks one of four policies (anything else is
// one static_assert naming them):
//
//   policy      X          W1       W2       Y    forward                        backward
//   Unsharded   [-, -, -]  [-, -]   [-, -]   = X  local                          local
//   GSPMD       [a, -, b]  [a, b]   [b, a]   = X  AG X(m)/b, AG W1(m)/a,          AG dY(m)/b, RS dW2(m)/a,
//                                                 AG W2(m)/a, RS Y(m)/b           RS dW1(m)/a, RS dX(m)/b,
//                                                                                 AR db1/a, AR db2/a
//   MegatronTP  [-, -, -]  [-, t]   [t, -]   = X  AR Y/t                         AR dX/t
//   MegatronSP  [-, t, -]  [-, t]   [t, -]   = X  AG X(s)/t, RS Y(s)/t           AG dY(s)/t, RS dX(s)/t
//
// (AG = AllGather along the named dimension, RS = ReduceScatter, AR = AllReduce, over the
// named axes; a, b, t are non-empty lists of mesh axes.) GSPMD is the seed's policy on a
// 2-D mesh as DESIGN.md gives it; MegatronTP is Megatron-LM's column- then row-parallel
// MLP; MegatronSP its sequence-parallel form.
//
// The forward schedule is written per policy as data (a short constexpr list of steps);
// the backward schedule is DERIVED from it by the conjugation rules below, so the kernels
// (nn/feed_forward.hpp), the cost model and describe() all read the same two lists:
//   - AllGather T along d over G  ->  ReduceScatter dT along d over G (and vice versa);
//   - the AllReduce of Y (Megatron's "g") -> nothing on dY; its partner, the implicit copy
//     of a replicated X into every tensor-parallel rank ("f"), -> AllReduce of dX;
//   - a parameter gradient is a sum over the tokens this rank holds, so it is pending over
//     the axes that split the tokens; the ReduceScatters conjugate to the weight gathers
//     consume those axes, the rest (the biases' gradients in GSPMD) is AllReduced.
// A layer gives complete gradients: summed over every axis its shardings name. Along the
// axes they do NOT name, each group of ranks runs an independent FeedForward (that is how
// data and pipeline parallelism wrap it; their reductions are the caller's).
//
// Pure compile-time: no MPI, no Eigen.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "shardwise/detail/partition.hpp"
#include "shardwise/detail/static_vector.hpp"
#include "shardwise/detail/text.hpp"
#include "shardwise/detail/traffic.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/policy.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

/// The four FeedForward sharding policies (see the table at the top of this file).
namespace ffn_policy {
/// Every tensor whole on every rank: local math only.
struct Unsharded { static constexpr std::string_view name = "Unsharded"; };
/// The seed's policy on a 2-D mesh: X=[a,-,b], W1=[a,b], W2=[b,a], Y=[a,-,b].
struct GSPMD { static constexpr std::string_view name = "GSPMD"; };
/// Megatron tensor parallel: W1 split by columns, W2 by rows; one AllReduce each way.
struct MegatronTP { static constexpr std::string_view name = "MegatronTP"; };
/// Megatron sequence parallel: X and Y split along s; AllGather in, ReduceScatter out.
struct MegatronSP { static constexpr std::string_view name = "MegatronSP"; };
}  // namespace ffn_policy

/// Global shape of one FeedForward: X[b, s, m] -> H[b, s, h] -> Y[b, s, m].
struct FfnShape {
  std::int64_t b = 0, s = 0, m = 0, h = 0;
  friend constexpr bool operator==(const FfnShape&, const FfnShape&) = default;
};

/// The tensors a FeedForward schedule communicates. X, Y, dY, dX are activations
/// (dimensions b, s, m); W1, dW1 are [m, h]; W2, dW2 are [h, m]; db1 is [h]; db2 is [m].
enum class FfnTensor : unsigned char { X, W1, W2, Y, dY, db2, dW2, db1, dW1, dX };

/// The collectives a FeedForward uses.
enum class FfnCollective : unsigned char { all_gather, reduce_scatter, all_reduce };

/// One collective of a FeedForward schedule: `kind` on `tensor` along its dimension `dim`
/// (-1 for an AllReduce) over the mesh axes `axes` (major first). `before` is the
/// tensor's sharding just before the step, one axis list per dimension (unused trailing
/// dimensions empty): an AllGather's dimension is split over exactly `axes` there, a
/// ReduceScatter's is whole. Kernel and cost model size every block from it.
struct FfnStep {
  FfnCollective kind{};
  FfnTensor tensor{};
  int dim = -1;
  detail::axis_list axes{};
  std::array<detail::axis_list, 3> before{};
  friend constexpr bool operator==(const FfnStep&, const FfnStep&) = default;
};

/// The collectives of one pass, in the order the kernel runs them.
using FfnSchedule = detail::static_vector<FfnStep, 8>;

/// Bytes, messages and calls one rank spends on one kind of collective.
struct FfnKindTraffic {
  Traffic traffic;
  std::int64_t calls = 0;
  friend constexpr bool operator==(const FfnKindTraffic&, const FfnKindTraffic&) = default;
};

/// What one rank sends in one pass, by kind of collective (the CountingCommunicator's view).
struct FfnTraffic {
  FfnKindTraffic all_gather, reduce_scatter, all_reduce;

  [[nodiscard]] constexpr Traffic total() const noexcept {
    return all_gather.traffic + reduce_scatter.traffic + all_reduce.traffic;
  }
  constexpr FfnTraffic& operator+=(const FfnTraffic& o) noexcept {
    auto add = [](FfnKindTraffic& mine, const FfnKindTraffic& theirs) {
      mine.traffic += theirs.traffic;
      mine.calls += theirs.calls;
    };
    add(all_gather, o.all_gather);
    add(reduce_scatter, o.reduce_scatter);
    add(all_reduce, o.all_reduce);
    return *this;
  }
  friend constexpr FfnTraffic operator+(FfnTraffic a, const FfnTraffic& b) noexcept { return a += b; }
  friend constexpr bool operator==(const FfnTraffic&, const FfnTraffic&) = default;
};

namespace detail {

enum class FfnKind { unsharded, gspmd, megatron_tp, megatron_sp, unsupported };

/// Global extents of a schedule tensor, padded to three dimensions with 1.
constexpr std::array<std::int64_t, 3> ffn_extents(FfnTensor t, const FfnShape& s) {
  switch (t) {
    case FfnTensor::X: case FfnTensor::Y: case FfnTensor::dY: case FfnTensor::dX: return {s.b, s.s, s.m};
    case FfnTensor::W1: case FfnTensor::dW1: return {s.m, s.h, 1};
    case FfnTensor::W2: case FfnTensor::dW2: return {s.h, s.m, 1};
    case FfnTensor::db1: return {s.h, 1, 1};
    case FfnTensor::db2: return {s.m, 1, 1};
  }
  return {0, 0, 0};
}

/// Elements of `step`'s tensor that group rank `g` (of the group over step.axes) contributes
/// (AllGather) or receives (ReduceScatter); for an AllReduce, the elements reduced.
template <MeshType M>
constexpr std::int64_t ffn_block_elements(const FfnStep& step, const FfnShape& shape, const block_geometry<M>& geo,
                                          int g) {
  const auto global = ffn_extents(step.tensor, shape);
  std::int64_t elements = 1;
  for (std::size_t d = 0; d < 3; ++d) {
    if (static_cast<int>(d) != step.dim) {
      elements *= geo.extent(global[d], step.before[d]);
    } else {
      // AllGather: the dimension is split over kept ++ axes; ReduceScatter: over kept.
      const axis_list kept = step.kind == FfnCollective::all_gather
                                 ? without(step.before[d], step.axes)
                                 : step.before[d];
      elements *= geo.gathered_block(global[d], kept, step.axes, g);
    }
  }
  return elements;
}

/// The traffic of one step for the rank at geo.coordinate (ring convention, detail/traffic.hpp).
template <MeshType M>
constexpr Traffic ffn_step_traffic(const FfnStep& step, const FfnShape& shape, const block_geometry<M>& geo,
                                   std::int64_t scalar_bytes) {
  const int size = geo.group_size(step.axes), rank = geo.group_rank(step.axes);
  if (step.kind == FfnCollective::all_reduce)
    return ring_all_reduce_traffic(ffn_block_elements(step, shape, geo, 0), size, rank, scalar_bytes);
  std::int64_t total = 0;
  for (int g = 0; g < size; ++g) total += ffn_block_elements(step, shape, geo, g);
  if (step.kind == FfnCollective::all_gather)
    return ring_all_gather_traffic(total, ffn_block_elements(step, shape, geo, (rank + 1) % size), size, scalar_bytes);
  return ring_reduce_scatter_traffic(total, ffn_block_elements(step, shape, geo, rank), size, scalar_bytes);
}

/// Traffic of a whole schedule, by kind; `skip_dx` leaves out the steps on dX (the first
/// layer of a model needs no input gradient).
template <MeshType M>
constexpr FfnTraffic ffn_schedule_traffic(const FfnSchedule& steps, const FfnShape& shape, const M& mesh,
                                          const typename M::coordinate_type& coordinate, std::int64_t scalar_bytes,
                                          bool skip_dx) {
  const block_geometry<M> geo{mesh, coordinate};
  FfnTraffic total;
  for (const FfnStep& step : steps) {
    if (skip_dx && step.tensor == FfnTensor::dX) continue;
    FfnKindTraffic& kind = step.kind == FfnCollective::all_gather       ? total.all_gather
                           : step.kind == FfnCollective::reduce_scatter ? total.reduce_scatter
                                                                        : total.all_reduce;
    kind.traffic += ffn_step_traffic(step, shape, geo, scalar_bytes);
    kind.calls += 1;
  }
  return total;
}

/// Everything the plan decides, as one constexpr value.
struct ffn_plan_data {
  FfnKind kind = FfnKind::unsupported;
  FfnSchedule forward;
  FfnSchedule backward;
  bool derivable = true;  // the conjugation rules found a reduction for every pending sum
  /// Sharding of each dimension of X, W1, W2, Y (as given) and of the biases b1[h], b2[m].
  std::array<axis_list, 3> x{}, w1{}, w2{}, y{};
  axis_list b1{}, b2{};
};

constexpr std::array<axis_list, 3> pad3(const axis_list& d0, const axis_list& d1 = {}, const axis_list& d2 = {}) {
  return {d0, d1, d2};
}

/// The forward schedule of a recognized policy.
constexpr FfnSchedule ffn_forward(FfnKind kind, const ffn_plan_data& p) {
  FfnSchedule steps;
  switch (kind) {
    case FfnKind::gspmd: {
      const axis_list &a = p.x[0], &b = p.x[2];
      steps.push_back({FfnCollective::all_gather, FfnTensor::X, 2, b, p.x});
      steps.push_back({FfnCollective::all_gather, FfnTensor::W1, 0, a, pad3(p.w1[0], p.w1[1])});
      steps.push_back({FfnCollective::all_gather, FfnTensor::W2, 1, a, pad3(p.w2[0], p.w2[1])});
      steps.push_back({FfnCollective::reduce_scatter, FfnTensor::Y, 2, b, pad3(a, {}, {})});
      break;
    }
    case FfnKind::megatron_tp:
      steps.push_back({FfnCollective::all_reduce, FfnTensor::Y, -1, p.w1[1], pad3({}, {}, {})});
      break;
    case FfnKind::megatron_sp: {
      const axis_list& t = p.x[1];
      steps.push_back({FfnCollective::all_gather, FfnTensor::X, 1, t, p.x});
      steps.push_back({FfnCollective::reduce_scatter, FfnTensor::Y, 1, t, pad3({}, {}, {})});
      break;
    }
    case FfnKind::unsharded:
    case FfnKind::unsupported:
      break;
  }
  return steps;
}

/// The state of a tensor after the forward's AllGathers of it.
constexpr std::array<axis_list, 3> after_gathers(const FfnSchedule& forward, FfnTensor tensor,
                                                 std::array<axis_list, 3> state) {
  for (const FfnStep& s : forward)
    if (s.tensor == tensor && s.kind == FfnCollective::all_gather)
      state[static_cast<std::size_t>(s.dim)] = without(state[static_cast<std::size_t>(s.dim)], s.axes);
  return state;
}

/// The backward schedule, derived from the forward one by conjugation (top of this file).
constexpr FfnSchedule ffn_backward(ffn_plan_data& p) {
  FfnSchedule steps;
  const FfnSchedule& fwd = p.forward;
  const auto xg = after_gathers(fwd, FfnTensor::X, p.x);            // X as the GEMMs see it
  const auto w1g = after_gathers(fwd, FfnTensor::W1, pad3(p.w1[0], p.w1[1]));
  const auto w2g = after_gathers(fwd, FfnTensor::W2, pad3(p.w2[0], p.w2[1]));
  const axis_list x_tokens = concat(xg[0], xg[1]);  // axes splitting the tokens of X, H and dH

  // dY: the conjugate of Y's ReduceScatter is an AllGather; of its AllReduce, nothing.
  std::array<axis_list, 3> dyg = p.y;
  for (const FfnStep& s : fwd)
    if (s.tensor == FfnTensor::Y && s.kind == FfnCollective::reduce_scatter) {
      steps.push_back({FfnCollective::all_gather, FfnTensor::dY, s.dim, s.axes, p.y});
      dyg[static_cast<std::size_t>(s.dim)] = without(dyg[static_cast<std::size_t>(s.dim)], s.axes);
    }
  // db2 = column sums of dYg (this rank's b2 columns): pending over dYg's token axes.
  const axis_list dy_tokens = concat(dyg[0], dyg[1]);
  if (!dy_tokens.empty()) steps.push_back({FfnCollective::all_reduce, FfnTensor::db2, -1, dy_tokens, pad3(p.b2)});

  // A weight gradient is pending over x_tokens: ReduceScatter where the forward gathered the
  // weight (those axes must be pending), AllReduce over what is left.
  auto weight_gradient = [&](FfnTensor weight, FfnTensor gradient, const std::array<axis_list, 3>& gathered) {
    axis_list left = x_tokens;
    std::array<axis_list, 3> state = gathered;
    for (const FfnStep& s : fwd)
      if (s.tensor == weight && s.kind == FfnCollective::all_gather) {
        if (!is_subset(s.axes, left)) p.derivable = false;
        steps.push_back({FfnCollective::reduce_scatter, gradient, s.dim, s.axes, state});
        state[static_cast<std::size_t>(s.dim)] = concat(state[static_cast<std::size_t>(s.dim)], s.axes);
        left = without(left, s.axes);
      }
    if (!left.empty()) steps.push_back({FfnCollective::all_reduce, gradient, -1, left, state});
  };
  weight_gradient(FfnTensor::W2, FfnTensor::dW2, w2g);
  if (!x_tokens.empty()) steps.push_back({FfnCollective::all_reduce, FfnTensor::db1, -1, x_tokens, pad3(w1g[1])});
  weight_gradient(FfnTensor::W1, FfnTensor::dW1, w1g);

  // dX = dH W1g^T is pending over W1g's h axes: ReduceScatter where the forward gathered X
  // (the conjugate of that AllGather), AllReduce over the rest (the conjugate of the copy).
  axis_list left = w1g[1];
  std::array<axis_list, 3> state = xg;
  for (const FfnStep& s : fwd)
    if (s.tensor == FfnTensor::X && s.kind == FfnCollective::all_gather) {
      if (!is_subset(s.axes, left)) p.derivable = false;
      steps.push_back({FfnCollective::reduce_scatter, FfnTensor::dX, s.dim, s.axes, state});
      state[static_cast<std::size_t>(s.dim)] = concat(state[static_cast<std::size_t>(s.dim)], s.axes);
      left = without(left, s.axes);
    }
  if (!left.empty()) steps.push_back({FfnCollective::all_reduce, FfnTensor::dX, -1, left, state});
  if (!(state == p.x)) p.derivable = false;  // dX must come out sharded like X
  return steps;
}

constexpr FfnKind ffn_classify(const ffn_plan_data& p) {
  const auto &x = p.x, &y = p.y;
  if (!(x == y)) return FfnKind::unsupported;
  const bool weights_whole = p.w1[0].empty() && p.w1[1].empty() && p.w2[0].empty() && p.w2[1].empty();
  if (x[0].empty() && x[1].empty() && x[2].empty() && weights_whole) return FfnKind::unsharded;
  // GSPMD: X=[a,-,b], W1=[a,b], W2=[b,a].
  if (!x[0].empty() && x[1].empty() && !x[2].empty() && p.w1[0] == x[0] && p.w1[1] == x[2] && p.w2[0] == x[2] &&
      p.w2[1] == x[0])
    return FfnKind::gspmd;
  // Megatron: W1=[-,t], W2=[t,-]; X=[-,-,-] (TP) or X=[-,t,-] (SP).
  const axis_list& t = p.w1[1];
  if (!t.empty() && p.w1[0].empty() && p.w2[0] == t && p.w2[1].empty() && x[0].empty() && x[2].empty()) {
    if (x[1].empty()) return FfnKind::megatron_tp;
    if (x[1] == t) return FfnKind::megatron_sp;
  }
  return FfnKind::unsupported;
}

template <FfnKind K> struct ffn_policy_type { using type = ffn_policy::Unsharded; };
template <> struct ffn_policy_type<FfnKind::gspmd> { using type = ffn_policy::GSPMD; };
template <> struct ffn_policy_type<FfnKind::megatron_tp> { using type = ffn_policy::MegatronTP; };
template <> struct ffn_policy_type<FfnKind::megatron_sp> { using type = ffn_policy::MegatronSP; };

/// Which checks the shardings pass, in order, so that only the first failure is reported.
enum class FfnShardingError { none, activation_rank, weight_rank, partial };

template <typename ShX, typename ShW1, typename ShW2, typename ShY>
constexpr FfnShardingError ffn_sharding_error() {
  if (ShX::rank != 3 || ShY::rank != 3) return FfnShardingError::activation_rank;
  if (ShW1::rank != 2 || ShW2::rank != 2) return FfnShardingError::weight_rank;
  if (ShX::is_partial || ShW1::is_partial || ShW2::is_partial || ShY::is_partial) return FfnShardingError::partial;
  return FfnShardingError::none;
}

// ---- describe() -------------------------------------------------------------------

constexpr std::string_view ffn_tensor_text(FfnTensor t) {
  switch (t) {
    case FfnTensor::X: return "X";
    case FfnTensor::W1: return "W1";
    case FfnTensor::W2: return "W2";
    case FfnTensor::Y: return "Y";
    case FfnTensor::dY: return "dY";
    case FfnTensor::db2: return "db2";
    case FfnTensor::dW2: return "dW2";
    case FfnTensor::db1: return "db1";
    case FfnTensor::dW1: return "dW1";
    case FfnTensor::dX: return "dX";
  }
  return "?";
}

constexpr std::string_view ffn_dim_text(FfnTensor t, int dim) {
  switch (t) {
    case FfnTensor::W1: case FfnTensor::dW1: return dim == 0 ? "m" : "h";
    case FfnTensor::W2: case FfnTensor::dW2: return dim == 0 ? "h" : "m";
    case FfnTensor::db1: return "h";
    case FfnTensor::db2: return "m";
    default: return dim == 0 ? "b" : dim == 1 ? "s" : "m";
  }
}

/// Dimension I of Sh, or Replicated when the shardings failed a check (only the message
/// that names the problem is then reported).
template <bool Valid, typename Sh, std::size_t I>
struct dim_or_replicated { using type = Replicated; };
template <typename Sh, std::size_t I>
struct dim_or_replicated<true, Sh, I> { using type = typename Sh::template dim<I>; };

template <MeshType M>
std::string describe_ffn_schedule(const FfnSchedule& steps) {
  if (steps.empty()) return "local";
  std::string text;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const FfnStep& s = steps[i];
    if (i) text.append(", ");
    const std::string axes = axes_text_of<M>(s.axes);
    const std::string_view tensor = ffn_tensor_text(s.tensor);
    switch (s.kind) {
      case FfnCollective::all_gather:
        text.append(cat("AllGather ", tensor, " along ", ffn_dim_text(s.tensor, s.dim), " over ", axes));
        break;
      case FfnCollective::reduce_scatter:
        text.append(cat("ReduceScatter ", tensor, " along ", ffn_dim_text(s.tensor, s.dim), " over ", axes));
        break;
      case FfnCollective::all_reduce:
        text.append(cat("AllReduce ", tensor, " over ", axes));
        break;
    }
  }
  return text;
}

}  // namespace detail

/// Everything the compiler decides about a FeedForward on mesh M with X, W1, W2, Y sharded
/// as given: the policy, the forward and backward schedules, the shardings of the biases,
/// the cost model (bytes and messages per rank, ring convention of detail/traffic.hpp) and
/// describe(). An unsupported combination is one static_assert naming the supported ones.
template <MeshType M, TensorShardingType ShX, TensorShardingType ShW1, TensorShardingType ShW2,
          TensorShardingType ShY = ShX>
struct feed_forward_plan {
 private:
  static constexpr detail::FfnShardingError sharding_error = detail::ffn_sharding_error<ShX, ShW1, ShW2, ShY>();
  static_assert(sharding_error != detail::FfnShardingError::activation_rank,
                "shardwise::FeedForward: X and Y are activations X[b, s, m] (batch, sequence, model); their "
                "TensorSharding needs three dimensions, e.g. TensorSharding<Replicated, Replicated, Replicated>");
  static_assert(sharding_error != detail::FfnShardingError::weight_rank,
                "shardwise::FeedForward: W1[m, h] and W2[h, m] are matrices; their TensorSharding needs two "
                "dimensions, e.g. TensorSharding<Replicated, Split<\"tp\">>");
  static_assert(sharding_error != detail::FfnShardingError::partial,
                "shardwise::FeedForward: no tensor of a FeedForward can be Partial; reduce it first");

  static constexpr bool names_valid = [] {
    if constexpr (sharding_error == detail::FfnShardingError::none)
      return detail::checked_sharding<M, ShX, 3>::value && detail::checked_sharding<M, ShW1, 2>::value &&
             detail::checked_sharding<M, ShW2, 2>::value && detail::checked_sharding<M, ShY, 3>::value;
    else
      return false;
  }();

  static constexpr detail::ffn_plan_data data = [] {
    detail::ffn_plan_data p;
    if constexpr (names_valid) {
      const auto x = detail::resolve_sharding<M, ShX>();
      const auto w1 = detail::resolve_sharding<M, ShW1>();
      const auto w2 = detail::resolve_sharding<M, ShW2>();
      const auto y = detail::resolve_sharding<M, ShY>();
      p.x = x.dims;
      p.y = y.dims;
      p.w1 = detail::pad3(w1.dims[0], w1.dims[1]);
      p.w2 = detail::pad3(w2.dims[0], w2.dims[1]);
      p.b1 = w1.dims[1];
      p.b2 = y.dims[2];
      p.kind = detail::ffn_classify(p);
      p.forward = detail::ffn_forward(p.kind, p);
      p.backward = detail::ffn_backward(p);
    }
    return p;
  }();

  static_assert(!names_valid || data.kind != detail::FfnKind::unsupported,
                "shardwise::FeedForward: unsupported combination of shardings. The supported policies are "
                "Unsharded (X=[-,-,-], W1=[-,-], W2=[-,-]), "
                "GSPMD (X=[a,-,b], W1=[a,b], W2=[b,a]), "
                "MegatronTP (X=[-,-,-], W1=[-,t], W2=[t,-]) and "
                "MegatronSP (X=[-,t,-], W1=[-,t], W2=[t,-]), each with Y sharded like X; "
                "a, b, t are Split<...> axes (a and b different), '-' is Replicated");
  static_assert(data.derivable, "shardwise::FeedForward: internal error: the backward schedule is not derivable");

 public:
  /// ffn_policy::Unsharded, GSPMD, MegatronTP or MegatronSP.
  using policy = typename detail::ffn_policy_type<data.kind>::type;
  using x_sharding = ShX;
  using y_sharding = ShY;
  using w1_sharding = ShW1;
  using w2_sharding = ShW2;
  /// b1[h] is split like W1's columns and b2[m] like Y's model dimension; as 1 x n matrices.
  using b1_sharding = TensorSharding<Replicated, typename detail::dim_or_replicated<names_valid, ShW1, 1>::type>;
  using b2_sharding = TensorSharding<Replicated, typename detail::dim_or_replicated<names_valid, ShY, 2>::type>;

  /// The collectives of the forward and of the backward pass, in the order they run.
  static constexpr FfnSchedule forward_schedule = data.forward;
  static constexpr FfnSchedule backward_schedule = data.backward;

  /// Whether `schedule` has a step of kind `kind` on `tensor`.
  static constexpr bool has(const FfnSchedule& schedule, FfnTensor tensor, FfnCollective kind) {
    for (const FfnStep& s : schedule)
      if (s.tensor == tensor && s.kind == kind) return true;
    return false;
  }
  /// That step (check has() first; a default FfnStep when there is none).
  static constexpr FfnStep find(const FfnSchedule& schedule, FfnTensor tensor, FfnCollective kind) {
    for (const FfnStep& s : schedule)
      if (s.tensor == tensor && s.kind == kind) return s;
    return {};
  }

  /// Sharding of each dimension of X and of X as the GEMMs see it (after its AllGathers).
  static constexpr std::array<detail::axis_list, 3> x_axes = data.x;
  static constexpr std::array<detail::axis_list, 3> y_axes = data.y;
  static constexpr std::array<detail::axis_list, 3> xg_axes = detail::after_gathers(data.forward, FfnTensor::X, data.x);
  static constexpr std::array<detail::axis_list, 3> w1g_axes =
      detail::after_gathers(data.forward, FfnTensor::W1, data.w1);
  static constexpr std::array<detail::axis_list, 3> w2g_axes =
      detail::after_gathers(data.forward, FfnTensor::W2, data.w2);
  static constexpr std::array<detail::axis_list, 3> dyg_axes = [] {
    std::array<detail::axis_list, 3> s = data.y;
    for (const FfnStep& step : data.backward)
      if (step.tensor == FfnTensor::dY) s[static_cast<std::size_t>(step.dim)] = detail::without(s[static_cast<std::size_t>(step.dim)], step.axes);
    return s;
  }();
  static constexpr detail::axis_list b1_axes = data.b1;
  static constexpr detail::axis_list b2_axes = data.b2;

  /// Bytes, messages and calls the rank at `coordinate` spends in the forward pass.
  static constexpr FfnTraffic forward_traffic(const M& mesh, const typename M::coordinate_type& coordinate,
                                              const FfnShape& shape, std::int64_t scalar_bytes) {
    return detail::ffn_schedule_traffic(forward_schedule, shape, mesh, coordinate, scalar_bytes, false);
  }
  /// ... in the backward pass; without the steps on dX when `input_gradient` is false.
  static constexpr FfnTraffic backward_traffic(const M& mesh, const typename M::coordinate_type& coordinate,
                                               const FfnShape& shape, std::int64_t scalar_bytes,
                                               bool input_gradient = true) {
    return detail::ffn_schedule_traffic(backward_schedule, shape, mesh, coordinate, scalar_bytes, !input_gradient);
  }

  /// "MegatronTP: forward [AllReduce Y over tp]; backward [AllReduce dX over tp]".
  static std::string describe() {
    return detail::cat(policy::name, ": forward [", detail::describe_ffn_schedule<M>(forward_schedule),
                       "]; backward [", detail::describe_ffn_schedule<M>(backward_schedule), "]");
  }
};

/// The policy the compiler picks for a FeedForward with these shardings.
template <MeshType M, TensorShardingType ShX, TensorShardingType ShW1, TensorShardingType ShW2,
          TensorShardingType ShY = ShX>
using ffn_policy_t = typename feed_forward_plan<M, ShX, ShW1, ShW2, ShY>::policy;

}  // namespace shardwise
