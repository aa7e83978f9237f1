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
// The policy and both schedules come from feed_forward_plan (nn/ffn_policy.hpp); the
// kernel runs a fixed dataflow (the six GEMMs of a two-layer MLP) and, at each point where
// a tensor may be communicated, does exactly what the plan's schedule lists for it, with
// block sizes from the same function the cost model uses. So counted traffic equals the
// model (tests check it per rank).
//
// Decisions:
// - The layer owns its parameters and their gradients (ShardedMatrix objects; the biases
//   are 1 x n matrices). backward() ADDS into the gradients, so micro-batches accumulate;
//   zero_grad() starts over. parameters() gives the optimizers flat views.
// - forward() keeps in a Cache what backward needs: X as the GEMMs saw it (gathered, for
//   GSPMD and SP) and the hidden activation after the ReLU (its sign is the ReLU mask). One
//   Cache per micro-batch in flight; its storage is reused when shapes repeat.
// - GSPMD's gathered W1 and W2 are kept in the layer and reused by backward (no second
//   AllGather: the conjugate schedule of the issue). So under GSPMD, do not change the
//   weights between a forward and its backward. The other policies read the weights when
//   backward runs.
// - Storage orders are chosen so that every collective moves contiguous blocks: a weight
//   gathered along a dimension keeps that dimension outer (W1 row-major, W2 column-major
//   under GSPMD), activations follow ShardedActivation's rule, H and dH are row-major.
// - The six GEMMs go through detail::gemm, which ends every call in one of its few
//   column-major-C instantiations (compile time).
// - Scratch that lives only within one call (the partial Y, the gathered dY, dH, partial
//   weight gradients) comes from detail::Workspace: no allocation in steady state.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "shardwise/detail/gemm.hpp"
#include "shardwise/detail/schedule_executor.hpp"
#include "shardwise/detail/workspace.hpp"
#include "shardwise/nn/ffn_policy.hpp"
#include "shardwise/nn/optimizer.hpp"
#include "shardwise/nn/sharded_activation.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/sharded_matrix.hpp"

namespace shardwise {

namespace detail {
/// The transpose of a whole rows x cols block stored in order O: the same data, read in the other order.
template <typename Scalar, int O>
block_ref<Scalar, flip_order(O)> transposed(const Scalar* data, std::int64_t rows, std::int64_t cols) {
  return block_ref<Scalar, flip_order(O)>::whole(data, cols, rows);
}

/// Storage order of a weight: the gathered dimension outer, so its AllGather (and the
/// conjugate ReduceScatter of its gradient) moves contiguous blocks; otherwise the default.
template <TensorShardingType Sh>
constexpr int ffn_weight_order(const FfnSchedule& forward, FfnTensor weight) {
  for (const FfnStep& step : forward)
    if (step.tensor == weight && step.kind == FfnCollective::all_gather) return outer_order(step.dim);
  return default_storage_order<Sh>();
}

/// Whether every collective on an activation moves contiguous blocks in storage `order`:
/// along m (dimension 2) column-major, along s (dimension 1, sequence-major rows) row-major.
constexpr bool ffn_layout_ok(const FfnSchedule& forward, const FfnSchedule& backward, int order, FfnTensor tensor) {
  for (const FfnSchedule* schedule : {&forward, &backward})
    for (const FfnStep& step : *schedule)
      if (step.tensor == tensor && step.kind != FfnCollective::all_reduce &&
          !((step.dim == 2 && order == Eigen::ColMajor) || (step.dim == 1 && order == Eigen::RowMajor)))
        return false;
  return true;
}
}  // namespace detail

/// Parameters (or their gradients) of a FeedForward: this rank's shards of W1, b1, W2, b2.
template <typename W1, typename B1, typename W2, typename B2>
struct FfnParameters {
  W1 w1;
  B1 b1;
  W2 w2;
  B2 b2;
};

/// A FeedForward layer over mesh M; the policy follows from the shardings (feed_forward_plan).
template <typename Scalar, MeshType M, TensorShardingType ShX, TensorShardingType ShW1, TensorShardingType ShW2,
          TensorShardingType ShY = ShX>
class FeedForward {
 public:
  using plan = feed_forward_plan<M, ShX, ShW1, ShW2, ShY>;
  /// ffn_policy::Unsharded, GSPMD, MegatronTP or MegatronSP.
  using policy = typename plan::policy;
  using scalar_type = Scalar;
  using mesh_type = M;
  using input_type = ShardedActivation<Scalar, M, ShX>;
  using output_type = ShardedActivation<Scalar, M, ShY>;

