// Nothing to overlap: an unsharded product has no k-gather and no ReduceScatter.
// expect: the ring variant overlaps exactly one AllGather of A or B along k
#include "shardwise/plan/matmul_plan.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
using Rep = sw::TensorSharding<sw::Replicated, sw::Replicated>;
using S = decltype(sw::matmul_plan<Grid, Rep, Rep, sw::NaturalOutput, sw::variant::Ring>::schedule);
