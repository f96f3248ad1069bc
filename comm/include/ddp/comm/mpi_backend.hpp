#pragma once
// Backend "mpi": Open MPI collectives on host memory (docs/comm.md).

#include "ddp/comm/backend.hpp"

#include <memory>

namespace ddp::comm {

// Initialises MPI if needed. Collectives run, in call order, on one thread of the backend
// that makes MPI's blocking calls (its tuned algorithms); Work observes them.
std::unique_ptr<Backend> makeMpiBackend(const WorldInfo& world, const BackendOptions& options);

}  // namespace ddp::comm
