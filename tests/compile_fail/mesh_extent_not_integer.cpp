// A rank count is a whole number.
// expect: shardwise::Mesh: an extent must be an integer
#include "shardwise/mesh.hpp"
namespace sw = shardwise;
using Elastic = sw::Mesh<sw::Axis<"dp", sw::dynamic_extent>, sw::Axis<"tp", 2>>;
Elastic mesh{2.0};
