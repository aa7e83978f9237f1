// While counting traffic against a plan's model, the library's agreement checks (one small
// all-reduce per call, comm/consistency.hpp) must stay out of the count: this guard sets
// CheckLevel::local and restores the default. Use it outside of any communication (on the
// virtual cluster, around the whole run): every rank must check at the same level.
#pragma once

#include "shardwise/comm/consistency.hpp"

namespace shardwise::testing {

struct LocalChecks {
  LocalChecks() { check_level() = CheckLevel::local; }
  ~LocalChecks() { check_level() = CheckLevel::cross_rank; }
  LocalChecks(const LocalChecks&) = delete;
  LocalChecks& operator=(const LocalChecks&) = delete;
};

}  // namespace shardwise::testing
