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
#include "shardwise/comm/request.hpp"
#include "shardwise/comm/types.hpp"

namespace shardwise {

namespace detail {

struct AnyCommInterface {
  AnyCommInterface() = default;
  AnyCommInterface(const AnyCommInterface&) = delete;
  AnyCommInterface& operator=(const AnyCommInterface&) = delete;
  virtual ~AnyCommInterface() = default;

  virtual void all_reduce(const void* in, void* out, std::int64_t n, Datatype t, ReduceOp op) = 0;
  virtual void all_gather(const void* in, void* out, std::int64_t n, Datatype t) = 0;
  virtual void all_gather_v(const void* in, void* out, std::span<const std::int64_t> counts, Datatype t) = 0;
  virtual void reduce_scatter(const void* in, void* out, std::span<const std::int64_t> counts, Datatype t,
                              ReduceOp op) = 0;
  virtual void reduce_scatter_block(const void* in, void* out, std::int64_t n, Datatype t, ReduceOp op) = 0;
  virtual void broadcast(void* buffer, std::int64_t n, Datatype t, int root) = 0;
  virtual void send(const void* data, std::int64_t n, Datatype t, int dest, int tag) = 0;
  virtual void recv(void* data, std::int64_t n, Datatype t, int source, int tag) = 0;
  virtual void sendrecv(const void* send, std::int64_t send_n, int dest, void* recv, std::int64_t recv_n,
                        int source, Datatype t, int tag) = 0;
  virtual Request start_sendrecv(const void* send, std::int64_t send_n, int dest, void* recv,
                                 std::int64_t recv_n, int source, Datatype t, int tag) = 0;
  virtual void barrier() = 0;
  virtual std::unique_ptr<AnyCommInterface> create_group(std::span<const int> ranks) = 0;
  [[nodiscard]] virtual const std::type_info& type() const noexcept = 0;
  [[nodiscard]] virtual void* target() noexcept = 0;
};

template <Communicator C>
struct AnyCommModel final : AnyCommInterface {
  explicit AnyCommModel(C&& c) : comm(std::move(c)) {}

  void all_reduce(const void* in, void* out, std::int64_t n, Datatype t, ReduceOp op) override {
    RawAccess::all_reduce(comm, in, out, n, t, op);
  }
  void all_gather(const void* in, void* out, std::int64_t n, Datatype t) override {
    RawAccess::all_gather(comm, in, out, n, t);
  }
  void all_gather_v(const void* in, void* out, std::span<const std::int64_t> counts, Datatype t) override {
    RawAccess::all_gather_v(comm, in, out, counts, t);
  }
  void reduce_scatter(const void* in, void* out, std::span<const std::int64_t> counts, Datatype t,
                      ReduceOp op) override {
    RawAccess::reduce_scatter(comm, in, out, counts, t, op);
  }
  void reduce_scatter_block(const void* in, void* out, std::int64_t n, Datatype t, ReduceOp op) override {
    RawAccess::reduce_scatter_block(comm, in, out, n, t, op);
  }
  void broadcast(void* buffer, std::int64_t n, Datatype t, int root) override {
    RawAccess::broadcast(comm, buffer, n, t, root);
  }
  void send(const void* data, std::int64_t n, Datatype t, int dest, int tag) override {
    RawAccess::send(comm, data, n, t, dest, tag);
  }
  void recv(void* data, std::int64_t n, Datatype t, int source, int tag) override {
    RawAccess::recv(comm, data, n, t, source, tag);
  }
  void sendrecv(const void* send, std::int64_t send_n, int dest, void* recv, std::int64_t recv_n, int source,
                Datatype t, int tag) override {
    RawAccess::sendrecv(comm, send, send_n, dest, recv, recv_n, source, t, tag);
  }
  Request start_sendrecv(const void* send, std::int64_t send_n, int dest, void* recv, std::int64_t recv_n,
                         int source, Datatype t, int tag) override {
    return RawAccess::start_sendrecv(comm, send, send_n, dest, recv, recv_n, source, t, tag);
  }
  void barrier() override { RawAccess::barrier(comm); }
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
class AnyCommunicator : public detail::CollectiveApi<AnyCommunicator> {
 public:
  /// Takes ownership of `comm`.
  template <typename C>
    requires(!std::same_as<C, AnyCommunicator> && Communicator<C>)
  explicit AnyCommunicator(C comm)
      : rank_(comm.rank()), size_(comm.size()), impl_(std::make_unique<detail::AnyCommModel<C>>(std::move(comm))) {}

  AnyCommunicator(AnyCommunicator&&) noexcept = default;
  AnyCommunicator& operator=(AnyCommunicator&&) noexcept = default;
  ~AnyCommunicator() = default;

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }

  /// The wrapped backend, or nullptr when it is not a C (like std::function::target).
  template <typename C>
  [[nodiscard]] C* target() noexcept {
    return impl_ && impl_->type() == typeid(C) ? static_cast<C*>(impl_->target()) : nullptr;
  }
  template <typename C>
  [[nodiscard]] const C* target() const noexcept {
    return impl_ && impl_->type() == typeid(C) ? static_cast<const C*>(impl_->target()) : nullptr;
  }

 private:
  friend struct detail::RawAccess;
  using Datatype = detail::Datatype;

  AnyCommunicator(std::unique_ptr<detail::AnyCommInterface> impl, int rank, int size)
      : rank_(rank), size_(size), impl_(std::move(impl)) {}

  void do_all_reduce(const void* in, void* out, std::int64_t n, Datatype t, ReduceOp op) {
    impl_->all_reduce(in, out, n, t, op);
  }
  void do_all_gather(const void* in, void* out, std::int64_t n, Datatype t) { impl_->all_gather(in, out, n, t); }
  void do_all_gather_v(const void* in, void* out, std::span<const std::int64_t> counts, Datatype t) {
    impl_->all_gather_v(in, out, counts, t);
  }
  void do_reduce_scatter(const void* in, void* out, std::span<const std::int64_t> counts, Datatype t,
                         ReduceOp op) {
    impl_->reduce_scatter(in, out, counts, t, op);
  }
  void do_reduce_scatter_block(const void* in, void* out, std::int64_t n, Datatype t, ReduceOp op) {
    impl_->reduce_scatter_block(in, out, n, t, op);
  }
  void do_broadcast(void* buffer, std::int64_t n, Datatype t, int root) { impl_->broadcast(buffer, n, t, root); }
  void do_send(const void* data, std::int64_t n, Datatype t, int dest, int tag) {
    impl_->send(data, n, t, dest, tag);
  }
  void do_recv(void* data, std::int64_t n, Datatype t, int source, int tag) { impl_->recv(data, n, t, source, tag); }
  void do_sendrecv(const void* send, std::int64_t send_n, int dest, void* recv, std::int64_t recv_n, int source,
                   Datatype t, int tag) {
    impl_->sendrecv(send, send_n, dest, recv, recv_n, source, t, tag);
  }
  Request do_start_sendrecv(const void* send, std::int64_t send_n, int dest, void* recv, std::int64_t recv_n,
                            int source, Datatype t, int tag) {
    return impl_->start_sendrecv(send, send_n, dest, recv, recv_n, source, t, tag);
  }
  void do_barrier() { impl_->barrier(); }
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

}  // namespace shardwise
