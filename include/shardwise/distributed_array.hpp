// shardwise/distributed_array.hpp: the one distributed array type.
//
//   sw::DistributedArray<Scalar, Mesh, Sharding, Layout, Ownership>
//
// Every distributed array of the library is this class template, in the spirit of std::mdspan:
// three independent choices, each a type.
//   - Distribution, per dimension: the Sharding, a TensorSharding of Replicated or Split<axes...>
//     (blocks that differ by at most one, detail/partition.hpp), optionally with a pending sum
//     Partial<axes...>. The one place that maps a dimension to blocks is layout.hpp's
//     block_geometry, where a block-cyclic distribution would go.
//   - Local layout: a layout policy of layout_policy.hpp, the order this rank's block is stored in
//     (which the planner plans for) and how Eigen sees it: MatrixLayout<Eigen order> (an
//     Eigen matrix: ShardedMatrix), TensorLayout<order> (an Eigen::Tensor: ShardedTensor),
//     SequenceMajor<Eigen order> (an activation [b, s, m] as a matrix of tokens x m:
//     FeedForward's). A view of any layout may have any element strides: a leading dimension
//     larger than the block (ScaLAPACK's LLD), a transposed or permuted block.
//   - Ownership: Owning (the array allocates its block; distribute, from_local and every
//     result), View or ConstView (memory the caller keeps; shardwise/view.hpp), ownership.hpp.
// The names users write are aliases: ShardedMatrix<Scalar, Mesh, Sharding, Order, Ownership>
// (sharded_matrix.hpp), ShardedTensor<Scalar, Mesh, Sharding, Ownership> (sharded_tensor.hpp),
// ShardedActivation<Scalar, Mesh, Sharding> (nn/sharded_activation.hpp).
//
// One distribute, one from_local, one to_global, one agreement: each is written once here, and
// the layout's traits (detail::face_traits, array_face.hpp) say only what differs: the Eigen
// types, the words of the messages, and which ranks agree on an activation's shape (the ranks
// that share it). Where this rank's block lies is block_placement.hpp's, shared by every array
// type; the traits that recognize an array (array_traits.hpp) need only its declaration.
//
// Every user-level operation is collective and first agrees on the global extents across the
// ranks (comm/consistency.hpp): a rank that passes other extents makes every rank throw the same
// exception, never a hang. The constructors are local (no communication): the first collective
// operation checks the extents, and its message says so.
#pragma once

#include <Eigen/Core>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "shardwise/array_face.hpp"
#include "shardwise/array_traits.hpp"
#include "shardwise/block_placement.hpp"
#include "shardwise/comm/consistency.hpp"
#include "shardwise/detail/failure.hpp"
#include "shardwise/detail/separate_compilation.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/kernels/permute.hpp"
#include "shardwise/kernels/redistribute.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/layout_policy.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/ownership.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/plan/reshard.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

/// A distributed array (see the top of this file): Sharding says how its dimensions are split
/// over the mesh M, Layout how this rank's block is stored (layout_policy.hpp), Ownership whether the
/// array owns the block. Users write the aliases ShardedMatrix, ShardedTensor and
/// ShardedActivation; the members that only make sense for one layout (rows() of a matrix,
/// batch() of an activation, local() as an Eigen matrix or tensor) exist only for it.
///
/// Copying an owning array copies its block; copying a view copies the pointer.
template <typename Scalar, MeshType M, typename Sh, typename Layout, typename Ownership>
class DistributedArray {
  // Completing the checker instantiates its static_asserts: a bad parameter is reported once,
  // with its own message, before anything else uses it.
  static_assert(sizeof(detail::checked_array<Scalar, M, Sh, Layout, Ownership>) > 0);
  using face = detail::face_traits<Layout>;
  static constexpr bool owning = std::is_same_v<Ownership, Owning>;
  static constexpr detail::array_face face_kind = Layout::face;
  static_assert(!owning || face_kind != detail::array_face::tensor ||
                    Layout::template order<face::template rank<Sh>> ==
                        detail::dim_order::row_major(static_cast<int>(face::template rank<Sh>)),
                "shardwise::ShardedTensor: an owning tensor's block is a row-major Eigen::Tensor, so its layout is "
                "TensorLayout<> (row-major); other orders are for views (shardwise::permuted)");

