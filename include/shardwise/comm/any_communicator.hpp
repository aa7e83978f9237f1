// shardwise/comm/any_communicator.hpp: a type-erased, owning Communicator.
//
// AnyCommunicator holds any Communicator by value and is one itself; its create_group
// returns an AnyCommunicator around the backend's subgroup. ProcessGroupMesh stores
// these, so that ProcessGroupMesh<Grid> does not depend on the backend. The typed API
// and its checks run once, here; each operation then costs one virtual call into the
// backend's untyped implementation.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "shardwise/comm/collective_api.hpp"
#include "shardwise/comm/communicator.hpp"
#include "shardwise/comm/operations.hpp"
#include "shardwise/comm/request.hpp"
#include "shardwise/comm/types.hpp"
#include "shardwise/detail/separate_compilation.hpp"

namespace shardwise {

namespace detail {

struct AnyCommInterface {
  AnyCommInterface() = default;
  AnyCommInterface(const AnyCommInterface&) = delete;
  AnyCommInterface& operator=(const AnyCommInterface&) = delete;
  virtual ~AnyCommInterface() = default;

#define SHARDWISE_COMM_VIRTUAL(R, name, params, args) virtual R name params = 0;
  SHARDWISE_COMM_OPERATIONS(SHARDWISE_COMM_VIRTUAL)
#undef SHARDWISE_COMM_VIRTUAL
  virtual std::unique_ptr<AnyCommInterface> create_group(std::span<const int> ranks) = 0;
  [[nodiscard]] virtual const std::type_info& type() const noexcept = 0;
  [[nodiscard]] virtual void* target() noexcept = 0;
};

template <Communicator C>
struct AnyCommModel final : AnyCommInterface {
  explicit AnyCommModel(C&& c) : comm(std::move(c)) {}

#define SHARDWISE_COMM_OVERRIDE(R, name, params, args) \
  R name params override { return RawAccess::name(comm SHARDWISE_COMM_COMMA_LIST args); }
  SHARDWISE_COMM_OPERATIONS(SHARDWISE_COMM_OVERRIDE)
#undef SHARDWISE_COMM_OVERRIDE
  std::unique_ptr<AnyCommInterface> create_group(std::span<const int> ranks) override {
    return std::make_unique<AnyCommModel>(RawAccess::create_group(comm, ranks));
  }
  [[nodiscard]] const std::type_info& type() const noexcept override { return typeid(C); }
  [[nodiscard]] void* target() noexcept override { return &comm; }

  C comm;
};

}  // namespace detail

/// Owns any Communicator behind one virtual call per operation. Move-only; a moved-from
/// AnyCommunicator may only be destroyed or assigned to.
class AnyCommunicator : public CollectiveApi<AnyCommunicator> {
 public:
  /// Takes ownership of `comm`.
  template <typename C>
    requires(!std::same_as<C, AnyCommunicator> && Communicator<C>)
  explicit AnyCommunicator(C comm)
      : rank_(comm.rank()), size_(comm.size()), impl_(std::make_unique<detail::AnyCommModel<C>>(std::move(comm))) {}

  /// Moves the backend; the source may then only be destroyed or assigned to.
  ///@{
  AnyCommunicator(AnyCommunicator&&) noexcept = default;
  AnyCommunicator& operator=(AnyCommunicator&&) noexcept = default;
  ///@}
  ~AnyCommunicator() = default;

  /// This rank in the group, 0..size()-1.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// Number of ranks in the group.
  [[nodiscard]] int size() const noexcept { return size_; }

  /// The wrapped backend, or nullptr when it is not a C (like std::function::target).
  ///@{
  template <typename C>
  [[nodiscard]] C* target() noexcept {
    return impl_ && impl_->type() == typeid(C) ? static_cast<C*>(impl_->target()) : nullptr;
  }
  template <typename C>
  [[nodiscard]] const C* target() const noexcept {
    return impl_ && impl_->type() == typeid(C) ? static_cast<const C*>(impl_->target()) : nullptr;
  }
  ///@}

 private:
  friend struct detail::RawAccess;
  using Datatype = detail::Datatype;

  AnyCommunicator(std::unique_ptr<detail::AnyCommInterface> impl, int rank, int size)
      : rank_(rank), size_(size), impl_(std::move(impl)) {}

#define SHARDWISE_COMM_FORWARD(R, name, params, args) \
  R do_##name params { return impl_->name args; }
  SHARDWISE_COMM_OPERATIONS(SHARDWISE_COMM_FORWARD)
#undef SHARDWISE_COMM_FORWARD
  AnyCommunicator do_create_group(std::span<const int> ranks) {
    int position = 0;
    while (ranks[static_cast<std::size_t>(position)] != rank_) ++position;
    return AnyCommunicator(impl_->create_group(ranks), position, static_cast<int>(ranks.size()));
  }

  int rank_;
  int size_;
  std::unique_ptr<detail::AnyCommInterface> impl_;
};

static_assert(Communicator<AnyCommunicator>);

#if SHARDWISE_EXTERN_RUNTIME  // compiled once by shardwise/compiled_runtime.hpp
extern template class CollectiveApi<AnyCommunicator>;
#endif

}  // namespace shardwise
