// Looking an axis up by a name the mesh does not have.
// expect: the mesh has no axis of that name
// expect-beside-first-error: has_axis(shardwise::detail::fixed_string<3>{"tp"}
#include "shardwise/mesh.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
constexpr auto index = Grid::axis_index<"tp">();
