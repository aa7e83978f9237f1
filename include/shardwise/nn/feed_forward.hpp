// shardwise/nn/feed_forward.hpp: the sharded FeedForward layer, forward and backward.
//
//   Y = ReLU(X W1 + b1) W2 + b2,   X, Y: [b, s, m] activations,  W1: [m, h],  W2: [h, m].
//
//   using Tp = sw::Mesh<sw::Axis<"tp", 4>>;
//   sw::FeedForward<float, Tp, TS<R, R, R>, TS<R, S<"tp">>, TS<S<"tp">, R>> ffn(groups, m, h);  // MegatronTP
//   decltype(ffn)::Cache cache;
//   auto y  = ffn.forward(x, cache);      // one AllReduce of b*s*m
//   auto dx = ffn.backward(dy, cache);    // one AllReduce of b*s*m; adds dW1, db1, dW2, db2
//
// The plan (nn/ffn_policy.hpp) is the layer's six contractions planned by the one contraction
// planner; this kernel runs each of them, and the gathers that prepare their inputs, through
// the one executor (kernels/executor.hpp), and does the element-wise work (biases, ReLU, its
// mask, the biases' gradients) itself. So counted traffic equals the model (tests check it
// per rank) and no collective is written here.
//
// Decisions:
// - The layer owns its parameters and their gradients (ShardedMatrix objects; the biases
//   are 1 x n matrices). backward() ADDS into the gradients, so micro-batches accumulate;
//   zero_grad() starts over. parameters() gives the optimizers flat views.
// - forward() keeps in a Cache what backward needs: X as the GEMMs saw it (gathered, for
//   GSPMD and SP) and the hidden activation after the ReLU (its sign is the ReLU mask). One
//   Cache per micro-batch in flight; its storage is reused when shapes repeat.
// - GSPMD's gathered W1 and W2 are kept in the layer and reused by backward (no second
//   AllGather). So under GSPMD, do not change the weights between a forward and its
//   backward. The other policies read the weights when backward runs.
// - Storage orders are chosen so that every collective moves contiguous blocks: a weight
//   gathered along a dimension keeps that dimension outer (W1 row-major, W2 column-major
//   under GSPMD), activations follow ShardedActivation's rule, H and dH are row-major
//   (tokens x h); every GEMM then runs on the blocks as they are stored.
// - Scratch that lives only within one call (dY as gathered, dH) comes from the per-thread
//   Workspace: no allocation in steady state.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "shardwise/comm/consistency.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/kernels/workspace.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/nn/ffn_policy.hpp"
#include "shardwise/nn/optimizer.hpp"
#include "shardwise/nn/sharded_activation.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/sharded_matrix.hpp"

