// e is in the output but in neither input (a typo for k).
// expect: shardwise::einsum: an index of the output appears in neither input
// expect-beside-first-error: \"e\" of C in neither A nor B
#include "shardwise/plan/einsum_plan.hpp"
namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"x", 2>>;
using Sh = sw::TensorSharding<sw::Replicated, sw::Replicated, sw::Replicated>;
using P = sw::einsum_plan<"bqd,bkd->bqe", Line, Sh, Sh>::policy;
P* use = nullptr;
