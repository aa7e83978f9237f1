// The pending sum goes after the dimension shardings.
// expect: at most one Partial<...>, and it must come last
#include "shardwise/sharding.hpp"
namespace sw = shardwise;
using Bad = sw::TensorSharding<sw::Partial<"y">, sw::Split<"x">, sw::Replicated>;
constexpr auto rank = Bad::rank;
