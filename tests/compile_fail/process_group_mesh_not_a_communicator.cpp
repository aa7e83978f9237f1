// ProcessGroupMesh over something that is neither a Communicator nor adaptable to one.
// expect: ProcessGroupMesh needs a Communicator
#include "shardwise/process_group_mesh.hpp"

namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"dp", 2>, sw::Axis<"tp", 2>>;

void f() { sw::ProcessGroupMesh<Grid> groups(42); }