 private:
  static constexpr FfnSchedule fwd = plan::forward_schedule;
  static constexpr FfnSchedule bwd = plan::backward_schedule;
  template <FfnTensor T, FfnCollective K>
  static constexpr bool has_step = plan::has(plan::forward_schedule, T, K) || plan::has(plan::backward_schedule, T, K);
  template <FfnTensor T, FfnCollective K>
  static constexpr FfnStep step_of =
      plan::has(plan::forward_schedule, T, K) ? plan::find(plan::forward_schedule, T, K) : plan::find(plan::backward_schedule, T, K);

 public:
  using w1_type = ShardedMatrix<Scalar, M, ShW1, detail::ffn_weight_order<ShW1>(fwd, FfnTensor::W1)>;
  using w2_type = ShardedMatrix<Scalar, M, ShW2, detail::ffn_weight_order<ShW2>(fwd, FfnTensor::W2)>;
  using b1_type = ShardedMatrix<Scalar, M, typename plan::b1_sharding>;
  using b2_type = ShardedMatrix<Scalar, M, typename plan::b2_sharding>;
  using parameters_type = FfnParameters<w1_type, b1_type, w2_type, b2_type>;

 private:
  static constexpr int ox = input_type::storage_order, oy = output_type::storage_order;
  static constexpr int ow1 = w1_type::storage_order, ow2 = w2_type::storage_order;
  static constexpr int row = Eigen::RowMajor;

  // Every activation collective moves contiguous blocks (see detail::ffn_layout_ok).
  static_assert(detail::ffn_layout_ok(fwd, bwd, ox, FfnTensor::X) && detail::ffn_layout_ok(fwd, bwd, ox, FfnTensor::dX) &&
                    detail::ffn_layout_ok(fwd, bwd, oy, FfnTensor::Y) && detail::ffn_layout_ok(fwd, bwd, oy, FfnTensor::dY),
                "shardwise::FeedForward: internal error: an activation collective would move a strided block");

 public:
  /// What forward() keeps for backward(): X as the GEMMs saw it, and H = ReLU(X W1 + b1).
  class Cache {
   public:
    /// Whether a forward() has filled it.
    [[nodiscard]] bool valid() const noexcept { return batch_ >= 0; }

   private:
    friend class FeedForward;
    detail::dense_matrix<Scalar, ox> x_;
    detail::dense_matrix<Scalar, row> h_;
    std::int64_t batch_ = -1, seq_ = -1;
  };

  /// A layer with zero parameters for activations of width m and a hidden layer of width h.
  FeedForward(ProcessGroupMesh<M>& groups, std::int64_t m, std::int64_t h)
      : groups_(&groups),
        m_(m),
        h_(h),
        weights_{w1_type(groups, m, h), b1_type(groups, 1, h), w2_type(groups, h, m), b2_type(groups, 1, m)},
        gradients_{w1_type(groups, m, h), b1_type(groups, 1, h), w2_type(groups, h, m), b2_type(groups, 1, m)} {}

  /// A layer whose parameters are this rank's shards of W1 [m x h], b1 [h], W2 [h x m], b2 [m],
  /// which every rank holds whole (biases as vectors or 1 x n matrices).
  template <typename DW1, typename DB1, typename DW2, typename DB2>
  static FeedForward from_global(ProcessGroupMesh<M>& groups, const Eigen::MatrixBase<DW1>& w1,
                                 const Eigen::MatrixBase<DB1>& b1, const Eigen::MatrixBase<DW2>& w2,
                                 const Eigen::MatrixBase<DB2>& b2) {
    const std::int64_t m = w1.rows(), h = w1.cols();
    if (w2.rows() != h || w2.cols() != m || b1.size() != h || b2.size() != m)
      throw std::invalid_argument("shardwise::FeedForward::from_global: W1 is " + std::to_string(m) + " x " +
                                  std::to_string(h) + ", so W2 must be " + std::to_string(h) + " x " +
                                  std::to_string(m) + ", b1 have " + std::to_string(h) + " and b2 " +
                                  std::to_string(m) + " entries");
    FeedForward layer(groups, m, h);
    layer.weights_.w1 = w1_type::distribute(groups, w1);
    layer.weights_.b1 = b1_type::distribute(groups, b1.reshaped(1, h));
    layer.weights_.w2 = w2_type::distribute(groups, w2);
    layer.weights_.b2 = b2_type::distribute(groups, b2.reshaped(1, m));
    return layer;
  }

