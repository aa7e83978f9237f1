// k appears in A only and not in C: a sum within A, not a contraction.
// expect: shardwise::einsum: an index of one input appears neither in the other input nor in the output
// expect-beside-first-error: \"k\" only in A
#include "shardwise/plan/einsum_plan.hpp"
namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"x", 2>>;
using Sh = sw::TensorSharding<sw::Replicated, sw::Replicated>;
using P = sw::einsum_plan<"mk,mn->mn", Line, Sh, Sh>::policy;
P* use = nullptr;
