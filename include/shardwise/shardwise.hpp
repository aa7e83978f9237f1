// shardwise/shardwise.hpp: the whole library in one include.
//
// Layers, bottom up (each header can also be included on its own):
//   mesh, sharding, policy   pure compile-time: the mesh, shardings, policy choice and cost model
//   nn/pipeline_schedule     constexpr GPipe / 1F1B tables
#pragma once

#include "shardwise/mesh.hpp"
#include "shardwise/sharding.hpp"
#include "shardwise/policy.hpp"
#include "shardwise/nn/pipeline_schedule.hpp"