namespace shardwise {

namespace detail {

/// The AllGathers that `plan` makes on its input `op`, as a reshard of that tensor alone.
constexpr Schedule input_gathers(const contraction_plan_data& plan, Operand op) {
  Schedule steps;
  for (const Step& s : plan.steps)
    if (s.kind == StepKind::all_gather && s.operand == op) steps.push_back({s.kind, Operand::C, s.dim, s.axes, {}});
  return steps;
}

/// `plan` without the gathers of its inputs: the contraction and what finishes it, starting
/// from A and B as already gathered.
constexpr contraction_plan_data without_input_gathers(const contraction_plan_data& plan) {
  contraction_plan_data rest = plan;
  rest.steps = {};
  for (const Step& s : plan.steps) {
    if (s.kind == StepKind::all_gather && s.operand != Operand::C)
      apply_step(s, rest.start);
    else
      rest.steps.push_back(s);
  }
  return rest;
}

/// The storage order a block in `order` ends in after the gathers `steps` (each needs its
/// dimension outermost).
constexpr dim_order order_after(const Schedule& steps, dim_order order) {
  for (const Step& s : steps) order = lowering::for_collective(order, s.dim);
  return order;
}

/// The program of a tensor's gathers: from a block in `from` into one in the order they leave.
constexpr program gather_program(const Schedule& steps, const tensor_axes& start, const dim_order& from) {
  operand_axes state;
  state[Operand::C] = start;
  return lower(steps, state, reshard_indices(start.rank), 0, {}, {}, from, order_after(steps, from));
}

/// The program of a contraction whose inputs are stored in `a` and `b`, into `out`.
constexpr program contraction_program(const contraction_plan_data& plan, const contraction_indices& ix,
                                      const dim_order& a, const dim_order& b, const dim_order& out) {
  const contraction_plan_data rest = without_input_gathers(plan);
  return lower(rest.steps, rest.start, ix, 0, a, b, {}, out);
}

/// The program that AllReduces a bias gradient of `n` columns split over `split`, pending
/// over `tokens` (the rows of the activation it is summed from).
constexpr program bias_reduction(const axis_list& split, const axis_list& tokens) {
  operand_axes state;
  state[Operand::C] = axes_of({split});
  state[Operand::C].partial = tokens;
  Schedule steps;
  if (!tokens.empty()) steps.push_back({StepKind::all_reduce, Operand::C, -1, tokens, {}});
  return lower(steps, state, reshard_indices(1), 0, {}, {}, dim_order::row_major(1), dim_order::row_major(1));
}

/// Storage order of a weight: the dimension its forward gathers outer, so its AllGather (and
/// the ReduceScatter of its gradient) moves contiguous blocks; otherwise the default.
template <typename Sh>
constexpr int ffn_weight_order(const contraction_plan_data& plan) {
  for (const Step& s : plan.steps)
    if (s.kind == StepKind::all_gather && s.operand == Operand::B) return s.dim == 0 ? Eigen::RowMajor : Eigen::ColMajor;
  return default_storage_order<Sh>();
}

/// H and dH: tokens (sequence-major) x h, row-major, as a tensor [b, s, h].
inline constexpr dim_order hidden_order = activation_order(Eigen::RowMajor);

// The layer's element-wise work on plain blocks: compiled once per scalar, whatever the
// layer's shardings (as Eigen expressions they would be compiled again for every layer type).

/// data[i, j] += bias[j] for a rows x cols block, row-major or column-major.
template <typename Scalar>
[[gnu::noinline]] void add_bias(Scalar* data, std::int64_t rows, std::int64_t cols, bool row_major, const Scalar* bias) {
  if (row_major) {
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) data[i * cols + j] += bias[j];
  } else {
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < rows; ++i) data[j * rows + i] += bias[j];
  }
}

/// data = max(data, 0).
template <typename Scalar>
[[gnu::noinline]] void relu(Scalar* data, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) data[i] = data[i] > Scalar(0) ? data[i] : Scalar(0);
}

/// gradient = 0 where the ReLU's output was not positive (its mask).
template <typename Scalar>
[[gnu::noinline]] void relu_mask(Scalar* gradient, const Scalar* output, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) gradient[i] = output[i] > Scalar(0) ? gradient[i] : Scalar(0);
}

/// sums[j] = the sum of column first + j of a rows x cols block (row-major or not), j < count.
template <typename Scalar>
[[gnu::noinline]] void column_sums(const Scalar* data, std::int64_t rows, std::int64_t cols, bool row_major,
                                   std::int64_t first, std::int64_t count, Scalar* sums) {
  for (std::int64_t j = 0; j < count; ++j) sums[j] = Scalar(0);
  if (row_major) {
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < count; ++j) sums[j] += data[i * cols + first + j];
  } else {
    for (std::int64_t j = 0; j < count; ++j)
      for (std::int64_t i = 0; i < rows; ++i) sums[j] += data[(first + j) * rows + i];
  }
}

}  // namespace detail

/// Parameters (or their gradients) of a FeedForward: this rank's shards of W1, b1, W2, b2.
template <typename W1, typename B1, typename W2, typename B2>
struct FfnParameters {
  W1 w1;  ///< W1[m, h].
  B1 b1;  ///< b1[h], as a 1 x h matrix.
  W2 w2;  ///< W2[h, m].
  B2 b2;  ///< b2[m], as a 1 x m matrix.
};

