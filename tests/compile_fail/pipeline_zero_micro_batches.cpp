// A pipeline needs at least one micro-batch.
// expect: the number of micro-batches R must be at least 1
#include "shardwise/nn/pipeline_schedule.hpp"

int main() { return shardwise::Pipeline<4, 0, shardwise::schedule::OneFOneB>::cycles; }