  /// Y for X; fills `cache` for backward().
  [[nodiscard]] output_type forward(const input_type& x, Cache& cache) {
    output_type y(*groups_, x.batch(), x.seq(), m_, detail::uninitialized);
    forward_into(y, x, cache);
    return y;
  }

  /// Y for X into existing storage (shaped like X).
  void forward_into(output_type& y, const input_type& x, Cache& cache) {
    check_bound(x.groups(), "forward: X");
    check_bound(y.groups(), "forward: Y");
    if (x.model() != m_ || y.batch() != x.batch() || y.seq() != x.seq() || y.model() != m_)
      throw std::invalid_argument("shardwise::FeedForward::forward: X is [" + dims(x) + "] and Y [" + dims(y) +
                                  "]; both must be [b, s, " + std::to_string(m_) + "]");
    const FfnShape shape{x.batch(), x.seq(), m_, h_};
    const detail::block_geometry<M> geo{groups_->mesh(), groups_->coordinate()};
    const std::int64_t tokens = token_count(geo, shape, plan::xg_axes);
    const std::int64_t h_local = geo.extent(h_, plan::w1g_axes[1]);

    // X as the GEMMs see it.
    cache.x_.resize(tokens, m_);
    if constexpr (has_step<FfnTensor::X, FfnCollective::all_gather>)
      gather(step_of<FfnTensor::X, FfnCollective::all_gather>, shape, geo, x.local().data(), cache.x_.data());
    else
      cache.x_ = x.local();
    const Scalar* w1 = gathered_weight<FfnTensor::W1>(shape, geo, weights_.w1, w1_gathered_);
    const Scalar* w2 = gathered_weight<FfnTensor::W2>(shape, geo, weights_.w2, w2_gathered_);

    // H = ReLU(X W1 + b1).
    cache.h_.resize(tokens, h_local);
    detail::gemm<Scalar, ox, ow1, row>(cache.h_.data(), detail::block_ref<Scalar, ox>::whole(cache.x_.data(), tokens, m_),
                                       detail::block_ref<Scalar, ow1>::whole(w1, m_, h_local), false);
    cache.h_.rowwise() += weights_.b1.local().row(0);
    cache.h_ = cache.h_.cwiseMax(Scalar(0));
    cache.batch_ = shape.b;
    cache.seq_ = shape.s;

    // Y = H W2 (partial over the hidden axes), reduced as the plan says, then + b2.
    constexpr bool scatter = has_step<FfnTensor::Y, FfnCollective::reduce_scatter>;
    Scalar* partial = scatter ? detail::scratch<Scalar>(detail::Slot::c_ping, tokens * m_) : y.local().data();
    detail::gemm<Scalar, row, ow2, oy>(partial, detail::block_ref<Scalar, row>::whole(cache.h_.data(), tokens, h_local),
                                       detail::block_ref<Scalar, ow2>::whole(w2, h_local, m_), false);
    if constexpr (scatter)
      reduce_scatter(step_of<FfnTensor::Y, FfnCollective::reduce_scatter>, shape, geo, partial, y.local().data());
    if constexpr (has_step<FfnTensor::Y, FfnCollective::all_reduce>)
      all_reduce(step_of<FfnTensor::Y, FfnCollective::all_reduce>, y.local().data(), y.local().size());
    y.local().rowwise() += weights_.b2.local().row(0);
  }

  /// dX for dY; adds this batch's dW1, db1, dW2, db2 into gradients().
  [[nodiscard]] input_type backward(const output_type& dy, const Cache& cache) {
    input_type dx(*groups_, dy.batch(), dy.seq(), m_, detail::uninitialized);
    backward_into(&dx, dy, cache);
    return dx;
  }

