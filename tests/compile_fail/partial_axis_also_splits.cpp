// An axis that splits a dimension cannot also be a pending sum.
// expect: a Partial axis cannot also split a dimension
#include "shardwise/sharding.hpp"
namespace sw = shardwise;
using Bad = sw::TensorSharding<sw::Split<"x">, sw::Replicated, sw::Partial<"x">>;
constexpr auto rank = Bad::rank;
