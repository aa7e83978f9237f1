// Batch b over x in A, and h over x in B: C[b, s, h] would need x on two indices.
// expect: shardwise::einsum: one mesh axis would split two indices of the output
// expect-beside-first-error: indices b and h: axis \"x\"
#include "shardwise/plan/einsum_plan.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using X = sw::TensorSharding<sw::Split<"x">, sw::Replicated, sw::Replicated>;
using W = sw::TensorSharding<sw::Replicated, sw::Split<"x">>;
using P = sw::einsum_plan<"bsm,mh->bsh", Grid, X, W>::policy;
P* use = nullptr;