 public:
  using scalar_type = Scalar;    ///< The element type: float, double or a std::complex of one.
  using mesh_type = M;           ///< The mesh it is distributed over.
  using sharding = Sh;           ///< How its dimensions are split (a TensorSharding).
  using layout_type = Layout;    ///< How this rank's block is stored (layout_policy.hpp).
  using ownership = Ownership;   ///< Owning, View or ConstView.
  /// Number of dimensions.
  static constexpr std::size_t rank = face::template rank<Sh>;
  /// Global (or local) extents, one per dimension.
  using extents_type = std::array<std::int64_t, rank>;
  /// The element type as the array's block is reached: const for a ConstView.
  using element_type = std::conditional_t<std::is_same_v<Ownership, ConstView>, const Scalar, Scalar>;
  /// The block's storage order, outermost dimension first: what the planner plans for.
  static constexpr detail::dim_order storage = Layout::template order<rank>;
  /// Eigen's storage order of the block (Eigen::RowMajor or Eigen::ColMajor; an owning tensor's
  /// Eigen::Tensor is row-major).
  static constexpr int storage_order = Layout::eigen_order;
  /// An owning block as Eigen holds it (an Eigen matrix, or an Eigen::Tensor).
  using local_block = typename face::template container<Scalar, rank>;
  /// A whole array as to_global() returns it (a column-major Eigen matrix, or an Eigen::Tensor).
  using global_type = typename face::template global<Scalar, rank>;
  ///@{
  /// The same under the names of each layout's Eigen type.
  using local_matrix = local_block;
  using global_matrix = global_type;
  using local_tensor = local_block;
  using global_tensor = global_type;
  ///@}
  /// The names of its extents in the messages of a failed agreement.
  static constexpr std::string_view extent_names = face::template agreed_names<rank>;

  /// The sharding resolved against the mesh: the mesh axes splitting each dimension.
  static constexpr detail::tensor_axes axes = [] {
    if constexpr (face::template checks<Scalar, M, Sh>::value)
      return detail::tensor_axes::of(detail::resolve_sharding<M, Sh>());
    else
      return detail::tensor_axes{};
  }();
  /// The dimensions placed otherwise than Split's blocks: BlockCyclic<axis, NB, First>'s block
  /// sizes and first blocks' coordinates, SplitFirstLarger's blocks (0 for the others).
  static constexpr detail::array_cycles cycles = detail::cycles_of<Sh>(rank);
  /// Whether a dimension is block-cyclic (ScaLAPACK's layout: its block's extents are NUMROC's,
  /// and offsets() holds the global index of each dimension's first local index) or
  /// SplitFirstLarger: the array reaches Split's blocks, and the whole array, by a redistribution.
  static constexpr bool redistributed = cycles.any();
  static_assert(!redistributed || !detail::pending_sum<Sh>(),
                "shardwise::DistributedArray: a BlockCyclic or SplitFirstLarger array cannot hold a pending sum "
                "(Partial); reduce it in a block sharding, then reshard it");

  // ---- construction (local: no communication) ------------------------------------------------

  /// A zero array of the given global extents. Local: nothing compares the extents across
  /// ranks here; the first collective operation on the array does, and its error says so.
  DistributedArray(const ProcessGroupMesh<M>& groups, const extents_type& extents)
    requires owning
      : DistributedArray(groups, extents, detail::uninitialized) {
    zero();
  }
  /// An array whose block is allocated but not initialized, for kernels that write all of it.
  DistributedArray(const ProcessGroupMesh<M>& groups, const extents_type& extents, detail::uninitialized_t)
    requires owning
      : groups_(groups), extents_(extents) {
    (void)groups_.state(face::name);  // a moved-from mesh cannot hold an array
    place(face::name);
    resize_block();
  }
  /// A zero matrix of the given global shape (local, as above).
  DistributedArray(const ProcessGroupMesh<M>& groups, std::int64_t rows, std::int64_t cols)
    requires(owning && face_kind == detail::array_face::matrix)
      : DistributedArray(groups, extents_type{rows, cols}) {}
  /// The same, its block allocated but not initialized.
  DistributedArray(const ProcessGroupMesh<M>& groups, std::int64_t rows, std::int64_t cols, detail::uninitialized_t)
    requires(owning && face_kind == detail::array_face::matrix)
      : DistributedArray(groups, extents_type{rows, cols}, detail::uninitialized) {}
  /// A zero activation of global shape [b, s, m] (local, as above).
  DistributedArray(const ProcessGroupMesh<M>& groups, std::int64_t b, std::int64_t s, std::int64_t m)
    requires(owning && face_kind == detail::array_face::tokens)
      : DistributedArray(groups, extents_type{b, s, m}) {}
  /// The same, its block allocated but not initialized.
  DistributedArray(const ProcessGroupMesh<M>& groups, std::int64_t b, std::int64_t s, std::int64_t m,
                   detail::uninitialized_t)
    requires(owning && face_kind == detail::array_face::tokens)
      : DistributedArray(groups, extents_type{b, s, m}, detail::uninitialized) {}