/// A FeedForward layer over mesh M; the policy follows from the shardings (feed_forward_plan).
template <typename Scalar, MeshType M, TensorShardingType ShX, TensorShardingType ShW1, TensorShardingType ShW2,
          TensorShardingType ShY = ShX>
class FeedForward {
 public:
  /// Everything the compiler decides about this layer: policy, schedules, cost model.
  using plan = feed_forward_plan<M, ShX, ShW1, ShW2, ShY>;
  /// ffn_policy::Unsharded, GSPMD, MegatronTP or MegatronSP.
  using policy = typename plan::policy;
  using scalar_type = Scalar;  ///< The element type: float or double.
  using mesh_type = M;         ///< The mesh the layer runs on.
  /// The activations X (input) and Y (output).
  ///@{
  using input_type = ShardedActivation<Scalar, M, ShX>;
  using output_type = ShardedActivation<Scalar, M, ShY>;
  ///@}

 private:
  static constexpr const detail::ffn_plan_data& data = plan::data;

 public:
  /// The weights W1[m, h] and W2[h, m], each stored with the dimension its forward gathers
  /// outer (so the AllGather moves contiguous blocks), else in the default order.
  ///@{
  using w1_type = ShardedMatrix<Scalar, M, ShW1, detail::ffn_weight_order<ShW1>(data.hidden)>;
  using w2_type = ShardedMatrix<Scalar, M, ShW2, detail::ffn_weight_order<ShW2>(data.output)>;
  ///@}
  /// The biases b1[h] and b2[m], as 1 x n matrices sharded as the plan says.
  ///@{
  using b1_type = ShardedMatrix<Scalar, M, typename plan::b1_sharding>;
  using b2_type = ShardedMatrix<Scalar, M, typename plan::b2_sharding>;
  ///@}
  /// The four of them: weights() and gradients().
  using parameters_type = FfnParameters<w1_type, b1_type, w2_type, b2_type>;

 private:
  // Storage orders: as given, and as the gathers leave them.
  static constexpr detail::dim_order ox = detail::activation_order(input_type::storage_order);
  static constexpr detail::dim_order oy = detail::activation_order(output_type::storage_order);
  static constexpr detail::dim_order ow1 = detail::matrix_order(w1_type::storage_order);
  static constexpr detail::dim_order ow2 = detail::matrix_order(w2_type::storage_order);
  static constexpr detail::dim_order oh = detail::hidden_order;

  // The programs, in the order the kernel runs them: constexpr data for the one executor.
  static constexpr detail::program gather_x =
      detail::gather_program(detail::input_gathers(data.hidden, Operand::A), data.x, ox);
  static constexpr detail::program gather_w1 =
      detail::gather_program(detail::input_gathers(data.hidden, Operand::B), data.w1, ow1);
  static constexpr detail::program gather_w2 =
      detail::gather_program(detail::input_gathers(data.output, Operand::B), data.w2, ow2);
  static constexpr detail::program gather_dy =
      detail::gather_program(detail::input_gathers(data.hidden_gradient, Operand::A), data.y, oy);
  static constexpr detail::dim_order oxg = gather_x.output_order, ow1g = gather_w1.output_order;
  static constexpr detail::dim_order ow2g = gather_w2.output_order, odyg = gather_dy.output_order;
  static_assert(odyg == detail::activation_order(Eigen::RowMajor) || odyg == detail::activation_order(Eigen::ColMajor),
                "shardwise::FeedForward: internal error: dY as gathered is not stored as an activation");
  static constexpr detail::program hidden =
      detail::contraction_program(data.hidden, detail::ffn_contractions::hidden, oxg, ow1g, oh);
  static constexpr detail::program output =
      detail::contraction_program(data.output, detail::ffn_contractions::output, oh, ow2g, oy);
  static constexpr detail::program hidden_gradient =
      detail::contraction_program(data.hidden_gradient, detail::ffn_contractions::hidden_gradient, odyg, ow2g, oh);
  static constexpr detail::program w2_gradient =
      detail::contraction_program(data.w2_gradient, detail::ffn_contractions::w2_gradient, oh, odyg, ow2);
  static constexpr detail::program w1_gradient =
      detail::contraction_program(data.w1_gradient, detail::ffn_contractions::w1_gradient, oxg, oh, ow1);
  static constexpr detail::program input_gradient =
      detail::contraction_program(data.input_gradient, detail::ffn_contractions::input_gradient, oh, ow1g, ox);
  static constexpr detail::program b2_reduction = detail::bias_reduction(data.b2, data.dy_tokens);
  static constexpr detail::program b1_reduction = detail::bias_reduction(data.b1, data.h_tokens);

