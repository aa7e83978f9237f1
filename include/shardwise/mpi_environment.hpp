// shardwise/mpi_environment.hpp: MPI_Init and MPI_Finalize as a scope, and no hang when a rank
// gives up with an exception.
//
//   int main(int argc, char** argv) {
//     sw::MpiEnvironment mpi(argc, argv);          // first in main: MPI_Init here, MPI_Finalize at the end
//     sw::ProcessGroupMesh<Grid> groups(MPI_COMM_WORLD);
//     ...
//   }
//
// Why: shardwise makes its own mistakes throw the same exception on every rank, but an
// exception thrown by the user's code on one rank leaves the others waiting in their next
// collective, and MPI cannot end that wait. The conventional answer (Boost.MPI's environment,
// mpi4py's excepthook) is to report the error and call MPI_Abort, which ends every rank.
//
// How, for the two ways an exception can leave main's scope:
//  - Nothing catches it: the C++ runtime calls std::terminate, and may do so without unwinding
//    the stack (libstdc++ does), so no destructor would run. The environment installs a
//    terminate handler that prints this rank and the exception's what() to stderr and calls
//    MPI_Abort(MPI_COMM_WORLD, 1).
//  - Something outside the environment's scope catches it: the destructor runs during the
//    unwinding, where MPI_Finalize would wait for ranks that wait in a collective. It prints
//    the rank (the exception itself cannot be reached before it is caught) and calls
//    MPI_Abort. To keep a caught exception from aborting, catch it inside the scope.
//
// MPI already initialized (by the user or a framework): the environment neither initializes
// nor finalizes it, but still aborts on an escaping exception.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

namespace shardwise {

/// RAII over MPI_Init / MPI_Finalize that turns an exception leaving its scope on one rank
/// into MPI_Abort of every rank, with the rank and the message on stderr. One per program,
/// first in main (before any communicator, so that those are freed before MPI_Finalize).
class MpiEnvironment {
 public:
  /// MPI_Init(&argc, &argv), unless MPI is already initialized.
  MpiEnvironment(int& argc, char**& argv) : MpiEnvironment(&argc, &argv, -1) {}
  /// MPI_Init_thread with the `required` level (MPI_THREAD_SINGLE ... MPI_THREAD_MULTIPLE);
  /// thread_level() says what MPI provides, which may be less.
  MpiEnvironment(int& argc, char**& argv, int required) : MpiEnvironment(&argc, &argv, required) {}
  /// MPI_Init without the command line.
  MpiEnvironment() : MpiEnvironment(nullptr, nullptr, -1) {}

  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  /// MPI_Finalize, when this object initialized MPI; MPI_Abort of every rank instead when an
  /// exception is leaving the scope.
  ~MpiEnvironment() {
    if (std::uncaught_exceptions() > uncaught_at_start_) {
      // Unwinding: MPI_Finalize could wait forever on ranks blocked in a collective.
      report(world_rank_, "an exception is leaving the scope of shardwise::MpiEnvironment (it is caught "
                          "outside that scope, so its message cannot be shown here; catch it inside to see it)");
      abort_all();
    }
    std::set_terminate(previous_handler_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (initialized_here_ && finalized == 0) MPI_Finalize();
  }

  /// This process's rank in MPI_COMM_WORLD.
  [[nodiscard]] int rank() const noexcept { return world_rank_; }
  /// The size of MPI_COMM_WORLD.
  [[nodiscard]] int size() const noexcept { return world_size_; }
  /// Whether this object called MPI_Init (and so will call MPI_Finalize).
  [[nodiscard]] bool initialized_mpi() const noexcept { return initialized_here_; }
  /// The thread support MPI provides (MPI_Query_thread).
  [[nodiscard]] int thread_level() const noexcept {
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    return level;
  }

 private:
  MpiEnvironment(int* argc, char*** argv, int required) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0) {
      int provided = 0;
      const int code = required < 0 ? MPI_Init(argc, argv) : MPI_Init_thread(argc, argv, required, &provided);
      if (code != MPI_SUCCESS)
        throw std::runtime_error("shardwise::MpiEnvironment: MPI_Init failed with error code " + std::to_string(code));
      initialized_here_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
    reported_rank().store(world_rank_);
    uncaught_at_start_ = std::uncaught_exceptions();
    previous_handler_ = std::set_terminate(&on_terminate);
  }

  // Kept outside MPI for the terminate handler, which must not depend on MPI's state.
  static std::atomic<int>& reported_rank() {
    static std::atomic<int> rank{-1};
    return rank;
  }

  // One fprintf per report: stderr is unbuffered, and one call keeps ranks' lines whole. No
  // allocation: it may report a std::bad_alloc.
  static void report(int rank, const char* what, const char* message = "") noexcept {
    std::fprintf(stderr,
                 "shardwise::MpiEnvironment: rank %d: %s%s; calling MPI_Abort so that no rank waits forever\n",
                 rank, what, message);
    std::fflush(stderr);
  }

  [[noreturn]] static void abort_all() noexcept {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized != 0 && finalized == 0) MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();  // MPI gone, or MPI_Abort returned
  }

  [[noreturn]] static void on_terminate() noexcept {
    const int rank = reported_rank().load();
    if (std::exception_ptr current = std::current_exception()) {
      try {
        std::rethrow_exception(current);
      } catch (const std::exception& e) {
        report(rank, "uncaught exception: ", e.what());
      } catch (...) {
        report(rank, "uncaught exception of a type not derived from std::exception");
      }
    } else {
      report(rank, "std::terminate called without an exception");
    }
    abort_all();
  }

  bool initialized_here_ = false;
  int world_rank_ = 0;
  int world_size_ = 1;
  int uncaught_at_start_ = 0;
  std::terminate_handler previous_handler_ = nullptr;
};

}  // namespace shardwise
