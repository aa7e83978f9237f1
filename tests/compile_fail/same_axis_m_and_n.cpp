// A's rows and B's columns split over the same axis: C[m, n] would need x twice.
// expect: the same mesh axis splits the rows of A (m) and the columns of B (n)
#include "shardwise/plan/matmul_plan.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
using A = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;
using B = sw::TensorSharding<sw::Replicated, sw::Split<"x">>;
using P = sw::matmul_policy_t<Grid, A, B>;
P* use = nullptr;
