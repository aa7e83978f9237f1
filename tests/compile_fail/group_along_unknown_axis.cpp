// A misspelt axis name in group_along<...>() does not compile.
// expect: mesh_has_no_axis_named<
// expect-on-first-error: fixed_string<3>{"pt"}>
// expect: the mesh has no axis of that name
#include "shardwise/comm/virtual_cluster.hpp"
#include "shardwise/process_group_mesh.hpp"

namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"dp", 2>, sw::Axis<"tp", 2>>;

void f(sw::VirtualCommunicator& comm) {
  sw::ProcessGroupMesh<Grid> groups(comm);
  (void)groups.group_along<"dp", "pt">();
}
