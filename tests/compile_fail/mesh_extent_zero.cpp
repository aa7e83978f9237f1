// An axis of extent 0 holds no process.
// expect: an axis extent of 0 is not allowed
#include "shardwise/mesh.hpp"
namespace sw = shardwise;
using Bad = sw::Mesh<sw::Axis<"x", 0>, sw::Axis<"y", 4>>;
constexpr int size = Bad{}.size();