  /// The same into existing storage; with dx == nullptr (a first layer) dX and its
  /// collective are skipped.
  void backward_into(input_type* dx, const output_type& dy, const Cache& cache) {
    check_bound(dy.groups(), "backward: dY");
    if (dx) check_bound(dx->groups(), "backward: dX");
    if (!cache.valid() || cache.batch_ != dy.batch() || cache.seq_ != dy.seq() || dy.model() != m_ ||
        (dx && (dx->batch() != dy.batch() || dx->seq() != dy.seq() || dx->model() != m_)))
      throw std::invalid_argument("shardwise::FeedForward::backward: dY is [" + dims(dy) +
                                  "]; it must match the forward pass the cache comes from (b = " +
                                  std::to_string(cache.batch_) + ", s = " + std::to_string(cache.seq_) +
                                  ", m = " + std::to_string(m_) + "), and so must dX");
    const FfnShape shape{dy.batch(), dy.seq(), m_, h_};
    const detail::block_geometry<M> geo{groups_->mesh(), groups_->coordinate()};
    const std::int64_t tokens = token_count(geo, shape, plan::xg_axes);
    const std::int64_t h_local = geo.extent(h_, plan::w1g_axes[1]);
    static_assert(plan::dyg_axes[0] == plan::xg_axes[0] && plan::dyg_axes[1] == plan::xg_axes[1] &&
                      plan::dyg_axes[2].empty() && plan::xg_axes[2].empty(),
                  "shardwise::FeedForward: internal error: dY and X must reach the GEMMs with the same tokens");
    const Scalar* w1 = gathers<FfnTensor::W1>() ? w1_gathered_.data() : weights_.w1.local().data();
    const Scalar* w2 = gathers<FfnTensor::W2>() ? w2_gathered_.data() : weights_.w2.local().data();
    const auto h = detail::block_ref<Scalar, row>::whole(cache.h_.data(), tokens, h_local);

    // dY as the GEMMs see it.
    const Scalar* dyg = dy.local().data();
    if constexpr (has_step<FfnTensor::dY, FfnCollective::all_gather>) {
      Scalar* gathered = detail::scratch<Scalar>(detail::Slot::gathered_a, tokens * m_);
      gather(step_of<FfnTensor::dY, FfnCollective::all_gather>, shape, geo, dyg, gathered);
      dyg = gathered;
    }
    const auto dy_ref = detail::block_ref<Scalar, oy>::whole(dyg, tokens, m_);

    // db2: column sums of this rank's b2 columns of dY.
    bias_gradient<FfnTensor::db2>(dy_ref.map().middleCols(geo.offset(m_, plan::b2_axes), geo.extent(m_, plan::b2_axes)),
                                  gradients_.b2);
    // dW2 = H^T dY.
    weight_gradient<FfnTensor::dW2>(shape, geo, detail::transposed<Scalar, row>(cache.h_.data(), tokens, h_local),
                                    dy_ref, gradients_.w2);
    // dH = dY W2^T, through the ReLU mask.
    Scalar* dh_data = detail::scratch<Scalar>(detail::Slot::c_pong, tokens * h_local);
    detail::gemm<Scalar, oy, detail::flip_order(ow2), row>(dh_data, dy_ref,
                                                           detail::transposed<Scalar, ow2>(w2, h_local, m_), false);
    detail::matrix_map<Scalar, row> dh(dh_data, tokens, h_local);
    dh = (h.map().array() > Scalar(0)).select(dh, Scalar(0));
    const auto dh_ref = detail::block_ref<Scalar, row>::whole(dh_data, tokens, h_local);
    // db1 and dW1 = X^T dH.
    bias_gradient<FfnTensor::db1>(dh, gradients_.b1);
    weight_gradient<FfnTensor::dW1>(shape, geo, detail::transposed<Scalar, ox>(cache.x_.data(), tokens, m_), dh_ref,
                                    gradients_.w1);
    // dX = dH W1^T (partial over the hidden axes), reduced as the plan says.
    if (dx == nullptr) return;
    constexpr bool scatter = has_step<FfnTensor::dX, FfnCollective::reduce_scatter>;
    Scalar* partial = scatter ? detail::scratch<Scalar>(detail::Slot::ring_1, tokens * m_) : dx->local().data();
    detail::gemm<Scalar, row, detail::flip_order(ow1), ox>(partial, dh_ref, detail::transposed<Scalar, ow1>(w1, m_, h_local),
                                                           false);
    if constexpr (scatter)
      reduce_scatter(step_of<FfnTensor::dX, FfnCollective::reduce_scatter>, shape, geo, partial, dx->local().data());
    if constexpr (has_step<FfnTensor::dX, FfnCollective::all_reduce>)
      all_reduce(step_of<FfnTensor::dX, FfnCollective::all_reduce>, dx->local().data(), dx->local().size());
  }

