// shardwise/nn/ffn_policy.hpp: which FeedForward kernel runs, and what it communicates.
//
// A FeedForward is Y = ReLU(X W1 + b1) W2 + b2 with activations X[b, s, m], Y[b, s, m]
// (batch, sequence, model), weights W1[m, h], W2[h, m] and the hidden H[b, s, h]. From the
// mesh and the shardings of X, W1, W2 and Y the compiler names one of four policies
// (anything else is one static_assert naming them):
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
// named axes; a, b, t are non-empty lists of mesh axes.) GSPMD is the GSPMD-style policy on
// a 2-D mesh (activations split by batch and model, weights by both); MegatronTP is Megatron-LM's column- then row-parallel MLP; MegatronSP its
// sequence-parallel form.
//
// The table is not written down anywhere else: every entry comes out of the one contraction
// planner (plan/contraction.hpp) applied to the layer's six contractions, einsum specs read by
// the einsum reader (plan/einsum_spec.hpp),
//   H   = X  W1    "bsm,mh->bsh"      dH  = dY W2^T   "bsm,hm->bsh"
//   Y   = H  W2    "bsh,hm->bsm"      dW2 = H^T dY    "bsh,bsm->hm"
//   dX  = dH W1^T  "bsh,mh->bsm"      dW1 = X^T dH    "bsm,bsh->mh"
// each with the result sharded as the layer needs it (H: W1's columns, and X's tokens where
// no axis is used twice; gradients: like what they are the gradients of), plus the biases'
// gradients, column sums pending over the axes that split the tokens. The gathers of the
// forward are kept for the backward (GSPMD gathers W1 and W2 once). The kernels
// (nn/feed_forward.hpp), the cost model and describe() read the same plans.
//
// A layer gives complete gradients: summed over every axis its shardings name. Along the
// axes they do NOT name, each group of ranks runs an independent FeedForward (that is how
// data and pipeline parallelism wrap it; their reductions are the caller's).
//
// Pure compile-time: no MPI, no Eigen.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "shardwise/detail/named_fields.hpp"
#include "shardwise/detail/static_vector.hpp"
#include "shardwise/detail/text.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/plan/contraction.hpp"
#include "shardwise/plan/cost.hpp"
#include "shardwise/plan/describe.hpp"
#include "shardwise/plan/einsum_spec.hpp"
#include "shardwise/plan/step.hpp"
#include "shardwise/sharding.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise {

/// The four FeedForward sharding policies (see the table at the top of this file).
namespace ffn_policy {
/// Every tensor whole on every rank: local math only.
struct Unsharded { static constexpr std::string_view name = "Unsharded"; /**< As describe() prints it. */ };
/// GSPMD-style on a 2-D mesh: X=[a,-,b], W1=[a,b], W2=[b,a], Y=[a,-,b].
struct GSPMD { static constexpr std::string_view name = "GSPMD"; /**< As describe() prints it. */ };
/// Megatron tensor parallel: W1 split by columns, W2 by rows; one AllReduce each way.
struct MegatronTP { static constexpr std::string_view name = "MegatronTP"; /**< As describe() prints it. */ };
/// Megatron sequence parallel: X and Y split along s; AllGather in, ReduceScatter out.
struct MegatronSP { static constexpr std::string_view name = "MegatronSP"; /**< As describe() prints it. */ };
}  // namespace ffn_policy

/// Global shape of one FeedForward: X[b, s, m] -> H[b, s, h] -> Y[b, s, m].
struct FfnShape {
  /// Makes a positional initializer a compile error; holds nothing (detail/named_fields.hpp).
  /// (Not [[no_unique_address]]: clang 16 miscompiles a designated initializer of a struct
  /// whose empty first member overlaps the next one; the 8 bytes it costs are nothing.)
  detail::named_fields_only names_required{};
  /// Batch, sequence, model and hidden extents.
  ///@{
  std::int64_t b = 0, s = 0, m = 0, h = 0;
  ///@}
  /// Equal extents.
  friend constexpr bool operator==(const FfnShape&, const FfnShape&) = default;
};

/// The tensors a FeedForward schedule communicates. X, Y, dY, dX are activations
/// (dimensions b, s, m); W1, dW1 are [m, h]; W2, dW2 are [h, m]; db1 is [h]; db2 is [m].
enum class FfnTensor : unsigned char {
  X,    ///< The input activation.
  W1,   ///< The first weight.
  W2,   ///< The second weight.
  Y,    ///< The output activation.
  dY,   ///< The gradient of the output.
  db2,  ///< The gradient of the second bias.
  dW2,  ///< The gradient of W2.
  db1,  ///< The gradient of the first bias.
  dW1,  ///< The gradient of W1.
  dX    ///< The gradient of the input.
};

