// One axis cannot split both dimensions of a tensor.
// expect: a mesh axis appears twice in one tensor
#include "shardwise/sharding.hpp"
namespace sw = shardwise;
using Bad = sw::TensorSharding<sw::Split<"x">, sw::Split<"y", "x">>;
constexpr auto rank = Bad::rank;
