// shardwise/comm/communicator.hpp: the Communicator concept and the adapter customization point.
//
// A Communicator is a group of ranks with the operations of operations.hpp (collectives,
// point-to-point messages, a barrier) in the typed form of collective_api.hpp, and
// create_group. MpiCommunicator, VirtualCommunicator, CountingCommunicator<C> and
// AnyCommunicator all satisfy it.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <type_traits>

#include "shardwise/comm/collective_api.hpp"
#include "shardwise/comm/operations.hpp"
#include "shardwise/comm/request.hpp"
#include "shardwise/comm/types.hpp"

namespace shardwise {

namespace detail {
/// C implements every operation of comm/operations.hpp.
template <typename C>
concept backend_operations = true
#define SHARDWISE_COMM_REQUIRES(R, name, params, args)                                  \
  &&requires(C & c SHARDWISE_COMM_COMMA_LIST params) {                                \
    { RawAccess::name(c SHARDWISE_COMM_COMMA_LIST args) } -> std::same_as<R>;          \
  }
    SHARDWISE_COMM_OPERATIONS(SHARDWISE_COMM_REQUIRES);
#undef SHARDWISE_COMM_REQUIRES
}  // namespace detail

/// A group of ranks that moves float, double, int and std::int64_t buffers: every operation
/// of comm/operations.hpp in the typed form of CollectiveApi, plus rank(), size() and
/// create_group().
template <typename C>
concept Communicator = std::movable<C> && std::derived_from<C, CollectiveApi<C>> &&
                       detail::backend_operations<C> && requires(C& c, const C& cc, std::span<const int> ranks) {
                         { cc.rank() } -> std::same_as<int>;
                         { cc.size() } -> std::same_as<int>;
                         { detail::RawAccess::create_group(c, ranks) } -> std::same_as<C>;
                       };

/// Customization point: specialize with `static Communicator auto adapt(const T&)` to let a
/// foreign handle stand for a communicator (comm/mpi.hpp does so for MPI_Comm, which is what
/// makes `ProcessGroupMesh<Grid> groups{MPI_COMM_WORLD};` work).
template <typename T>
struct communicator_adapter {};

/// T has a communicator_adapter.
template <typename T>
concept AdaptableToCommunicator = requires(const T& handle) {
  { communicator_adapter<std::remove_cvref_t<T>>::adapt(handle) } -> Communicator;
};

}  // namespace shardwise
