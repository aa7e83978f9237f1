// The axes given straight to ProcessGroupMesh, in a type that is only named (a reference
// parameter, never instantiated): still an error, with the library's text first.
// expect: shardwise::ProcessGroupMesh<M>: M must be a mesh type; wrap the axes in shardwise::Mesh<...>
#include "shardwise/process_group_mesh.hpp"

namespace sw = shardwise;

void run_solver(sw::ProcessGroupMesh<sw::Axis<"x", 2>>& groups);