 public:
  /// What forward() keeps for backward(): X as the GEMMs saw it, and H = ReLU(X W1 + b1).
  class Cache {
   public:
    /// Whether a forward() has filled it.
    [[nodiscard]] bool valid() const noexcept { return batch_ >= 0; }

   private:
    friend class FeedForward;
    std::vector<Scalar> x_;
    std::vector<Scalar> h_;
    std::int64_t batch_ = -1, seq_ = -1;
  };

  /// A layer with zero parameters for activations of width m and a hidden layer of width h.
  FeedForward(const ProcessGroupMesh<M>& groups, std::int64_t m, std::int64_t h)
      : groups_(groups),
        m_(m),
        h_(h),
        weights_{w1_type(groups, m, h), b1_type(groups, 1, h), w2_type(groups, h, m), b2_type(groups, 1, m)},
        gradients_{w1_type(groups, m, h), b1_type(groups, 1, h), w2_type(groups, h, m), b2_type(groups, 1, m)} {}

  /// A layer whose parameters are this rank's shards of W1 [m x h], b1 [h], W2 [h x m], b2 [m],
  /// which every rank holds whole (biases as vectors or 1 x n matrices).
  template <typename DW1, typename DB1, typename DW2, typename DB2>
  static FeedForward from_global(const ProcessGroupMesh<M>& groups, const Eigen::MatrixBase<DW1>& w1,
                                 const Eigen::MatrixBase<DB1>& b1, const Eigen::MatrixBase<DW2>& w2,
                                 const Eigen::MatrixBase<DB2>& b2) {
    const std::int64_t m = w1.rows(), h = w1.cols();
    if (w2.rows() != h || w2.cols() != m || b1.size() != h || b2.size() != m)
      detail::fail({"shardwise::FeedForward::from_global: W1 is ", m, " x ", h, ", so W2 must be ", h, " x ", m,
                    ", b1 have ", h, " and b2 ", m, " entries"});
    FeedForward layer(groups, m, h);
    layer.weights_.w1 = w1_type::distribute(groups, w1);
    layer.weights_.b1 = b1_type::distribute(groups, b1.reshaped(1, h));
    layer.weights_.w2 = w2_type::distribute(groups, w2);
    layer.weights_.b2 = b2_type::distribute(groups, b2.reshaped(1, m));
    return layer;
  }

  /// Y for X; fills `cache` for backward().
  [[nodiscard]] output_type forward(const input_type& x, Cache& cache) {
    output_type y(groups_, x.batch(), x.seq(), m_, detail::uninitialized);
    forward_into(y, x, cache);
    return y;
  }

