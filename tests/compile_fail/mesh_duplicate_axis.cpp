// Two axes with one name: lookups by name would be ambiguous.
// expect: two axes have the same name
#include "shardwise/mesh.hpp"
namespace sw = shardwise;
using Bad = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"x", 4>>;
constexpr int size = Bad{}.size();
