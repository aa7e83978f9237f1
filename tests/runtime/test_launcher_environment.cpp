// Reading the launcher environment (no MPI): each launcher, agreement between several,
// and the errors for values that are not numbers or contradict each other or MPI.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "shardwise/launcher_environment.hpp"

namespace {

namespace sw = shardwise;
using Variables = std::map<std::string, std::string>;

sw::LauncherEnvironment read(const Variables& variables) {
  return sw::read_launcher_environment([&](const char* name) -> const char* {
    const auto it = variables.find(name);
    return it == variables.end() ? nullptr : it->second.c_str();
  });
}

/// The message of the std::runtime_error that reading `variables` throws.
std::string error_of(const Variables& variables) {
  try {
    (void)read(variables);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(LauncherEnvironment, NothingSet) {
  const auto env = read({});
  EXPECT_EQ(env.launcher, sw::Launcher::none);
  EXPECT_FALSE(env.rank || env.size || env.local_rank || env.local_size);
}

TEST(LauncherEnvironment, OpenMpi) {
  const auto env = read({{"OMPI_COMM_WORLD_RANK", "5"},
                         {"OMPI_COMM_WORLD_SIZE", "8"},
                         {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  EXPECT_EQ(env.launcher, sw::Launcher::openmpi);
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_size, 4);
  EXPECT_EQ(env.rank_variable, "OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(env.local_size_variable, "OMPI_COMM_WORLD_LOCAL_SIZE");
}

TEST(LauncherEnvironment, Slurm) {
  const auto env = read({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "0"}});
  EXPECT_EQ(env.launcher, sw::Launcher::slurm);
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.size, 4);
  EXPECT_EQ(env.local_rank, 0);
  EXPECT_FALSE(env.local_size);
}

TEST(LauncherEnvironment, MpichHydra) {
  const auto env = read({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}});
  EXPECT_EQ(env.launcher, sw::Launcher::mpich);
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.size, 2);
}

TEST(LauncherEnvironment, Torchrun) {
  const auto env = read({{"RANK", "7"}, {"WORLD_SIZE", "16"}, {"LOCAL_RANK", "3"}, {"LOCAL_WORLD_SIZE", "8"}});
  EXPECT_EQ(env.launcher, sw::Launcher::torchrun);
  EXPECT_EQ(env.rank, 7);
  EXPECT_EQ(env.local_size, 8);
}

TEST(LauncherEnvironment, SeveralLaunchersThatAgree) {
  // srun started the tasks and torchrun-style variables are exported too.
  const auto env = read({{"SLURM_PROCID", "2"},
                         {"SLURM_NTASKS", "4"},
                         {"SLURM_LOCALID", "0"},
                         {"RANK", "2"},
                         {"LOCAL_WORLD_SIZE", "2"}});
  EXPECT_EQ(env.launcher, sw::Launcher::slurm);
  EXPECT_EQ(env.rank, 2);
  EXPECT_EQ(env.local_rank, 0);
  EXPECT_EQ(env.local_rank_variable, "SLURM_LOCALID");
  EXPECT_EQ(env.local_size, 2);
}

TEST(LauncherEnvironment, MpirunInsideASlurmAllocationIgnoresSlurmVariables) {
  // mpirun in an sbatch script: every rank on a node inherits SLURM_PROCID of the daemon
  // mpirun started there with srun. OpenMPI's variables describe the rank.
  const auto env = read({{"OMPI_COMM_WORLD_RANK", "3"},
                         {"OMPI_COMM_WORLD_SIZE", "4"},
                         {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                         {"SLURM_PROCID", "1"},
                         {"SLURM_NTASKS", "2"},
                         {"SLURM_LOCALID", "0"}});
  EXPECT_EQ(env.launcher, sw::Launcher::openmpi);
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.size, 4);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.rank_variable, "OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(read({{"PMI_RANK", "5"}, {"PMI_SIZE", "6"}, {"SLURM_PROCID", "0"}}).rank, 5);
}

TEST(LauncherEnvironment, ContradictionsNameTheVariables) {
  EXPECT_EQ(error_of({{"OMPI_COMM_WORLD_RANK", "1"}, {"RANK", "2"}}),
            "shardwise: launcher environment is inconsistent: OMPI_COMM_WORLD_RANK=1 but RANK=2");
  EXPECT_EQ(error_of({{"SLURM_PROCID", "1"}, {"RANK", "2"}}),
            "shardwise: launcher environment is inconsistent: SLURM_PROCID=1 but RANK=2");
  EXPECT_EQ(error_of({{"PMI_SIZE", "4"}, {"WORLD_SIZE", "8"}}),
            "shardwise: launcher environment is inconsistent: PMI_SIZE=4 but WORLD_SIZE=8");
  EXPECT_EQ(error_of({{"RANK", "4"}, {"WORLD_SIZE", "4"}}),
            "shardwise: launcher environment is inconsistent: RANK=4 is not below WORLD_SIZE=4");
  EXPECT_EQ(error_of({{"SLURM_PROCID", "4"}, {"WORLD_SIZE", "3"}}),
            "shardwise: launcher environment is inconsistent: SLURM_PROCID=4 is not below WORLD_SIZE=3");
  EXPECT_EQ(error_of({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}}),
            "shardwise: launcher environment is inconsistent: SLURM_PROCID=4 is not below SLURM_NTASKS=4");
  EXPECT_EQ(error_of({{"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}}),
            "shardwise: launcher environment is inconsistent: LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2");
  EXPECT_EQ(error_of({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}}),
            "shardwise: launcher environment is inconsistent: OMPI_COMM_WORLD_LOCAL_SIZE=3 is more than "
            "OMPI_COMM_WORLD_SIZE=2");
}

TEST(LauncherEnvironment, ValuesThatAreNotNumbers) {
  EXPECT_EQ(error_of({{"RANK", "abc"}}), "shardwise: launcher environment: RANK=\"abc\" is not a non-negative integer");
  EXPECT_EQ(error_of({{"SLURM_NTASKS", "0"}}), "shardwise: launcher environment: SLURM_NTASKS=\"0\" is not a positive integer");
  EXPECT_EQ(error_of({{"PMI_RANK", "-1"}}), "shardwise: launcher environment: PMI_RANK=\"-1\" is not a non-negative integer");
  EXPECT_EQ(error_of({{"PMI_RANK", ""}}), "shardwise: launcher environment: PMI_RANK=\"\" is not a non-negative integer");
  EXPECT_EQ(error_of({{"OMPI_COMM_WORLD_RANK", "99999999999"}}),
            "shardwise: launcher environment: OMPI_COMM_WORLD_RANK=\"99999999999\" is not a non-negative integer");
  EXPECT_EQ(error_of({{"LOCAL_RANK", "1 "}}), "shardwise: launcher environment: LOCAL_RANK=\"1 \" is not a non-negative integer");
}

TEST(LauncherEnvironment, DisagreementWithMpi) {
  const auto env = read({{"OMPI_COMM_WORLD_RANK", "1"},
                         {"OMPI_COMM_WORLD_SIZE", "4"},
                         {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(sw::launcher_disagreement(env, {1, 4, 1, 2}), "");
  EXPECT_EQ(sw::launcher_disagreement(env, {2, 4, 1, 2}),
            "OMPI_COMM_WORLD_RANK=1 but MPI says the rank in MPI_COMM_WORLD is 2");
  EXPECT_EQ(sw::launcher_disagreement(env, {1, 4, 0, 4}),
            "OMPI_COMM_WORLD_LOCAL_RANK=1 but MPI says the node-local rank (MPI_Comm_split_type, "
            "MPI_COMM_TYPE_SHARED) is 0; OMPI_COMM_WORLD_LOCAL_SIZE=2 but MPI says the number of ranks on this node "
            "(MPI_Comm_split_type, MPI_COMM_TYPE_SHARED) is 4");
  EXPECT_EQ(sw::launcher_disagreement(env, {1, 4, 0, 4}, /*compare_local=*/false), "");
  EXPECT_EQ(sw::launcher_disagreement(read({}), {3, 8, 1, 2}), "");  // nothing said, nothing contradicted
}

}  // namespace