  /// This rank's shards of W1, b1, W2, b2.
  [[nodiscard]] parameters_type& weights() noexcept { return weights_; }
  [[nodiscard]] const parameters_type& weights() const noexcept { return weights_; }
  /// Their gradients, summed over every backward() since the last zero_grad().
  [[nodiscard]] parameters_type& gradients() noexcept { return gradients_; }
  [[nodiscard]] const parameters_type& gradients() const noexcept { return gradients_; }

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
  [[nodiscard]] std::int64_t model_width() const noexcept { return m_; }
  [[nodiscard]] std::int64_t hidden_width() const noexcept { return h_; }
  /// The group mesh the layer communicates over.
  [[nodiscard]] ProcessGroupMesh<M>& groups() const noexcept { return *groups_; }
  /// The plan's description: policy and both schedules.
  [[nodiscard]] static std::string describe() { return plan::describe(); }

 private:
  template <typename Matrix>
  static ParameterRef<Scalar> ref(Matrix& value, Matrix& gradient) {
    auto v = value.local();
    auto g = gradient.local();
    return {std::span<Scalar>(v.data(), static_cast<std::size_t>(v.size())),
            std::span<Scalar>(g.data(), static_cast<std::size_t>(g.size()))};
  }

  template <typename A>
  static std::string dims(const A& a) {
    return std::to_string(a.batch()) + ", " + std::to_string(a.seq()) + ", " + std::to_string(a.model());
  }

  void check_bound(const ProcessGroupMesh<M>& groups, const char* what) const {
    if (&groups != groups_)
      throw std::invalid_argument(std::string("shardwise::FeedForward::") + what +
                                  " is bound to another ProcessGroupMesh than the layer; build both from the same one");
  }

  static std::int64_t token_count(const detail::block_geometry<M>& geo, const FfnShape& shape,
                                  const std::array<detail::axis_list, 3>& axes) {
    return geo.extent(shape.b, axes[0]) * geo.extent(shape.s, axes[1]);
  }

  template <FfnTensor W>
  static constexpr bool gathers() {
    return has_step<W, FfnCollective::all_gather>;
  }

  /// The weight as the GEMMs see it: gathered into `buffer` when the plan says so.
  template <FfnTensor W, typename Matrix, typename Buffer>
  const Scalar* gathered_weight(const FfnShape& shape, const detail::block_geometry<M>& geo, Matrix& weight,
                                Buffer& buffer) {
    if constexpr (gathers<W>()) {
      constexpr FfnStep step = step_of<W, FfnCollective::all_gather>;
      const auto global = detail::ffn_extents(W, shape);
      const auto after = detail::after_gathers(plan::forward_schedule, W, step.before);
      buffer.resize(geo.extent(global[0], after[0]), geo.extent(global[1], after[1]));
      gather(step, shape, geo, weight.local().data(), buffer.data());
      return buffer.data();
    } else {
      return weight.local().data();
    }
  }

  /// grad += column sums of `values`, AllReduced first when the plan says so.
  template <FfnTensor G, typename Values, typename Gradient>
  void bias_gradient(const Values& values, Gradient& gradient) {
    auto target = gradient.local().row(0);
    if constexpr (has_step<G, FfnCollective::all_reduce>) {
      const auto n = static_cast<std::int64_t>(target.size());
      Scalar* sums = detail::scratch<Scalar>(detail::Slot::ring_0, n);
      Eigen::Map<Eigen::Matrix<Scalar, 1, Eigen::Dynamic>> row_sums(sums, n);
      row_sums = values.colwise().sum();
      all_reduce(step_of<G, FfnCollective::all_reduce>, sums, n);
      target += row_sums;
    } else {
      target += values.colwise().sum();
    }
  }

