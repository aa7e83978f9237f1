// Looking an axis up by a name the mesh does not have.
// expect: mesh_has_no_axis_named<
// expect-on-first-error: fixed_string<3>{"tp"}>
// expect: the mesh has no axis of that name
#include "shardwise/mesh.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
constexpr auto index = Grid::axis_index<"tp">();
