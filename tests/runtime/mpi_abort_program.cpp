// One rank throws while the others wait in a collective: with shardwise::MpiEnvironment the
// whole job must end (MPI_Abort) with the rank and the message on stderr, instead of hanging.
// Run by check_mpi_abort.py under mpiexec.
//
//   mpi_abort_program MODE [THROWER]
//   escape          THROWER throws out of main, the others wait in MPI_Barrier
//   escape_reduce   the same, the others wait in a shardwise all_reduce
//   between_einsums THROWER throws between two einsums, the others wait in the second one
//   caught_outside  the exception leaves the environment's scope but main catches it
//   preinitialized  MPI_Init before the environment (which must not finalize), then as escape
//   clean           nobody throws: MPI_Finalize, exit status 0
//   clean_preinit   MPI_Init and MPI_Finalize by the program around a non-owning environment
#include <mpi.h>

#include <cstdlib>
#include <span>
#include <stdexcept>
#include <string>

#include "shardwise/comm/mpi.hpp"
#include "shardwise/mpi_environment.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/tensor.hpp"

namespace sw = shardwise;

namespace {

[[noreturn]] void give_up(int rank) {
  throw std::runtime_error("rank " + std::to_string(rank) + " cannot read its part of the input");
}

int work(const std::string& mode, int thrower) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (mode == "escape_reduce") {
    sw::MpiCommunicator world(MPI_COMM_WORLD);
    if (rank == thrower) give_up(rank);
    int value = 1;
    world.all_reduce(std::span<int>(&value, 1), sw::ReduceOp::sum);
    return 0;
  }
  if (mode == "between_einsums") {
    using Line = sw::Mesh<sw::Axis<"p", sw::dynamic_extent>>;
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{size});
    using X = sw::ShardedTensor<double, Line, sw::TensorSharding<sw::Split<"p">, sw::Replicated, sw::Replicated>>;
    using W = sw::ShardedTensor<double, Line, sw::TensorSharding<sw::Split<"p">, sw::Replicated>>;
    const X x(groups, {4, 3, 8});
    const W w(groups, {8, 6});
    const auto h = sw::einsum<"bsm,mh->bsh">(x, w);  // every rank: an AllGather of W
    if (rank == thrower) give_up(rank);
    (void)sw::einsum<"bsm,mh->bsh">(x, w);
    return static_cast<int>(h.extent(0)) - 4;
  }
  if (rank == thrower) give_up(rank);
  MPI_Barrier(MPI_COMM_WORLD);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const int thrower = argc > 2 ? std::atoi(argv[2]) : -1;
  if (mode == "escape" || mode == "escape_reduce" || mode == "between_einsums" || mode == "clean") {
    sw::MpiEnvironment mpi(argc, argv);
    return work(mode, thrower);
  }
  if (mode == "caught_outside") {
    try {
      sw::MpiEnvironment mpi(argc, argv);
      work(mode, thrower);
    } catch (const std::exception&) {
      return 0;  // too late: the environment aborted during the unwinding
    }
    return 0;
  }
  if (mode == "preinitialized" || mode == "clean_preinit") {
    MPI_Init(&argc, &argv);
    {
      sw::MpiEnvironment mpi(argc, argv);
      if (mpi.initialized_mpi()) return 3;  // it must not take over what it did not start
      work(mode, thrower);
    }
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized != 0) return 4;  // the environment finalized what it did not initialize
    MPI_Finalize();
    return 0;
  }
  return 2;
}