  /// A view of this rank's block of an array of global `extents` at `data`, element (i0, i1,
  /// ...) at data[i0 * strides[0] + i1 * strides[1] + ...], `local` the block's extents as the
  /// caller holds them (`what` names the block in messages). Collective: the extents are agreed
  /// on all ranks, and every rank's block is checked against the array's partition (`local`)
  /// and its strides (no two elements at one address; a writable view has no stride 0 along
  /// more than one element); a problem on any rank is every rank's error. sw::view is the usual
  /// way to call it.
  DistributedArray(const ProcessGroupMesh<M>& groups, const extents_type& extents, element_type* data,
                   const extents_type& strides, const extents_type& local, const char* what = "the block")
    requires(!owning)
      : DistributedArray(groups, extents, data, strides, detail::view_unchecked_t{}) {
    check_view(&local, what);
  }
  /// The same without the caller's local extents: only the strides are checked against the
  /// block the partition gives this rank. (Deprecated in sw::view: give the local extents.)
  DistributedArray(const ProcessGroupMesh<M>& groups, const extents_type& extents, element_type* data,
                   const extents_type& strides)
    requires(!owning)
      : DistributedArray(groups, extents, data, strides, detail::view_unchecked_t{}) {
    check_view(nullptr, "the block");
  }
  /// No check and no communication: for views made from an array already checked (transposed,
  /// permuted).
  DistributedArray(const ProcessGroupMesh<M>& groups, const extents_type& extents, element_type* data,
                   const extents_type& strides, detail::view_unchecked_t from)
    requires(!owning)
      : groups_(groups), extents_(extents), released_(from.released), moved_(from.moved) {
    block_.ptr = data;
    for (std::size_t d = 0; d < rank; ++d) strides_[d] = strides[d];
    if (groups_) place();
  }

  // ---- from data every rank holds, or each rank's block (collective) ------------------------------

  /// From a global matrix that every rank holds (any Eigen matrix or expression): no
  /// communication but the agreement on its shape.
  template <typename Derived>
    requires(owning && face_kind == detail::array_face::matrix)
  static DistributedArray distribute(const ProcessGroupMesh<M>& groups, const Eigen::MatrixBase<Derived>& global) {
    if constexpr (requires { global.derived().data(); global.derived().outerStride(); }) {
      const auto [row_stride, col_stride] = detail::eigen_strides(global.derived());
      const std::int64_t extents[] = {global.rows(), global.cols()};
      return distribute_from(groups, extents, {}, face::distributed_what, face::template distributed_names<rank>,
                             global.derived().data(), {row_stride, col_stride});
    } else {  // an expression: evaluated once, then the same copy
      const global_type plain = global;
      return distribute(groups, plain);
    }
  }
  /// From the whole activation (b * s sequence-major rows x m), held by every rank: no
  /// communication but the agreement, among the ranks that share it, on its shape.
  template <typename Derived>
    requires(owning && face_kind == detail::array_face::tokens)
  static DistributedArray distribute(const ProcessGroupMesh<M>& groups, const Eigen::MatrixBase<Derived>& global,
                                     std::int64_t b, std::int64_t s) {
    if constexpr (requires { global.derived().data(); global.derived().outerStride(); }) {
      LocalProblem problem;
      if (global.rows() != b * s)
        problem.set(detail::message({"the global matrix has ", static_cast<std::int64_t>(global.rows()),
                                     " rows but b * s = ", b * s,
                                     " (rows are tokens, sequence-major: row = s_index * b + b_index)"}));
      const auto [row_stride, col_stride] = detail::eigen_strides(global.derived());
      const std::int64_t extents[] = {b, s, global.cols()};
      // Token (b_index, s_index) is row s_index * b + b_index.
      return distribute_from(groups, extents, problem, face::distributed_what, face::template distributed_names<rank>,
                             global.derived().data(), {row_stride, b * row_stride, col_stride});
    } else {
      const global_type plain = global;
      return distribute(groups, plain, b, s);
    }
  }
  /// From a global row-major tensor that every rank holds (Eigen::Tensor<Scalar, rank,
  /// Eigen::RowMajor>, or a TensorMap of one): no communication but the agreement on its extents.
  template <detail::row_major_tensor_like Global>
    requires(owning && face_kind == detail::array_face::tensor)
  static DistributedArray distribute(const ProcessGroupMesh<M>& groups, const Global& global) {
    static_assert(sizeof(typename face::template check_global<Global, Scalar, rank>) > 0);
    extents_type extents{};
    for (std::size_t d = 0; d < rank; ++d) extents[d] = static_cast<std::int64_t>(global.dimensions()[d]);
    detail::tensor_extents padded{};
    for (std::size_t d = 0; d < rank; ++d) padded[d] = extents[d];
    return distribute_from(groups, extents, {}, face::distributed_what, face::template distributed_names<rank>, global.data(),
                           detail::strides_of(padded, detail::dim_order::row_major(static_cast<int>(rank))));
  }
  /// Groups over another Mesh type than the array's: the static_assert that says so (at the
  /// call: the return type is deduced there).
  template <typename Other, typename... Rest>
    requires(!std::same_as<Other, M>)
  static auto distribute(const ProcessGroupMesh<Other>&, const Rest&...) {
    static_assert(sizeof(typename face::template another_mesh<Other>) > 0);
  }

