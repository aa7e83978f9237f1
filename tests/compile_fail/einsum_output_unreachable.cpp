// Requesting s over x while x splits b: x would have to move from b to s, a reshuffle. (With
// b replicated, s over x is a slice, which is free: see tests/arrays/test_slice_virtual.cpp.)
// expect: shardwise::einsum: the requested output sharding cannot be reached for one index
// expect-beside-first-error: output index s
#include "shardwise/plan/einsum_plan.hpp"
namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"x", 2>>;
using R = sw::Replicated;
using X = sw::TensorSharding<sw::Split<"x">, R, R>;
using W = sw::TensorSharding<R, R>;
using C = sw::TensorSharding<R, sw::Split<"x">, R>;
using P = sw::einsum_plan<"bsm,mh->bsh", Line, X, W, C>::policy;
P* use = nullptr;
