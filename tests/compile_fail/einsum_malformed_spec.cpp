// No arrow: the spec must name the output.
// expect: shardwise::einsum: the spec must read
#include "shardwise/plan/einsum_plan.hpp"
namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"x", 2>>;
using Sh = sw::TensorSharding<sw::Replicated, sw::Replicated>;
using P = sw::einsum_plan<"mk,kn", Line, Sh, Sh>::policy;
P* use = nullptr;