  /// Y for X into existing storage (shaped like X). Collective over the ranks the layer is
  /// spread over: they agree on the shapes first, or all throw the same error.
  void forward_into(output_type& y, const input_type& x, Cache& cache) {
    check_bound(x.groups(), "forward: X");
    check_bound(y.groups(), "forward: Y");
    LocalProblem problem;
    if (x.model() != m_ || y.batch() != x.batch() || y.seq() != x.seq() || y.model() != m_)
      problem.set(detail::message({"X is [", x.batch(), ", ", x.seq(), ", ", x.model(), "] and Y [", y.batch(), ", ",
                                   y.seq(), ", ", y.model(), "]; both must be [b, s, ", m_, "]"}));
    const std::int64_t shapes[] = {x.batch(), x.seq(), x.model(), y.batch(), y.seq(), y.model()};
    agree(shapes, problem, "shardwise::FeedForward::forward", "the shapes of X and Y",
          "batch of X|sequence of X|width of X|batch of Y|sequence of Y|width of Y");
    const FfnShape shape{.b = x.batch(), .s = x.seq(), .m = m_, .h = h_};
    const auto e = detail::ffn_extents::of(shape);
    // X, W1 and W2 as the GEMMs see them (gathered where the plan says so).
    cache.x_.resize(static_cast<std::size_t>(count(data.xg, e.hidden[0])));
    run<gather_x>({{{}, {}, e.hidden[0]}}, {nullptr, nullptr, x.local().data(), cache.x_.data()});
    const Scalar* w1 = gathered<gather_w1>(weights_.w1, data.w1g, e.hidden[1], w1_gathered_);
    const Scalar* w2 = gathered<gather_w2>(weights_.w2, data.w2g, e.output[1], w2_gathered_);

    // H = ReLU(X W1 + b1).
    const std::int64_t tokens = hidden_tokens(shape), h_local = local_hidden_width();
    cache.h_.resize(static_cast<std::size_t>(tokens * h_local));
    run<hidden>(e.hidden, {cache.x_.data(), w1, nullptr, cache.h_.data()});
    detail::add_bias(cache.h_.data(), tokens, h_local, true, weights_.b1.local().data());
    detail::relu(cache.h_.data(), tokens * h_local);
    cache.batch_ = shape.b;
    cache.seq_ = shape.s;

    // Y = H W2, reduced as the plan says, then + b2.
    run<output>(e.output, {cache.h_.data(), w2, nullptr, y.local().data()});
    detail::add_bias(y.local().data(), y.local().rows(), y.local().cols(), output_type::storage_order == Eigen::RowMajor,
                     weights_.b2.local().data());
  }

  /// dX for dY; adds this batch's dW1, db1, dW2, db2 into gradients().
  [[nodiscard]] input_type backward(const output_type& dy, const Cache& cache) {
    input_type dx(groups_, dy.batch(), dy.seq(), m_, detail::uninitialized);
    backward_into(&dx, dy, cache);
    return dx;
  }

