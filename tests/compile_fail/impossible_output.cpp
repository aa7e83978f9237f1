// C comes out split by rows over x; asking for rows over y would be a silent reshuffle.
// expect: the requested output cannot be reached for the rows (m)
#include "shardwise/plan/matmul_plan.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
using A = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;
using B = sw::TensorSharding<sw::Replicated, sw::Replicated>;
using C = sw::TensorSharding<sw::Split<"y">, sw::Replicated>;
using S = decltype(sw::matmul_plan<Grid, A, B, C>::schedule);
