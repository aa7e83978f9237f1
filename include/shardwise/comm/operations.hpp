// shardwise/comm/operations.hpp: the operations every communication backend implements,
// listed once.
//
// A backend (MpiCommunicator, VirtualCommunicator) implements each operation below as a
// private member `do_<name>` on raw pointers, element counts and a Datatype tag. Everything
// that only passes operations along is generated from this list: detail::RawAccess (the door
// to the private members), the Communicator concept, AnyCommunicator's virtual interface
// and CountingCommunicator's forwarding. Adding an operation is one line here, its typed
// form in CollectiveApi (collective_api.hpp), its implementation in each backend and its
// count in CountingCommunicator.
//
//   X(return type, name, (parameters), (arguments))
#pragma once

#include <cstdint>
#include <span>

#include "shardwise/comm/request.hpp"
#include "shardwise/comm/types.hpp"

/// The operations every backend implements: X(return type, name, (parameters), (arguments))
/// for each.
#define SHARDWISE_COMM_OPERATIONS(X)                                                                              \
  X(void, all_reduce, (const void* in, void* out, std::int64_t n, Datatype t, ReduceOp op), (in, out, n, t, op))  \
  X(void, all_gather, (const void* in, void* out, std::int64_t n, Datatype t), (in, out, n, t))                   \
  X(void, all_gather_v, (const void* in, void* out, std::span<const std::int64_t> counts, Datatype t),           \
    (in, out, counts, t))                                                                                         \
  X(void, reduce_scatter,                                                                                         \
    (const void* in, void* out, std::span<const std::int64_t> counts, Datatype t, ReduceOp op),                  \
    (in, out, counts, t, op))                                                                                     \
  X(void, reduce_scatter_block, (const void* in, void* out, std::int64_t n, Datatype t, ReduceOp op),            \
    (in, out, n, t, op))                                                                                          \
  X(void, broadcast, (void* buffer, std::int64_t n, Datatype t, int root), (buffer, n, t, root))                  \
  X(void, send, (const void* data, std::int64_t n, Datatype t, int dest, int tag), (data, n, t, dest, tag))       \
  X(void, recv, (void* data, std::int64_t n, Datatype t, int source, int tag), (data, n, t, source, tag))         \
  X(void, sendrecv,                                                                                               \
    (const void* send, std::int64_t send_n, int dest, void* recv, std::int64_t recv_n, int source, Datatype t,   \
     int tag),                                                                                                    \
    (send, send_n, dest, recv, recv_n, source, t, tag))                                                          \
  X(Request, start_sendrecv,                                                                                      \
    (const void* send, std::int64_t send_n, int dest, void* recv, std::int64_t recv_n, int source, Datatype t,   \
     int tag),                                                                                                    \
    (send, send_n, dest, recv, recv_n, source, t, tag))                                                          \
  X(void, barrier, (), ())

/// The parameter list without its parentheses, after a comma when not empty.
#define SHARDWISE_COMM_COMMA_LIST(...) __VA_OPT__(, ) __VA_ARGS__

namespace shardwise::detail {

/// The door to a backend's private `do_<name>` members (backends befriend it).
struct RawAccess {
#define SHARDWISE_COMM_RAW_ACCESS(R, name, params, args)                                           \
  template <typename C, typename... Args>                                                          \
  static auto name(C& c, Args&&... a) -> decltype(c.do_##name(static_cast<Args&&>(a)...)) {        \
    return c.do_##name(static_cast<Args&&>(a)...);                                                 \
  }
  SHARDWISE_COMM_OPERATIONS(SHARDWISE_COMM_RAW_ACCESS)
#undef SHARDWISE_COMM_RAW_ACCESS

  template <typename C>
  static auto create_group(C& c, std::span<const int> ranks) -> decltype(c.do_create_group(ranks)) {
    return c.do_create_group(ranks);
  }
};

}  // namespace shardwise::detail
