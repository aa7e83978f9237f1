// A fully static mesh given an extent, as if one of its axes were dynamic_extent.
// expect: shardwise::Mesh: this mesh has no dynamic_extent axis, so it takes no extents; write Grid grid; or Grid grid{}
#include "shardwise/mesh.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
Grid grid{4};
