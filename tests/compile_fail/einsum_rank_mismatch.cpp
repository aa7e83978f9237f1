// The spec gives A three indices, its sharding has two dimensions.
// expect: shardwise::einsum: A's sharding has another number of dimensions than the spec gives A indices
// expect-beside-first-error: A: 3 indices, 2 dims
#include "shardwise/plan/einsum_plan.hpp"
namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"x", 2>>;
using Sh = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;
using P = sw::einsum_plan<"bmk,kn->bmn", Line, Sh, Sh>::policy;
P* use = nullptr;
