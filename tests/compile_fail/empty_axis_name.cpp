// Axes need names: they are how shardings refer to them.
// expect: an axis name cannot be empty
#include "shardwise/mesh.hpp"
namespace sw = shardwise;
using Bad = sw::Mesh<sw::Axis<"", 2>>;
constexpr int size = Bad{}.size();
