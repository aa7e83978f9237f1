// shardwise/comm/communicator.hpp: the Communicator concept and the adapter customization point.
//
// A Communicator is a group of ranks with the collectives of collective_api.hpp on
// float, double, int and std::int64_t, point-to-point messages, a barrier and
// create_group. MpiCommunicator, VirtualCommunicator, CountingCommunicator<C> and
// AnyCommunicator all satisfy it.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <type_traits>

#include "shardwise/comm/collective_api.hpp"
#include "shardwise/comm/request.hpp"
#include "shardwise/comm/types.hpp"

namespace shardwise {

/// A group of ranks that moves float, double, int and std::int64_t buffers.
template <typename C>
concept Communicator =
    std::movable<C> &&
    requires(C& c, const C& cc, std::span<const float> fin, std::span<float> fout,
             std::span<const double> din, std::span<double> dout, std::span<const int> iin,
             std::span<int> iout, std::span<const std::int64_t> lin, std::span<std::int64_t> lout,
             std::span<const std::int64_t> counts, std::span<const int> ranks) {
      { cc.rank() } -> std::same_as<int>;
      { cc.size() } -> std::same_as<int>;
      c.all_reduce(fin, fout, ReduceOp::sum);
      c.all_reduce(dout, ReduceOp::max);
      c.all_reduce(iin, iout, ReduceOp::min);
      c.all_reduce(lout);
      c.all_gather(fin, fout);
      c.all_gather(lin, lout);
      c.all_gather_v(din, dout, counts);
      c.all_gather_v(iin, iout, counts);
      c.reduce_scatter(din, dout, counts, ReduceOp::sum);
      c.reduce_scatter(lin, lout, counts);
      c.reduce_scatter_block(fin, fout, ReduceOp::max);
      c.reduce_scatter_block(iin, iout);
      c.broadcast(dout, 0);
      c.broadcast(iout, 0);
      c.send(din, 0, 0);
      c.recv(lout, 0, 0);
      c.sendrecv(fin, 0, fout, 0, 0);
      { c.start_sendrecv(din, 0, dout, 0, 0) } -> std::same_as<Request>;
      c.barrier();
      { c.create_group(ranks) } -> std::same_as<C>;
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