  /// An array whose element at global index (i, j, ...) is `element(i, j, ...)` (one
  /// std::int64_t per dimension), each rank calling it only for the elements of its own block:
  /// how a numerical code fills a distributed matrix from a formula without holding or sending
  /// the whole. Collective only through the extents' agreement. Of a Partial, the rank that holds
  /// the value computes it and the others hold zeros, as in distribute.
  template <typename Element>
    requires owning
  static DistributedArray generate(const ProcessGroupMesh<M>& groups, const extents_type& extents,
                                   Element&& element) {
    static_assert(sizeof(typename face::template element_function<detail::invocable_with_indices_v<Element&, rank>>) > 0);
    if constexpr (detail::invocable_with_indices_v<Element&, rank>) {
      agree_among(groups, extents, {}, face::generate_op, "the extents", face::template made_names<rank>);
      DistributedArray result(groups, extents, detail::uninitialized);
      if (!result.holds_partial_share()) {
        result.zero();
        return result;
      }
      detail::generate_block(result.block_.data(), extents, result.local_, axes, cycles, storage, groups.geometry(),
                             element);
      return result;
    } else {
      return DistributedArray(groups, extents);
    }
  }

  /// From this rank's block, such as a kernel's output: it must have this rank's extents, and
  /// the global extents must be the same on every rank (collective).
  static DistributedArray from_local(const ProcessGroupMesh<M>& groups, const extents_type& extents, local_block block)
    requires owning
  {
    LocalProblem problem;
    detail::tensor_extents global{}, want{}, starts{};
    for (std::size_t d = 0; d < rank; ++d) global[d] = extents[d];
    detail::place_block(static_cast<int>(rank), axes, groups.geometry(), global, want, starts);
    if (detail::eigen_extents<rank>(block) != face::template block_extents<rank>(want))
      problem.set(detail::message({"the block is ", block_text_of(detail::eigen_extents<rank>(block)), " but this rank's block of a ",
                                   face::shape_text(extents), " ", face::noun, " is ",
                                   block_text_of(face::template block_extents<rank>(want))}));
    agree_among(groups, extents, problem, face::from_local_op, face::made_what, face::template made_names<rank>);
    DistributedArray result(groups, extents, detail::uninitialized);
    result.block_.block = std::move(block);
    return result;
  }
  /// The same for a matrix of `rows` x `cols`.
  static DistributedArray from_local(const ProcessGroupMesh<M>& groups, std::int64_t rows, std::int64_t cols,
                                     local_block block)
    requires(owning && face_kind == detail::array_face::matrix)
  {
    return from_local(groups, extents_type{rows, cols}, std::move(block));
  }
  /// The same for an activation [b, s, m] (its block: local tokens x local m).
  static DistributedArray from_local(const ProcessGroupMesh<M>& groups, std::int64_t b, std::int64_t s,
                                     std::int64_t m, local_block block)
    requires(owning && face_kind == detail::array_face::tokens)
  {
    return from_local(groups, extents_type{b, s, m}, std::move(block));
  }

