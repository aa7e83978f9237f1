// An axis named twice in group_along<...>() does not compile.
// expect: an axis is named twice
#include "shardwise/comm/virtual_cluster.hpp"
#include "shardwise/process_group_mesh.hpp"

namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"dp", 2>, sw::Axis<"tp", 2>>;

void f(sw::VirtualCommunicator& comm) {
  sw::ProcessGroupMesh<Grid> groups(comm);
  (void)groups.group_along<"tp", "tp">();
}
