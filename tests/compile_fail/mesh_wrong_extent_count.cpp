// Two extents for a mesh with one dynamic_extent axis (the static one is not repeated).
// expect: shardwise::Mesh: give one extent per dynamic_extent axis, in axis order, and no more
#include "shardwise/mesh.hpp"
namespace sw = shardwise;
using Elastic = sw::Mesh<sw::Axis<"dp", sw::dynamic_extent>, sw::Axis<"tp", 2>>;
Elastic mesh{4, 2};