  /// From a global matrix that only `root` (a world rank) holds: it sends every rank its block.
  template <typename Derived>
    requires(owning && face_kind == detail::array_face::matrix)
  static DistributedArray scatter(const ProcessGroupMesh<M>& groups, const Eigen::MatrixBase<Derived>& global,
                                  int root = 0) {
    AnyCommunicator& world = groups.world();
    // Before the broadcast, whose own check would name broadcast rather than scatter.
    if (root < 0 || root >= world.size())
      throw std::invalid_argument("shardwise::ShardedMatrix::scatter: root " + std::to_string(root) +
                                  " is not a rank of the mesh; give a rank from 0 to " +
                                  std::to_string(world.size() - 1));
    std::int64_t shape[2] = {global.rows(), global.cols()};
    world.broadcast(std::span<std::int64_t>(shape), root);
    DistributedArray result(groups, shape[0], shape[1]);
    constexpr int tag = 0x5e1;
    if (groups.rank() == root) {
      face::send_blocks(world, groups.mesh(), axes, global, root, tag, result.block_.block);
    } else if (result.holds_partial_share()) {
      world.recv(std::span<Scalar>(result.block_.data(), static_cast<std::size_t>(result.local_size())), root, tag);
    }
    return result;
  }

  /// The whole array on every rank (reduces a Partial, then gathers). Collective (over the
  /// ranks that share an activation).
  [[nodiscard]] global_type to_global() const {
    agree(face::to_global_op);
    global_type global = face::template make_global<global_type>(global_extents());
    constexpr detail::dim_order global_order = face::template global_order<rank>;
    if constexpr (redistributed) {
      // Every rank sends every other its blocks, which land where the index maps say.
      std::vector<Scalar> send, receive;
      detail::redistribute<Scalar>(groups_.state("to_global"), own_placement(), replicated_placement(),
                                   global_extents(), data(), strides_, global.data(),
                                   detail::strides_of(global_extents(), global_order), send, receive);
    } else {
      detail::execute<detail::reshard_program<M, Sh, replicated_sharding_t<rank>, storage, global_order>, Scalar>(
          groups_.state("to_global"), {{{}, {}, global_extents()}},
          {.c = data(), .out = global.data(), .strides = {nullptr, nullptr, view_strides()}});
    }
    return global;
  }

  // ---- shape and block ------------------------------------------------------------------------

  /// Global extents.
  [[nodiscard]] const extents_type& extents() const noexcept { return extents_; }
  /// Global extent of dimension `d` (std::out_of_range when d >= rank).
  [[nodiscard]] std::int64_t extent(std::size_t d) const { return extents_.at(d); }
  /// This rank's block: its extents and where it starts in each dimension.
  ///@{
  [[nodiscard]] const extents_type& local_extents() const noexcept { return local_; }
  [[nodiscard]] const extents_type& offsets() const noexcept { return offsets_; }
  ///@}
  /// Element stride of dimension `d` of this rank's block.
  [[nodiscard]] std::int64_t stride(std::size_t d) const { return strides_.at(d); }
  /// The element strides of this rank's block, one per dimension (the rest 0).
  [[nodiscard]] const detail::tensor_extents& local_strides() const noexcept { return strides_; }
  /// This rank's block where it lies (the array's storage, or the caller's memory for a view).
  ///@{
  [[nodiscard]] element_type* data() noexcept { return block_.data(); }
  [[nodiscard]] const Scalar* data() const noexcept { return block_.data(); }
  ///@}
  /// The extents as the planner's values (padded to max_tensor_rank).
  [[nodiscard]] detail::tensor_extents global_extents() const {
    detail::tensor_extents e{};
    for (std::size_t d = 0; d < rank; ++d) e[d] = extents_[d];
    return e;
  }

  /// A matrix's global shape, and this rank's block of it.
  ///@{
  [[nodiscard]] std::int64_t rows() const noexcept requires(rank == 2) { return extents_[0]; }
  [[nodiscard]] std::int64_t cols() const noexcept requires(rank == 2) { return extents_[1]; }
  [[nodiscard]] std::int64_t local_rows() const noexcept requires(rank == 2) { return local_[0]; }
  [[nodiscard]] std::int64_t local_cols() const noexcept requires(rank == 2) { return local_[1]; }
  [[nodiscard]] std::int64_t row_offset() const noexcept requires(rank == 2) { return offsets_[0]; }
  [[nodiscard]] std::int64_t col_offset() const noexcept requires(rank == 2) { return offsets_[1]; }
  ///@}

