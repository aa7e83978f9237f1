// Runs a test body on every rank of a virtual cluster, each rank's groups over a counting
// communicator, with the library's agreement checks at CheckLevel::local (so that counted bytes
// are the plans' own): body(groups, counters, fail), where fail(what) records this rank's first
// failure. Returns each rank's failure ("" where none), for EXPECT_EQ per rank.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "local_checks.hpp"
#include "shardwise/comm/counting.hpp"
#include "shardwise/comm/virtual_cluster.hpp"
#include "shardwise/process_group_mesh.hpp"

namespace shardwise::testing {

template <MeshType M, typename Body>
std::vector<std::string> run_counted_on_cluster(const M& mesh, Body&& body) {
  std::vector<std::string> failures(static_cast<std::size_t>(mesh.size()));
  LocalChecks quiet;
  run_virtual_cluster(mesh.size(), [&](VirtualCommunicator& comm) {
    const int rank = comm.rank();
    auto counters = std::make_shared<CommCounters>();
    ProcessGroupMesh<M> groups(CountingCommunicator<VirtualCommunicator>(std::move(comm), counters), mesh);
    auto fail = [&failures, rank](const std::string& what) {
      std::string& first = failures[static_cast<std::size_t>(rank)];
      if (first.empty()) first = what;
    };
    body(groups, *counters, fail);
  });
  return failures;
}

}  // namespace shardwise::testing
