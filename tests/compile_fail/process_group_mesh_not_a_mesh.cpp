// The axes given straight to ProcessGroupMesh, without the Mesh<...> around them.
// expect: shardwise::ProcessGroupMesh<M>: M must be a mesh type; wrap the axes in shardwise::Mesh<...>
#include "shardwise/comm/virtual_cluster.hpp"
#include "shardwise/process_group_mesh.hpp"

namespace sw = shardwise;

void f(sw::VirtualCommunicator& comm) { sw::ProcessGroupMesh<sw::Axis<"x", 2>> groups(comm); }
