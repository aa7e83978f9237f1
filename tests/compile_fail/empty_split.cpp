// Split<> with no axis is a replicated dimension in disguise.
// expect: write Replicated for a dimension that is not split
#include "shardwise/sharding.hpp"
namespace sw = shardwise;
using Bad = sw::TensorSharding<sw::Split<>, sw::Replicated>;
constexpr auto rank = Bad::rank;
