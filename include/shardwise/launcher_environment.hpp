/// @file
/// shardwise/launcher_environment.hpp: what the job launcher says about this process.
///
/// Launchers export the rank and the world size (and often the node-local rank and size)
/// in environment variables (as OSLO's from_torch / from_slurm / from_openmpi read them):
/// ```{.unparsed}
///   OpenMPI     OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
///   MPICH/Hydra PMI_RANK, PMI_SIZE
///   Slurm       SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
///   torchrun    RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE
/// ```
/// read_launcher_environment() reads them all; when several launchers' variables are present
/// they must agree, with one exception: when an MPI launcher's variables (OpenMPI, MPICH) are
/// present, Slurm's are not used. Under `mpirun` inside an sbatch allocation every rank
/// inherits SLURM_PROCID/SLURM_LOCALID of the daemon that mpirun started through srun (one per
/// node), so they describe the daemon, not the rank, and would raise a false alarm.
/// ParallelContext::from_mpi then checks the result against MPI itself.
/// No MPI here.
#pragma once

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace shardwise {

/// Who started this process, judged by its environment.
enum class Launcher {
  none,     ///< No launcher's variables are set (e.g. a process started directly).
  openmpi,  ///< OpenMPI's mpirun: OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE.
  mpich,    ///< MPICH's Hydra: PMI_RANK, PMI_SIZE.
  slurm,    ///< Slurm's srun: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID.
  torchrun  ///< torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE.
};

/// The launcher's name for messages: "OpenMPI", "MPICH/Hydra", "Slurm", "torchrun" or "none".
[[nodiscard]] constexpr const char* to_string(Launcher launcher) noexcept {
  switch (launcher) {
    case Launcher::none: return "none";
    case Launcher::openmpi: return "OpenMPI";
    case Launcher::mpich: return "MPICH/Hydra";
    case Launcher::slurm: return "Slurm";
    case Launcher::torchrun: return "torchrun";
  }
  return "?";
}

/// What the environment says; each value remembers the variable it came from.
struct LauncherEnvironment {
  /// The first launcher whose variables are present, in the order openmpi, mpich, slurm, torchrun.
  Launcher launcher = Launcher::none;
  /// Rank and size in the job, and on this node; empty when no launcher's variable gives them.
  ///@{
  std::optional<int> rank, size, local_rank, local_size;
  ///@}
  /// The variable each value above was read from ("OMPI_COMM_WORLD_RANK"), for messages;
  /// empty when the value is.
  ///@{
  std::string_view rank_variable, size_variable, local_rank_variable, local_size_variable;
  ///@}
};

/// Where MPI says this process is: rank and size in MPI_COMM_WORLD, rank and size on its node.
struct ProcessPlacement {
  /// Rank in MPI_COMM_WORLD.
  int rank = 0;
  /// Size of MPI_COMM_WORLD.
  int size = 1;
  /// Rank among the processes on this node (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED).
  int local_rank = 0;
  /// Number of processes on this node.
  int local_size = 1;
};

namespace detail {

struct LauncherVariables {
  Launcher launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

inline constexpr LauncherVariables launcher_variables[] = {
    {Launcher::openmpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {Launcher::mpich, "PMI_RANK", "PMI_SIZE", nullptr, nullptr},
    {Launcher::slurm, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},
    {Launcher::torchrun, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
};

/// The variable's value as an int >= minimum; nullopt when the variable is not set.
template <typename GetEnv>
std::optional<int> read_int_variable(GetEnv& getenv, const char* name, int minimum) {
  if (name == nullptr) return std::nullopt;
  const char* text = getenv(name);
  if (text == nullptr) return std::nullopt;
  const std::string_view value(text);
  long long parsed = 0;
  bool valid = !value.empty() && value.size() <= 10;
  for (char ch : value) {
    valid = valid && ch >= '0' && ch <= '9';
    parsed = parsed * 10 + (ch - '0');
  }
  if (!valid || parsed < minimum || parsed > 2147483647LL)
    throw std::runtime_error(std::string("shardwise: launcher environment: ") + name + "=\"" + std::string(value) +
                             "\" is not " + (minimum == 0 ? "a non-negative" : "a positive") + " integer");
  return static_cast<int>(parsed);
}

inline std::string variable_text(std::string_view variable, int value) {
  return std::string(variable) + "=" + std::to_string(value);
}

/// Records `value` from `variable`, or checks it against what another variable said.
inline void merge(std::optional<int>& slot, std::string_view& slot_variable, std::optional<int> value,
                  const char* variable) {
  if (!value) return;
  if (!slot) {
    slot = value;
    slot_variable = variable;
  } else if (*slot != *value) {
    throw std::runtime_error("shardwise: launcher environment is inconsistent: " + variable_text(slot_variable, *slot) +
                             " but " + variable_text(variable, *value));
  }
}

/// Throws unless index < count, when both are known.
inline void check_below(const std::optional<int>& index, std::string_view index_variable,
                        const std::optional<int>& count, std::string_view count_variable) {
  if (index && count && *index >= *count)
    throw std::runtime_error("shardwise: launcher environment is inconsistent: " +
                             variable_text(index_variable, *index) + " is not below " +
                             variable_text(count_variable, *count));
}

}  // namespace detail

/// Reads the launcher variables through `getenv` (any callable const char* -> const char*,
/// nullptr for an unset variable). Throws std::runtime_error naming the variables when a value
/// is not a number, a rank is not below its size, or two launchers disagree.
template <typename GetEnv>
[[nodiscard]] LauncherEnvironment read_launcher_environment(GetEnv&& getenv) {
  LauncherEnvironment env;
  for (const detail::LauncherVariables& v : detail::launcher_variables) {
    const auto rank = detail::read_int_variable(getenv, v.rank, 0);
    const auto size = detail::read_int_variable(getenv, v.size, 1);
    const auto local_rank = detail::read_int_variable(getenv, v.local_rank, 0);
    const auto local_size = detail::read_int_variable(getenv, v.local_size, 1);
    if (!rank && !size && !local_rank && !local_size) continue;
    const bool mpi_launched = env.launcher == Launcher::openmpi || env.launcher == Launcher::mpich;
    if (v.launcher == Launcher::slurm && mpi_launched) continue;  // describes mpirun's daemons (see top)
    if (env.launcher == Launcher::none) env.launcher = v.launcher;
    detail::merge(env.rank, env.rank_variable, rank, v.rank);
    detail::merge(env.size, env.size_variable, size, v.size);
    detail::merge(env.local_rank, env.local_rank_variable, local_rank, v.local_rank);
    detail::merge(env.local_size, env.local_size_variable, local_size, v.local_size);
  }
  detail::check_below(env.rank, env.rank_variable, env.size, env.size_variable);
  detail::check_below(env.local_rank, env.local_rank_variable, env.local_size, env.local_size_variable);
  if (env.local_size && env.size && *env.local_size > *env.size)
    throw std::runtime_error("shardwise: launcher environment is inconsistent: " +
                             detail::variable_text(env.local_size_variable, *env.local_size) + " is more than " +
                             detail::variable_text(env.size_variable, *env.size));
  return env;
}

/// Reads the process environment (std::getenv).
[[nodiscard]] inline LauncherEnvironment read_launcher_environment() {
  return read_launcher_environment([](const char* name) -> const char* { return std::getenv(name); });
}

/// Empty when `env` agrees with `actual`; otherwise says what disagrees, naming the variables.
/// `compare_local`: whether the node-local values are comparable (they describe MPI_COMM_WORLD).
[[nodiscard]] inline std::string launcher_disagreement(const LauncherEnvironment& env, const ProcessPlacement& actual,
                                                       bool compare_local = true) {
  std::string problems;
  auto check = [&](const std::optional<int>& said, std::string_view variable, int truth, const char* what) {
    if (!said || *said == truth) return;
    if (!problems.empty()) problems += "; ";
    problems.append(detail::variable_text(variable, *said)).append(" but MPI says ").append(what).append(" is ");
    problems += std::to_string(truth);
  };
  check(env.rank, env.rank_variable, actual.rank, "the rank in MPI_COMM_WORLD");
  check(env.size, env.size_variable, actual.size, "the size of MPI_COMM_WORLD");
  if (compare_local) {
    check(env.local_rank, env.local_rank_variable, actual.local_rank,
          "the node-local rank (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED)");
    check(env.local_size, env.local_size_variable, actual.local_size,
          "the number of ranks on this node (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED)");
  }
  return problems;
}

}  // namespace shardwise
