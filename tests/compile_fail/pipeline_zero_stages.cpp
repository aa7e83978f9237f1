// A pipeline needs at least one stage.
// expect: the number of stages S must be at least 1
#include "shardwise/nn/pipeline_schedule.hpp"

int main() { return shardwise::Pipeline<0, 4, shardwise::schedule::GPipe>::cycles; }
