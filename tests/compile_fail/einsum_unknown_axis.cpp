// A typo in an axis name of an einsum operand: "tq" for "tp".
// expect: mesh_has_no_axis_named<
// expect-on-first-error: fixed_string<3>{"tq"}>
// expect: the sharding names an axis that the Mesh does not have
#include "shardwise/plan/einsum_plan.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"dp", 2>, sw::Axis<"tp", 2>>;
using R = sw::Replicated;
using X = sw::TensorSharding<sw::Split<"dp">, R, R>;
using W = sw::TensorSharding<R, sw::Split<"tq">>;
using P = sw::einsum_plan<"bsm,mh->bsh", Grid, X, W>::policy;
P* use = nullptr;
