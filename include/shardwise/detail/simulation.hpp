// shardwise/detail/simulation.hpp: the kernels and the MPI backend on a simulated cluster (SimGrid SMPI).
//
// Included only when SHARDWISE_SIMULATE=1, which needs SMPI's <smpi/smpi.h> (compile with
// smpicxx); the default build never sees this file. Three switches, set once per run before
// the first matmul and the same on every rank:
//   - compute: whether local GEMMs also multiply, and the kernels' local copies (packing,
//     reordering) and sums (a ring ReduceScatter's) move data. A simulated GEMM always
//     charges its flops to the simulated host (smpi_execute_flops), and the copies and sums
//     take no simulated time either way (smpi/simulate-computation:no), so that the simulated
//     time is the same whether or not anything is computed; computing lets a small run check
//     the results, skipping it lets P = 4096 finish in minutes (at P = 64, n = 16384 the
//     copies and sums of data nobody reads were two thirds of the wall time).
//   - charge: whether a GEMM charges its flops (the default). Off when the run lets SMPI time
//     the code between MPI calls instead (smpi/simulate-computation:yes, with smpi/host-speed
//     the platform's host speed), so that the simulated time is what this machine's GEMMs,
//     copies and sums took (simulation/simulate validate); the GEMMs must compute then.
//   - fold: whether the workspace's buffers come from SMPI's shared malloc, where all ranks'
//     buffers are the same physical pages (their contents are garbage, so only with compute
//     off) and SMPI skips copying messages between them. That is what fits thousands of
//     simulated ranks in one machine's memory.
// Plain atomics, not thread_local: under SMPI all ranks share one process, and these hold
// the same value on every rank by construction.
#pragma once

#include <smpi/smpi.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>

namespace shardwise::detail::simulation {

/// Whether a simulated GEMM computes its product as well as charging its flops.
inline std::atomic<bool>& compute() {
  static std::atomic<bool> value{true};
  return value;
}

/// Whether a simulated GEMM charges its flops (off when SMPI measures the computation).
inline std::atomic<bool>& charge() {
  static std::atomic<bool> value{true};
  return value;
}

/// Whether the workspace folds its buffers (SMPI's shared malloc).
inline std::atomic<bool>& fold() {
  static std::atomic<bool> value{false};
  return value;
}

/// Whether the kernels' local copies and sums are skipped (compute() off: their data is never read).
inline bool skip_local_data() { return !compute().load(std::memory_order_relaxed); }

/// Charges `flops` to this rank's simulated host: the simulated clock advances by flops / host speed.
inline void charge_flops(double flops) { smpi_execute_flops(flops); }

/// At least `bytes` (at least 64, a multiple of 64) of scratch, folded or 64-byte aligned;
/// nullptr when out of memory.
inline void* allocate(std::size_t bytes) {
  // aligned_alloc takes a multiple of the alignment; every caller gets the same rounding.
  const std::size_t rounded = std::max<std::size_t>(64, (bytes + 63) / 64 * 64);
  // One call site for every folded buffer: SMPI's shared malloc maps all of them onto the
  // same pages, which is the point (their contents are never read).
  return fold().load(std::memory_order_relaxed) ? SMPI_SHARED_MALLOC(rounded) : std::aligned_alloc(64, rounded);
}

/// Frees what allocate() returned (`fold` must not have changed in between).
inline void deallocate(void* memory) {
  if (fold().load(std::memory_order_relaxed))
    SMPI_SHARED_FREE(memory);
  else
    std::free(memory);
}

}  // namespace shardwise::detail::simulation