  /// An activation's global extents b, s and m; this rank's extents and offsets along them
  /// (local_tokens() = local_batch() * local_seq(), the rows of local()).
  ///@{
  [[nodiscard]] std::int64_t batch() const noexcept requires(face_kind == detail::array_face::tokens) { return extents_[0]; }
  [[nodiscard]] std::int64_t seq() const noexcept requires(face_kind == detail::array_face::tokens) { return extents_[1]; }
  [[nodiscard]] std::int64_t model() const noexcept requires(face_kind == detail::array_face::tokens) { return extents_[2]; }
  [[nodiscard]] std::int64_t local_batch() const noexcept requires(face_kind == detail::array_face::tokens) { return local_[0]; }
  [[nodiscard]] std::int64_t local_seq() const noexcept requires(face_kind == detail::array_face::tokens) { return local_[1]; }
  [[nodiscard]] std::int64_t local_m() const noexcept requires(face_kind == detail::array_face::tokens) { return local_[2]; }
  [[nodiscard]] std::int64_t local_tokens() const noexcept requires(face_kind == detail::array_face::tokens) {
    return local_[0] * local_[1];
  }
  [[nodiscard]] std::int64_t batch_offset() const noexcept requires(face_kind == detail::array_face::tokens) { return offsets_[0]; }
  [[nodiscard]] std::int64_t seq_offset() const noexcept requires(face_kind == detail::array_face::tokens) { return offsets_[1]; }
  [[nodiscard]] std::int64_t m_offset() const noexcept requires(face_kind == detail::array_face::tokens) { return offsets_[2]; }
  ///@}
  /// Gives an owning activation a new global shape, keeping the storage when the block size is
  /// unchanged. Local.
  void reshape(std::int64_t b, std::int64_t s, std::int64_t m)
    requires(owning && face_kind == detail::array_face::tokens)
  {
    if (b < 0 || s < 0 || m < 0)
      detail::fail({"shardwise::ShardedActivation::reshape: the shape [", b, ", ", s, ", ", m, "] has a negative extent"});
    extents_ = {b, s, m};
    place();
    resize_block();
  }

  /// This rank's block as Eigen sees it: a map over contiguous storage for an owning matrix or
  /// activation, a map with the view's strides for a matrix view, the Eigen::Tensor itself for
  /// an owning tensor.
  ///@{
  [[nodiscard]] decltype(auto) local() requires(owning || face_kind == detail::array_face::matrix) {
    return local_of(*this);
  }
  [[nodiscard]] decltype(auto) local() const requires(owning || face_kind == detail::array_face::matrix) {
    return local_of(*this);
  }
  ///@}

  /// Moves this rank's block out. The array is then unusable: every operation on it throws
  /// std::logic_error (as on a moved-from one) until an array is assigned to it.
  [[nodiscard]] local_block release() && requires owning {
    released_ = true;
    return std::move(block_.block);
  }
  /// True once release() has moved the block out (never for a view).
  [[nodiscard]] bool released() const noexcept { return released_; }

  /// Copying an owning array copies its block; copying a view copies the pointer.
  ///@{
  DistributedArray(const DistributedArray&) = default;
  DistributedArray& operator=(const DistributedArray&) = default;
  ///@}
  /// Moving takes the block. The array moved from keeps its groups (a shared handle), so that
  /// an operation on it by mistake still takes part in the ranks' agreement and every rank
  /// throws the same error, instead of this rank throwing alone while the others wait.
  ///@{
  DistributedArray(DistributedArray&& other) noexcept
      : groups_(other.groups_), extents_(other.extents_), local_(other.local_), offsets_(other.offsets_),
        strides_(other.strides_), block_(std::move(other.block_)), released_(other.released_),
        moved_(other.moved_) {
    other.moved_ = true;
  }
  DistributedArray& operator=(DistributedArray&& other) noexcept {
    if (this == &other) return *this;
    groups_ = other.groups_;
    extents_ = other.extents_;
    local_ = other.local_;
    offsets_ = other.offsets_;
    strides_ = other.strides_;
    block_ = std::move(other.block_);
    released_ = other.released_;
    moved_ = other.moved_;
    other.moved_ = true;
    return *this;
  }
  ///@}
  ~DistributedArray() = default;  ///< Frees an owning block.

  // ---- validity and agreement ------------------------------------------------------------------

