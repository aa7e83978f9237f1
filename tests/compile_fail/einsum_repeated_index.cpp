// "ii" is a diagonal, not a contraction.
// expect: shardwise::einsum: an index letter appears twice in one operand
// expect-beside-first-error: \"i\" twice in A
#include "shardwise/plan/einsum_plan.hpp"
namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"x", 2>>;
using Sh = sw::TensorSharding<sw::Replicated, sw::Replicated>;
using P = sw::einsum_plan<"ii,ij->j", Line, Sh, Sh>::policy;
P* use = nullptr;