/// The collectives a FeedForward uses: the kinds of the one step vocabulary.
using FfnCollective = StepKind;

/// One collective of a FeedForward pass, named in the layer's terms: `kind` on `tensor` along
/// its dimension `dim` (-1 for an AllReduce) over the mesh axes `axes` (major first).
struct FfnStep {
  StepKind kind{};           ///< The collective.
  FfnTensor tensor{};        ///< The tensor it moves.
  int dim = -1;              ///< The dimension gathered or scattered; -1 for an AllReduce.
  detail::axis_list axes{};  ///< Mesh axis indices of its group, major first.
  /// Same collective on the same tensor, dimension and axes.
  friend constexpr bool operator==(const FfnStep&, const FfnStep&) = default;
};

/// The collectives of one pass, in the order the kernel runs them.
using FfnSchedule = detail::static_vector<FfnStep, 8>;

/// What one rank sends in one pass, by kind of collective (the CountingCommunicator's view).
using FfnTraffic = CommCounters;

namespace detail {

enum class FfnKind { unsharded, gspmd, megatron_tp, megatron_sp, unsupported };

/// The six contractions of a FeedForward: einsum specs, read by the einsum reader and planned
/// by the same planner as sw::einsum, each with its operands named in the layer's terms.
namespace ffn_contractions {
constexpr contraction_indices indices(std::string_view a, std::string_view b, std::string_view c,
                                      std::string_view spec) {
  const einsum_spec parsed = parse_einsum_spec(spec);
  if (parsed.error != EinsumSpecError::none) throw std::logic_error("shardwise: a FeedForward einsum spec is wrong");
  contraction_indices ix = parsed.indices;
  ix.names.operands = {a, b, c};
  return ix;
}
inline constexpr contraction_indices hidden = indices("X", "W1", "H", "bsm,mh->bsh");
inline constexpr contraction_indices output = indices("H", "W2", "Y", "bsh,hm->bsm");
inline constexpr contraction_indices hidden_gradient = indices("dY", "W2", "dH", "bsm,hm->bsh");
inline constexpr contraction_indices w2_gradient = indices("H", "dY", "dW2", "bsh,bsm->hm");
inline constexpr contraction_indices w1_gradient = indices("X", "dH", "dW1", "bsm,bsh->mh");
inline constexpr contraction_indices input_gradient = indices("dH", "W1", "dX", "bsh,mh->bsm");
}  // namespace ffn_contractions

/// Everything the FeedForward plan decides, as one constexpr value.
struct ffn_plan_data {
  FfnKind kind = FfnKind::unsupported;
  tensor_axes x{}, w1{}, w2{}, y{}, h{};  ///< as given, and H as the layer keeps it
  tensor_axes xg{}, w1g{}, w2g{}, dyg{};  ///< X, W1, W2 and dY as the GEMMs see them (after their gathers)
  // The contractions: the forward two and dH with the gathers of their inputs, the other three
  // on inputs that are already gathered (they gather nothing).
  contraction_plan_data hidden, output, hidden_gradient, w2_gradient, w1_gradient, input_gradient;
  axis_list b1{}, b2{};                  ///< the axes splitting b1[h] and b2[m]
  axis_list h_tokens{}, dy_tokens{};     ///< the axes splitting the tokens of H (db1) and of dY as gathered (db2)
  FfnSchedule forward, backward;
  bool consistent = true;  ///< the invariants the kernel relies on hold (an internal check)
};

constexpr tensor_axes axes_of(std::initializer_list<axis_list> dims) {
  tensor_axes t;
  for (const axis_list& d : dims) t.dims[static_cast<std::size_t>(t.rank++)] = d;
  return t;
}

/// `t` after the AllGathers that `steps` make on `op`.
constexpr tensor_axes after_gathers(const Schedule& steps, Operand op, tensor_axes t) {
  for (const Step& s : steps)
    if (s.kind == StepKind::all_gather && s.operand == op) t.dim(s.dim) = without_tail(t.dim(s.dim), s.axes.size());
  return t;
}

constexpr bool gathers(const Schedule& steps, Operand op) {
  for (const Step& s : steps)
    if (s.kind == StepKind::all_gather && s.operand == op) return true;
  return false;
}

/// Appends the steps of `plan` on `op` (gathers before the GEMM, or the finishing collectives
/// after it for C) to `summary`, naming the operand `tensor`.
constexpr void summarize(FfnSchedule& summary, const contraction_plan_data& plan, Operand op, FfnTensor tensor) {
  for (const Step& s : plan.steps)
    if (s.operand == op && !contracts(s.kind)) summary.push_back({s.kind, tensor, s.dim, s.axes});
}

constexpr FfnKind ffn_classify(const tensor_axes& x, const tensor_axes& w1, const tensor_axes& w2, const tensor_axes& y) {
  if (!(x == y)) return FfnKind::unsupported;
  const bool weights_whole = w1.dim(0).empty() && w1.dim(1).empty() && w2.dim(0).empty() && w2.dim(1).empty();
  if (x.dim(0).empty() && x.dim(1).empty() && x.dim(2).empty() && weights_whole) return FfnKind::unsharded;
  // GSPMD: X=[a,-,b], W1=[a,b], W2=[b,a].
  if (!x.dim(0).empty() && x.dim(1).empty() && !x.dim(2).empty() && w1.dim(0) == x.dim(0) && w1.dim(1) == x.dim(2) &&
      w2.dim(0) == x.dim(2) && w2.dim(1) == x.dim(0))
    return FfnKind::gspmd;
  // Megatron: W1=[-,t], W2=[t,-]; X=[-,-,-] (TP) or X=[-,t,-] (SP).
  const axis_list& t = w1.dim(1);
  if (!t.empty() && w1.dim(0).empty() && w2.dim(0) == t && w2.dim(1).empty() && x.dim(0).empty() && x.dim(2).empty()) {
    if (x.dim(1).empty()) return FfnKind::megatron_tp;
    if (x.dim(1) == t) return FfnKind::megatron_sp;
  }
  return FfnKind::unsupported;
}

/// The plan: the six contractions planned by the contraction planner (see the top of this file).
constexpr ffn_plan_data make_ffn_plan(const tensor_axes& x, const tensor_axes& w1, const tensor_axes& w2,
                                      const tensor_axes& y) {
  namespace fc = ffn_contractions;
  using Op = Operand;
  constexpr auto standard = VariantKind::standard;
  ffn_plan_data p;
  p.x = x, p.w1 = w1, p.w2 = w2, p.y = y;
  p.kind = ffn_classify(x, w1, w2, y);
  if (p.kind == FfnKind::unsupported) return p;
  // H keeps W1's column split, and X's token splits on axes the columns do not use.
  p.h = axes_of({without(x.dim(0), w1.dim(1)), without(x.dim(1), w1.dim(1)), w1.dim(1)});
  p.b1 = w1.dim(1);
  p.b2 = y.dim(2);

  p.hidden = plan_contraction(fc::hidden, x, w1, p.h, false, standard);
  p.xg = after_gathers(p.hidden.steps, Op::A, x);
  p.w1g = after_gathers(p.hidden.steps, Op::B, w1);
  p.output = plan_contraction(fc::output, p.h, w2, y, false, standard);
  p.w2g = after_gathers(p.output.steps, Op::B, w2);

  p.hidden_gradient = plan_contraction(fc::hidden_gradient, y, p.w2g, p.h, false, standard);
  p.dyg = after_gathers(p.hidden_gradient.steps, Op::A, y);
  p.w2_gradient = plan_contraction(fc::w2_gradient, p.h, p.dyg, w2, false, standard);
  p.w1_gradient = plan_contraction(fc::w1_gradient, p.xg, p.h, w1, false, standard);
  p.input_gradient = plan_contraction(fc::input_gradient, p.h, p.w1g, x, false, standard);
  p.h_tokens = concat(p.h.dim(0), p.h.dim(1));
  p.dy_tokens = concat(p.dyg.dim(0), p.dyg.dim(1));

  // What the kernel relies on: every plan is valid; H comes out of its GEMM as the layer keeps
  // it and is not gathered again; dH is not gathered either; the gradients' plans gather nothing.
  for (const contraction_plan_data* plan :
       {&p.hidden, &p.output, &p.hidden_gradient, &p.w2_gradient, &p.w1_gradient, &p.input_gradient})
    p.consistent = p.consistent && plan->error.ok();
  p.consistent = p.consistent && p.hidden.start[Op::C] == p.h && !gathers(p.output.steps, Op::A) &&
                 !gathers(p.hidden_gradient.steps, Op::B) && p.hidden_gradient.start[Op::C] == p.h;
  for (const contraction_plan_data* plan : {&p.w2_gradient, &p.w1_gradient, &p.input_gradient})
    p.consistent = p.consistent && !gathers(plan->steps, Op::A) && !gathers(plan->steps, Op::B);
  // The biases' gradients are slices of dY's and dH's columns.
  p.consistent = p.consistent && is_prefix(p.dyg.dim(2), p.b2) && p.h.dim(2) == p.b1;

  summarize(p.forward, p.hidden, Op::A, FfnTensor::X);
  summarize(p.forward, p.hidden, Op::B, FfnTensor::W1);
  summarize(p.forward, p.output, Op::B, FfnTensor::W2);
  summarize(p.forward, p.output, Op::C, FfnTensor::Y);
  summarize(p.backward, p.hidden_gradient, Op::A, FfnTensor::dY);
  if (!p.dy_tokens.empty()) p.backward.push_back({StepKind::all_reduce, FfnTensor::db2, -1, p.dy_tokens});
  summarize(p.backward, p.w2_gradient, Op::C, FfnTensor::dW2);
  if (!p.h_tokens.empty()) p.backward.push_back({StepKind::all_reduce, FfnTensor::db1, -1, p.h_tokens});
  summarize(p.backward, p.w1_gradient, Op::C, FfnTensor::dW1);
  summarize(p.backward, p.input_gradient, Op::C, FfnTensor::dX);
  return p;
}

/// Global extents of the operands of each contraction, for `shape`.
struct ffn_extents {
  operand_extents hidden, output, hidden_gradient, w2_gradient, w1_gradient, input_gradient;
  static constexpr ffn_extents of(const FfnShape& s) {
    const tensor_extents act{s.b, s.s, s.m}, hid{s.b, s.s, s.h}, w1{s.m, s.h}, w2{s.h, s.m};
    return {{act, w1, hid}, {hid, w2, act}, {act, w2, hid}, {hid, act, w2}, {act, hid, w1}, {hid, w1, act}};
  }
};

/// What the AllReduce of a bias gradient sends: `n` columns split over `split`, pending over `tokens`.
constexpr CommCounters bias_traffic(std::int64_t n, const axis_list& split, const axis_list& tokens,
                                    const block_geometry& geo, std::int64_t scalar_bytes) {
  if (tokens.empty()) return {};
  operand_axes state;
  state[Operand::C] = axes_of({split});
  state[Operand::C].partial = tokens;
  const Step step{StepKind::all_reduce, Operand::C, -1, tokens, {}};
  return schedule_counters(Schedule{step}, state, {{{}, {}, {n}}}, geo, scalar_bytes, 0);
}

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

inline std::string describe_ffn_schedule(const FfnSchedule& steps, std::span<const std::string_view> axis_names) {
  if (steps.empty()) return "local";
  std::string text;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const FfnStep& s = steps[i];
    if (i) text.append(", ");
    text.append(collective_text(s.kind, ffn_tensor_text(s.tensor), ffn_dim_text(s.tensor, s.dim),
                                axes_text_of(s.axes, axis_names)));
  }
  return text;
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

/// Dimension I of Sh, or Replicated when the shardings failed a check (only the message
/// that names the problem is then reported).
template <bool Valid, typename Sh, std::size_t I>
struct dim_or_replicated { using type = Replicated; };
template <typename Sh, std::size_t I>
struct dim_or_replicated<true, Sh, I> { using type = typename Sh::template dim<I>; };

}  // namespace detail