  /// The same into existing storage; with dx == nullptr (a first layer) dX and its
  /// collective are skipped.
  void backward_into(input_type* dx, const output_type& dy, const Cache& cache) {
    check_bound(dy.groups(), "backward: dY");
    if (dx) check_bound(dx->groups(), "backward: dX");
    LocalProblem problem;
    if (!cache.valid() || cache.batch_ != dy.batch() || cache.seq_ != dy.seq() || dy.model() != m_ ||
        (dx && (dx->batch() != dy.batch() || dx->seq() != dy.seq() || dx->model() != m_)))
      problem.set(detail::message({"dY is [", dy.batch(), ", ", dy.seq(), ", ", dy.model(),
                                   "]; it must match the forward pass the cache comes from (b = ", cache.batch_,
                                   ", s = ", cache.seq_, ", m = ", m_, "), and so must dX"}));
    const std::int64_t shapes[] = {dy.batch(), dy.seq(), dy.model(), dx ? 1 : 0};
    agree(shapes, problem, "shardwise::FeedForward::backward", "the shapes of dY (and whether dX is wanted)",
          "batch of dY|sequence of dY|width of dY|whether dX is wanted");
    const FfnShape shape{.b = dy.batch(), .s = dy.seq(), .m = m_, .h = h_};
    const auto e = detail::ffn_extents::of(shape);
    const std::int64_t tokens = hidden_tokens(shape), h_local = local_hidden_width();
    const Scalar* w1 = gather_w1.steps.empty() ? weights_.w1.local().data() : w1_gathered_.data();
    const Scalar* w2 = gather_w2.steps.empty() ? weights_.w2.local().data() : w2_gathered_.data();

    // dY as the GEMMs see it.
    const detail::block_geometry geo = groups_.geometry();
    const auto dyg_extents = detail::local_extents(data.dyg, e.hidden_gradient[0], geo);
    Scalar* dyg = detail::scratch<Scalar>(detail::Slot::layer_0, detail::element_count(dyg_extents, 3));
    run<gather_dy>({{{}, {}, e.hidden_gradient[0]}}, {nullptr, nullptr, dy.local().data(), dyg});

    // db2: column sums of this rank's b2 columns of dY.
    {
      const std::int64_t dyg_tokens = dyg_extents[0] * dyg_extents[1], dyg_m = dyg_extents[2];
      const std::int64_t first = geo.offset(m_, data.b2) - geo.offset(m_, data.dyg.dim(2));
      add_bias_gradient<b2_reduction>(dyg, dyg_tokens, dyg_m, odyg == detail::activation_order(Eigen::RowMajor), first,
                                      gradients_.b2);
    }
    // dW2 += H^T dY.
    run<w2_gradient>(e.w2_gradient, {cache.h_.data(), dyg, nullptr, gradients_.w2.local().data(), true});
    // dH = dY W2^T, through the ReLU mask.
    Scalar* dh_data = detail::scratch<Scalar>(detail::Slot::layer_1, tokens * h_local);
    run<hidden_gradient>(e.hidden_gradient, {dyg, w2, nullptr, dh_data});
    detail::relu_mask(dh_data, cache.h_.data(), tokens * h_local);
    // db1 and dW1 += X^T dH.
    add_bias_gradient<b1_reduction>(dh_data, tokens, h_local, true, 0, gradients_.b1);
    run<w1_gradient>(e.w1_gradient, {cache.x_.data(), dh_data, nullptr, gradients_.w1.local().data(), true});
    // dX = dH W1^T, reduced as the plan says.
    if (dx != nullptr) run<input_gradient>(e.input_gradient, {dh_data, w1, nullptr, dx->local().data()});
  }

  /// This rank's shards of W1, b1, W2, b2.
  ///@{
  [[nodiscard]] parameters_type& weights() noexcept { return weights_; }
  [[nodiscard]] const parameters_type& weights() const noexcept { return weights_; }
  ///@}
  /// Their gradients, summed over every backward() since the last zero_grad().
  ///@{
  [[nodiscard]] parameters_type& gradients() noexcept { return gradients_; }
  [[nodiscard]] const parameters_type& gradients() const noexcept { return gradients_; }
  ///@}

  /// Sets the gradients to zero.
  void zero_grad() {
    gradients_.w1.local().setZero();
    gradients_.b1.local().setZero();
    gradients_.w2.local().setZero();
    gradients_.b2.local().setZero();
  }

  /// Flat views of (value, gradient) for the optimizers: W1, b1, W2, b2.
  [[nodiscard]] std::array<ParameterRef<Scalar>, 4> parameters() {
    return {ref(weights_.w1, gradients_.w1), ref(weights_.b1, gradients_.b1), ref(weights_.w2, gradients_.w2),
            ref(weights_.b2, gradients_.b2)};
  }

  /// m (the width of X and Y) and h (of the hidden layer).
  ///@{
  [[nodiscard]] std::int64_t model_width() const noexcept { return m_; }
  [[nodiscard]] std::int64_t hidden_width() const noexcept { return h_; }
  ///@}
  /// The group mesh the layer communicates over.
  [[nodiscard]] const ProcessGroupMesh<M>& groups() const noexcept { return groups_; }
  /// The plan's description: policy and both schedules.
  [[nodiscard]] static std::string describe() { return plan::describe(); }

 private:

  template <const detail::program& P>
  void run(const detail::operand_extents& extents, const detail::operation_io<Scalar>& io) {
    detail::execute<P, Scalar>(groups_.state("FeedForward"), extents, io);
  }