  /// The groups it lives on (a handle that shares them).
  [[nodiscard]] const ProcessGroupMesh<M>& groups() const noexcept { return groups_; }
  /// False once moved from (it then holds no block) or released. (Accessors such as extents(),
  /// local_extents() and groups() are exempt from the checks: they answer with what the array
  /// last held; every operation checks.)
  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(groups_) && !released_ && !moved_; }
  /// std::logic_error naming `operation` and `role` ("A") when moved from or released.
  void check_valid(const char* operation, const char* role) const {
    if (!valid()) detail::throw_unusable(operation, role, face::noun, released_);
  }
  /// Collective: every rank holds this array with the same global extents (at
  /// CheckLevel::cross_rank), else every rank throws the same error; and it was not moved from.
  void agree(const char* operation, const char* role = face::role) const {
    if (!groups_) check_valid(operation, role);  // bound to no groups: nothing to agree over
    LocalProblem problem;
    if (!valid()) problem.set(detail::unusable_text(role, face::noun, released_), LocalProblem::Kind::logic_error);
    agree_among(groups_, extents_, problem, operation, face::agreed_what, face::template agreed_names<rank>,
                detail::constructed_locally);
  }
  /// What the agreement of an operation needs of it, as its operand `role` ("A").
  [[nodiscard]] OperandFacts facts(const char* role) const noexcept {
    const bool bound = static_cast<bool>(groups_);
    return {role, face::noun, bound ? static_cast<const void*>(&groups_.state()) : nullptr,
            bound ? &groups_.world() : nullptr, valid(), released_};
  }

  /// The axes its sharding names, in mesh order: the ranks an activation is spread over.
  static constexpr detail::axis_list named_axes = detail::in_mesh_order(axes.used());

  /// Collective over the ranks that agree on this array type's extents (every rank; for an
  /// activation, the group along named_axes): they agree on `values` and on whether any of them
  /// found `problem`, else all throw the same.
  static void agree_among(const ProcessGroupMesh<M>& groups, std::span<const std::int64_t> values,
                          const LocalProblem& problem, std::string_view operation, std::string_view what,
                          std::string_view names, std::string_view note = {}) {
    if constexpr (face::agreed_by_all_ranks) {
      agree_on_all_ranks(groups.world(), values, problem, operation, what, names, note);
    } else {
      agree_within([&]() -> AnyCommunicator* {
        if constexpr (named_axes.empty()) return nullptr;
        else return &groups.group_along_axis_indices(named_axes);
      }, values, problem, operation, what, names, note, groups.rank());
    }
  }

  /// Of a Partial, the rank at coordinate 0 along the Partial axes holds the value, the others
  /// zeros.
  [[nodiscard]] bool holds_partial_share() const { return detail::holds_share(axes, groups_.geometry()); }

 private:
  template <typename, MeshType, typename, typename, typename>
  friend class DistributedArray;

  /// The block: an Eigen container when owning, the caller's pointer for a view.
  struct owned_block {
    local_block block;
    [[nodiscard]] Scalar* data() noexcept { return block.data(); }
    [[nodiscard]] const Scalar* data() const noexcept { return block.data(); }
  };
  struct view_block {
    element_type* ptr = nullptr;
    [[nodiscard]] element_type* data() const noexcept { return ptr; }
  };

  /// The checks of a view of the caller's memory (see its constructors), then the agreement.
  void check_view(const extents_type* caller_local, const char* what) const requires(!owning) {
    (void)groups_.state("shardwise::view");  // a moved-from mesh cannot hold an array
    LocalProblem problem;
    bool empty = false;
    for (std::size_t d = 0; d < rank; ++d) {
      if (extents_[d] < 0)
        problem.set(detail::message({"the global extents ", face::shape_text(extents_), " have a negative one"}));
      empty = empty || local_[d] == 0;
    }
    if (caller_local != nullptr && *caller_local != local_)
      problem.set(detail::message({what, " is ", block_text_of(*caller_local), " but this rank's block of a ",
                                   face::shape_text(extents_), " ", face::noun, " is ", block_text_of(local_),
                                   detail::split_rule_note}));
    if (!problem.found())  // strides_ is padded; its first `rank` entries are the view's
      problem.set(detail::view_stride_problem(static_cast<int>(rank), local_.data(), strides_.data(),
                                              !std::is_const_v<element_type>));
    if (!problem.found() && !empty && block_.ptr == nullptr)
      problem.set(detail::message({"the pointer is null but this rank's block is ", face::shape_text(local_)}));
    agree_among(groups_, extents_, problem, "shardwise::view", face::made_what, face::template made_names<rank>);
  }

  /// Places this rank's block of extents_; an owning block is contiguous in the storage order.
  /// `check`: the name to report a negative extent with (none: not checked here).
  void place(const char* check = nullptr) {
    static constexpr detail::dim_order order = storage;
    detail::place_array(static_cast<int>(rank), extents_.data(), axes, cycles, groups_.geometry(), owning ? &order : nullptr,
                        local_.data(), offsets_.data(), strides_, check);
  }
  void resize_block() {
    detail::tensor_extents local{};
    for (std::size_t d = 0; d < rank; ++d) local[d] = local_[d];
    detail::eigen_resize(block_.block, face::template block_extents<rank>(local));
  }
  void zero() {
    Scalar* p = block_.data();
    const std::int64_t n = local_size();
    for (std::int64_t i = 0; i < n; ++i) p[i] = Scalar(0);
  }
  [[nodiscard]] std::int64_t local_size() const {
    std::int64_t n = 1;
    for (std::size_t d = 0; d < rank; ++d) n *= local_[d];
    return n;
  }
  /// A view's strides for the executor (null for an owning block: contiguous in its order).
  [[nodiscard]] const detail::tensor_extents* view_strides() const {
    if constexpr (owning) return nullptr;
    else return &strides_;
  }

  template <std::size_t N>
  static std::string block_text_of(const std::array<std::int64_t, N>& extents) {
    if constexpr (N == 2 && face_kind != detail::array_face::tensor) return detail::message({extents[0], " x ", extents[1]});
    else return detail::extents_text(extents);
  }

  /// The one distribute: agrees on `extents` (and on `problem`), then copies this rank's block
  /// out of the global array at `global` with element strides `global_strides`.
  static DistributedArray distribute_from(const ProcessGroupMesh<M>& groups, std::span<const std::int64_t> extents,
                                          const LocalProblem& problem, std::string_view what, std::string_view names,
                                          const Scalar* global, const detail::tensor_extents& global_strides) {
    agree_among(groups, extents, problem, face::distribute_op, what, names);
    extents_type e{};
    for (std::size_t d = 0; d < rank; ++d) e[d] = extents[d];
    DistributedArray result(groups, e, detail::uninitialized);
    if (!result.holds_partial_share()) {
      result.zero();
      return result;
    }
    if constexpr (redistributed) {
      // The global array is on every rank: this rank's blocks are copied out of it, nothing sent.
      std::vector<Scalar> none;
      detail::redistribute<Scalar>(groups.state(face::distribute_op), replicated_placement(), own_placement(),
                                   result.global_extents(), global, global_strides, result.block_.data(),
                                   result.strides_, none, none);
      return result;
    }
    detail::tensor_extents local{};
    std::int64_t first = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      local[d] = result.local_[d];
      first += result.offsets_[d] * global_strides[d];
    }
    if (result.local_size() > 0)
      detail::permute_copy_strided<Scalar>(global + first, global_strides, result.block_.data(), storage, local);
    return result;
  }

 public:
  /// Where this array type's elements are, as the redistribution kernel reads it.
  static detail::placement own_placement() { return {axes, cycles}; }
  /// The same array replicated on every rank.
  static detail::placement replicated_placement() {
    detail::placement p;
    p.axes.rank = static_cast<int>(rank);
    return p;
  }

 private:

  template <typename Self>
  static decltype(auto) local_of(Self& self) {
    using Elem = std::conditional_t<std::is_const_v<Self>, const Scalar, element_type>;
    if constexpr (face_kind == detail::array_face::tensor)
      return (self.block_.block);  // the Eigen::Tensor itself
    else if constexpr (owning)
      return face::template map<Elem>(self.block_.data(), face::template block_extents<rank>(self.padded_local()));
    else
      return face::template strided_map<Elem>(self.block_.data(), self.local_[0], self.local_[1], self.strides_);
  }
  [[nodiscard]] detail::tensor_extents padded_local() const {
    detail::tensor_extents e{};
    for (std::size_t d = 0; d < rank; ++d) e[d] = local_[d];
    return e;
  }

  ProcessGroupMesh<M> groups_;
  extents_type extents_{}, local_{}, offsets_{};
  detail::tensor_extents strides_{};
  std::conditional_t<owning, owned_block, view_block> block_{};
  bool released_ = false;
  bool moved_ = false;
};

}  // namespace shardwise