/// Everything the compiler decides about a FeedForward on mesh M with X, W1, W2, Y sharded
/// as given: the policy, the plans of its contractions, the forward and backward collectives,
/// the shardings of the biases, the cost model (bytes and messages per rank, ring convention
/// of traffic.hpp) and describe(). An unsupported combination is one static_assert naming
/// the supported ones.
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

 public:
  /// The plan as one constexpr value (the kernel reads it).
  static constexpr detail::ffn_plan_data data = [] {
    if constexpr (names_valid) {
      using detail::tensor_axes, detail::resolve_sharding;
      return detail::make_ffn_plan(tensor_axes::of(resolve_sharding<M, ShX>()), tensor_axes::of(resolve_sharding<M, ShW1>()),
                                   tensor_axes::of(resolve_sharding<M, ShW2>()), tensor_axes::of(resolve_sharding<M, ShY>()));
    } else {
      return detail::ffn_plan_data{};
    }
  }();

 private:
  static_assert(!names_valid || data.kind != detail::FfnKind::unsupported,
                "shardwise::FeedForward: unsupported combination of shardings. The supported policies are "
                "Unsharded (X=[-,-,-], W1=[-,-], W2=[-,-]), "
                "GSPMD (X=[a,-,b], W1=[a,b], W2=[b,a]), "
                "MegatronTP (X=[-,-,-], W1=[-,t], W2=[t,-]) and "
                "MegatronSP (X=[-,t,-], W1=[-,t], W2=[t,-]), each with Y sharded like X; "
                "a, b, t are Split<...> axes (a and b different), '-' is Replicated");
  static_assert(data.consistent, "shardwise::FeedForward: internal error: the plans of the layer do not fit together");

 public:
  /// ffn_policy::Unsharded, GSPMD, MegatronTP or MegatronSP.
  using policy = typename detail::ffn_policy_type<data.kind>::type;
  /// The shardings of X, Y, W1 and W2, as given.
  ///@{
  using x_sharding = ShX;
  using y_sharding = ShY;
  using w1_sharding = ShW1;
  using w2_sharding = ShW2;
  ///@}
  /// b1[h] is split like W1's columns and b2[m] like Y's model dimension; as 1 x n matrices.
  ///@{
  using b1_sharding = TensorSharding<Replicated, typename detail::dim_or_replicated<names_valid, ShW1, 1>::type>;
  using b2_sharding = TensorSharding<Replicated, typename detail::dim_or_replicated<names_valid, ShY, 2>::type>;
  ///@}

  /// The collectives of the forward and of the backward pass, in the order they run.
  ///@{
  static constexpr FfnSchedule forward_schedule = data.forward;
  static constexpr FfnSchedule backward_schedule = data.backward;
  ///@}

  /// Whether `schedule` has a step of kind `kind` on `tensor`.
  static constexpr bool has(const FfnSchedule& schedule, FfnTensor tensor, StepKind kind) {
    for (const FfnStep& s : schedule)
      if (s.tensor == tensor && s.kind == kind) return true;
    return false;
  }
  /// That step (check has() first; a default FfnStep when there is none).
  static constexpr FfnStep find(const FfnSchedule& schedule, FfnTensor tensor, StepKind kind) {
    for (const FfnStep& s : schedule)
      if (s.tensor == tensor && s.kind == kind) return s;
    return {};
  }

  /// Bytes, messages and calls the rank at `coordinate` spends in the forward pass.
  static constexpr FfnTraffic forward_traffic(const M& mesh, const typename M::coordinate_type& coordinate,
                                              const FfnShape& shape, std::int64_t scalar_bytes) {
    const detail::block_geometry geo(mesh, coordinate);
    const auto e = detail::ffn_extents::of(shape);
    return detail::schedule_counters(data.hidden.steps, data.hidden.start, e.hidden, geo, scalar_bytes, 0) +
           detail::schedule_counters(data.output.steps, data.output.start, e.output, geo, scalar_bytes, 0);
  }
  /// ... in the backward pass; without the steps on dX when `input_gradient` is false.
  static constexpr FfnTraffic backward_traffic(const M& mesh, const typename M::coordinate_type& coordinate,
                                               const FfnShape& shape, std::int64_t scalar_bytes,
                                               bool input_gradient = true) {
    const detail::block_geometry geo(mesh, coordinate);
    const auto e = detail::ffn_extents::of(shape);
    FfnTraffic total =
        detail::schedule_counters(data.hidden_gradient.steps, data.hidden_gradient.start, e.hidden_gradient, geo,
                                  scalar_bytes, 0) +
        detail::bias_traffic(shape.m, data.b2, data.dy_tokens, geo, scalar_bytes) +
        detail::schedule_counters(data.w2_gradient.steps, data.w2_gradient.start, e.w2_gradient, geo, scalar_bytes, 0) +
        detail::bias_traffic(shape.h, data.b1, data.h_tokens, geo, scalar_bytes) +
        detail::schedule_counters(data.w1_gradient.steps, data.w1_gradient.start, e.w1_gradient, geo, scalar_bytes, 0);
    if (input_gradient)
      total += detail::schedule_counters(data.input_gradient.steps, data.input_gradient.start, e.input_gradient, geo,
                                         scalar_bytes, 0);
    return total;
  }

  /// "MegatronTP: forward [AllReduce Y over tp]; backward [AllReduce dX over tp]".
  static std::string describe() {
    return detail::cat(policy::name, ": forward [", detail::describe_ffn_schedule(forward_schedule, M::names),
                       "]; backward [", detail::describe_ffn_schedule(backward_schedule, M::names), "]");
  }
};

/// The policy the compiler picks for a FeedForward with these shardings.
template <MeshType M, TensorShardingType ShX, TensorShardingType ShW1, TensorShardingType ShW2,
          TensorShardingType ShY = ShX>
using ffn_policy_t = typename feed_forward_plan<M, ShX, ShW1, ShW2, ShY>::policy;

}  // namespace shardwise
