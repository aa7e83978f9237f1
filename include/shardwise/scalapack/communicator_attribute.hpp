// shardwise/scalapack/communicator_attribute.hpp: an object kept with an MPI communicator, made
// at its first use and deleted when the communicator is freed (BLACS_GRIDEXIT). The drop-in keeps
// a grid's plan process groups and the duplicate its exchanges travel on this way: a
// communicator handle is a per-process value that MPI may reuse, never a key of a map.
#pragma once

#include <mpi.h>

#include <utility>

namespace shardwise::scalapack::detail {

/// The keyval of the attribute that owns a T (one per T, created at its first use).
template <typename T>
int owned_attribute_keyval() {
  static const int key = [] {
    int k = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(
        MPI_COMM_NULL_COPY_FN,
        [](MPI_Comm, int, void* attribute, void*) -> int {
          delete static_cast<T*>(attribute);
          return MPI_SUCCESS;
        },
        &k, nullptr);
    return k;
  }();
  return key;
}

/// `comm`'s T, made from `args` at the first call on this process. Where making a T is
/// collective (a duplicate communicator), every process of `comm` must first ask at the same call.
template <typename T, typename... Args>
T& owned_attribute(MPI_Comm comm, Args&&... args) {
  void* attribute = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm, owned_attribute_keyval<T>(), &attribute, &found);
  if (found) return *static_cast<T*>(attribute);
  auto* fresh = new T(std::forward<Args>(args)...);
  MPI_Comm_set_attr(comm, owned_attribute_keyval<T>(), fresh);
  return *fresh;
}

}  // namespace shardwise::scalapack::detail
