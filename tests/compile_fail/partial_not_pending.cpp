// Nothing is summed over y in this product, so C cannot be Partial over y.
// expect: only the k axes shared by A and B (ak = bk) can stay Partial
#include "shardwise/plan/matmul_plan.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
using A = sw::TensorSharding<sw::Replicated, sw::Split<"x">>;
using B = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;
using C = sw::TensorSharding<sw::Replicated, sw::Replicated, sw::Partial<"y">>;
using S = decltype(sw::matmul_plan<Grid, A, B, C>::schedule);
