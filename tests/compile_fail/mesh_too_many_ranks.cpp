// Each extent fits in an int, their product does not: the ranks could not be numbered.
// expect: shardwise::Mesh: the product of the static extents, the number of ranks, does not fit in an int
// expect: make the extents smaller
#include "shardwise/mesh.hpp"
namespace sw = shardwise;
using Bad = sw::Mesh<sw::Axis<"x", 65536>, sw::Axis<"y", sw::dynamic_extent>, sw::Axis<"z", 32768>>;
constexpr int size = Bad{1}.size();