  template <typename Tensor>
  std::int64_t count(const detail::tensor_axes& axes, const Tensor& global) const {
    return detail::element_count(detail::local_extents(axes, global, groups_.geometry()), axes.rank);
  }

  /// The weight as the GEMMs see it: gathered into `buffer` when the plan says so.
  template <const detail::program& Gather, typename Weight>
  const Scalar* gathered(const Weight& weight, const detail::tensor_axes& axes, const detail::tensor_extents& global,
                         std::vector<Scalar>& buffer) {
    if constexpr (Gather.steps.empty()) {
      return weight.local().data();
    } else {
      buffer.resize(static_cast<std::size_t>(count(axes, global)));
      run<Gather>({{{}, {}, global}}, {nullptr, nullptr, weight.local().data(), buffer.data()});
      return buffer.data();
    }
  }

  /// Tokens of H on this rank (H's b and s blocks).
  [[nodiscard]] std::int64_t hidden_tokens(const FfnShape& shape) const {
    const detail::block_geometry geo = groups_.geometry();
    return geo.extent(shape.b, data.h.dim(0)) * geo.extent(shape.s, data.h.dim(1));
  }
  /// This rank's columns of H (W1's column split).
  [[nodiscard]] std::int64_t local_hidden_width() const { return groups_.geometry().extent(h_, data.h.dim(2)); }
  /// gradient += the column sums of columns first.. of a tokens x width block (row-major or
  /// not), AllReduced over the token axes first (`Reduction`).
  template <const detail::program& Reduction, typename Gradient>
  void add_bias_gradient(const Scalar* values, std::int64_t tokens, std::int64_t width, bool row_major,
                         std::int64_t first, Gradient& gradient) {
    const std::int64_t n = gradient.local().cols();
    bias_sums_.resize(static_cast<std::size_t>(n));
    detail::column_sums(values, tokens, width, row_major, first, n, bias_sums_.data());
    run<Reduction>({{{}, {}, {gradient.cols()}}}, {nullptr, nullptr, bias_sums_.data(), gradient.local().data(), true});
  }

  template <typename Matrix>
  static ParameterRef<Scalar> ref(Matrix& value, Matrix& gradient) {
    auto v = value.local();
    auto g = gradient.local();
    return {std::span<Scalar>(v.data(), static_cast<std::size_t>(v.size())),
            std::span<Scalar>(g.data(), static_cast<std::size_t>(g.size()))};
  }

  /// Every axis the layer's shardings name, in mesh order: the ranks it is spread over.
  static constexpr detail::axis_list layer_axes = detail::in_mesh_order(
      detail::concat(detail::concat(data.x.used(), data.w1.used()), detail::concat(data.w2.used(), data.y.used())));

  /// Collective over the ranks the layer is spread over (see comm/consistency.hpp).
  void agree(std::span<const std::int64_t> values, const LocalProblem& problem, const char* operation,
             const char* what, const char* names) const {
    agree_within([&]() -> AnyCommunicator* {
      if constexpr (layer_axes.empty()) return nullptr;
      else return &groups_.group_along_axis_indices(layer_axes);
    }, values, problem, operation, what, names, detail::constructed_locally, groups_.rank());
  }

  void check_bound(const ProcessGroupMesh<M>& groups, const char* what) const {
    if (!groups.shares_groups_with(groups_))
      detail::fail({"shardwise::FeedForward::", what,
                    " is bound to another ProcessGroupMesh than the layer; build both from the same one"});
  }

  ProcessGroupMesh<M> groups_;
  std::int64_t m_, h_;
  parameters_type weights_;
  parameters_type gradients_;
  std::vector<Scalar> w1_gathered_;  // GSPMD: W1 and W2 as the latest forward gathered them
  std::vector<Scalar> w2_gathered_;
  std::vector<Scalar> bias_sums_;    // a bias gradient's column sums before their AllReduce
};

}  // namespace shardwise