  /// grad += a * b, ReduceScattered and/or AllReduced first when the plan says so.
  template <FfnTensor G, int OA, int OB, typename Gradient>
  void weight_gradient(const FfnShape& shape, const detail::block_geometry<M>& geo, detail::block_ref<Scalar, OA> a,
                       detail::block_ref<Scalar, OB> b, Gradient& gradient) {
    constexpr int order = Gradient::storage_order;
    constexpr bool scatter = has_step<G, FfnCollective::reduce_scatter>;
    constexpr bool reduce = has_step<G, FfnCollective::all_reduce>;
    auto target = gradient.local();
    if constexpr (!scatter && !reduce) {
      detail::gemm<Scalar, OA, OB, order>(target.data(), a, b, true);
    } else {
      static_assert(!scatter || step_of<G, FfnCollective::reduce_scatter>.dim ==
                                    (order == Eigen::RowMajor ? 0 : 1),
                    "shardwise::FeedForward: internal error: a weight gradient would be scattered along its inner dimension");
      const std::int64_t full = a.rows * b.cols;
      Scalar* partial = detail::scratch<Scalar>(detail::Slot::pack, full);
      detail::gemm<Scalar, OA, OB, order>(partial, a, b, false);
      Scalar* result = partial;
      if constexpr (scatter) {
        result = detail::scratch<Scalar>(detail::Slot::unpack, target.size());
        reduce_scatter(step_of<G, FfnCollective::reduce_scatter>, shape, geo, partial, result);
      }
      if constexpr (reduce) all_reduce(step_of<G, FfnCollective::all_reduce>, result, target.size());
      detail::matrix_map<Scalar, order> reduced(result, target.rows(), target.cols());
      target += reduced;
    }
  }

  // ---- the collectives, sized by the plan's own block function -------------------------

  AnyCommunicator& group(const detail::axis_list& axes) { return groups_->group_along_axis_indices(axes); }

  std::span<const std::int64_t> counts(AnyCommunicator& comm, const FfnStep& step, const FfnShape& shape,
                                       const detail::block_geometry<M>& geo) {
    std::vector<std::int64_t>& counts = detail::Workspace::local().counts();
    counts.resize(static_cast<std::size_t>(comm.size()));
    for (int g = 0; g < comm.size(); ++g)
      counts[static_cast<std::size_t>(g)] = detail::ffn_block_elements(step, shape, geo, g);
    return {counts.data(), counts.size()};
  }

  static std::int64_t sum(std::span<const std::int64_t> counts) {
    std::int64_t total = 0;
    for (std::int64_t c : counts) total += c;
    return total;
  }

  void gather(const FfnStep& step, const FfnShape& shape, const detail::block_geometry<M>& geo, const Scalar* in,
              Scalar* out) {
    AnyCommunicator& comm = group(step.axes);
    const auto c = counts(comm, step, shape, geo);
    comm.all_gather_v(std::span<const Scalar>(in, static_cast<std::size_t>(c[static_cast<std::size_t>(comm.rank())])),
                      std::span<Scalar>(out, static_cast<std::size_t>(sum(c))), c);
  }

  void reduce_scatter(const FfnStep& step, const FfnShape& shape, const detail::block_geometry<M>& geo,
                      const Scalar* in, Scalar* out) {
    AnyCommunicator& comm = group(step.axes);
    const auto c = counts(comm, step, shape, geo);
    comm.reduce_scatter(std::span<const Scalar>(in, static_cast<std::size_t>(sum(c))),
                        std::span<Scalar>(out, static_cast<std::size_t>(c[static_cast<std::size_t>(comm.rank())])), c);
  }

  void all_reduce(const FfnStep& step, Scalar* data, std::int64_t n) {
    group(step.axes).all_reduce(std::span<Scalar>(data, static_cast<std::size_t>(n)));
  }

  ProcessGroupMesh<M>* groups_;
  std::int64_t m_, h_;
  parameters_type weights_;
  parameters_type gradients_;
  detail::dense_matrix<Scalar, ow1> w1_gathered_;  // GSPMD: W1 and W2 as the latest forward gathered them
  detail::dense_matrix<Scalar, ow2> w2_gathered_;
};

}  // namespace shardwise
