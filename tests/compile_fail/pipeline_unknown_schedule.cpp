// Only the built-in schedules are accepted, and the error names them.
// expect: unknown Schedule
// expect: shardwise::schedule::GPipe and shardwise::schedule::OneFOneB
#include "shardwise/nn/pipeline_schedule.hpp"

struct Interleaved {};

int main() { return shardwise::Pipeline<4, 8, Interleaved>::cycles; }
