// SUMMA needs the 2-D block layout A = [X, Y], B = [X, Y].
// expect: the SUMMA variant needs A = [X, Y] and B = [X, Y]
#include "shardwise/plan/matmul_plan.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
using A = sw::TensorSharding<sw::Split<"x">, sw::Split<"y">>;
using B = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;
using S = decltype(sw::matmul_plan<Grid, A, B, sw::NaturalOutput, sw::variant::Summa<>>::schedule);
