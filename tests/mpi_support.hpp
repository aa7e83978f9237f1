// What the test programs that run under mpiexec share: the world's rank and size, a group mesh
// over MPI_COMM_WORLD that counts what it sends (to compare with the cost model).
#pragma once

#include <mpi.h>

#include <memory>

#include "shardwise/comm/counting.hpp"
#include "shardwise/comm/mpi.hpp"
#include "shardwise/process_group_mesh.hpp"

namespace shardwise::testing {

inline int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

/// A group mesh over MPI_COMM_WORLD that counts what it sends.
template <typename M>
struct CountedGroups {
  std::shared_ptr<CommCounters> counters = std::make_shared<CommCounters>();
  ProcessGroupMesh<M> groups;
  explicit CountedGroups(const M& mesh)
      : groups(CountingCommunicator<MpiCommunicator>(MpiCommunicator(MPI_COMM_WORLD), counters), mesh) {}
};

}  // namespace shardwise::testing
